"""Multi-GPU and multi-node runs: re-run the same command under paddle.distributed.launch (NCCL), and join its group.

Why: one command serves one process and many; the process that a user starts re-runs itself under
the launcher, and each launched process joins the process group before it trains its shard.
"""

import dataclasses
import os
import subprocess
import sys

from benchmarks.harness.model_spec import ModelSpec
from benchmarks.harness.run_config import RunConfig


def relaunch_distributed(config: RunConfig, spec: ModelSpec) -> int | None:
    """The launcher's exit code when this run needs several processes; None when it runs here, in one.
    (run_config.resolve refused --nnodes > 1 without --master.)"""
    if (config.gpus <= 1 and config.nnodes <= 1) or "PADDLE_TRAINER_ID" in os.environ:
        return None
    cmd = [sys.executable, "-m", "paddle.distributed.launch", "--gpus", ",".join(map(str, range(config.gpus)))]
    if config.nnodes > 1:
        cmd += ["--nnodes", str(config.nnodes), "--master", str(config.master)]
    cmd += ["-m", f"benchmarks.{spec.name}", *sys.argv[1:]]
    return subprocess.run(cmd, check=False).returncode


def join(config: RunConfig) -> tuple[int, int, RunConfig]:
    """(rank, world size, config) of this process; one started by the launcher joins its group first, and its
    config (a new one) counts the whole run's devices in `gpus` (each launched process may see one device)."""
    import paddle.distributed as dist

    if "PADDLE_TRAINER_ID" not in os.environ:
        return 0, dist.get_world_size() if dist.is_initialized() else 1, config
    dist.init_parallel_env()
    world = dist.get_world_size()
    return dist.get_rank(), world, dataclasses.replace(config, gpus=world)
