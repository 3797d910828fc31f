"""Multi-GPU and multi-node runs: re-run the same command under paddle.distributed.launch (NCCL), and join its group.

Why: one command serves one process and many; the process that a user starts re-runs itself under
the launcher, and each launched process joins the process group before it trains its shard.
"""

import argparse
import os
import subprocess
import sys

from benchmarks.harness.spec import ModelSpec
from ngc_common.errors import InputError


def relaunch_distributed(args: argparse.Namespace, spec: ModelSpec) -> int | None:
    """The launcher's exit code when this run needs several processes; None when it runs here, in one."""
    if (args.gpus <= 1 and args.nnodes <= 1) or "PADDLE_TRAINER_ID" in os.environ:
        return None
    cmd = [sys.executable, "-m", "paddle.distributed.launch", "--gpus", ",".join(map(str, range(args.gpus)))]
    if args.nnodes > 1:
        if not args.master:
            raise InputError("--nnodes > 1 needs --master IP:PORT of the first node")
        cmd += ["--nnodes", str(args.nnodes), "--master", args.master]
    cmd += ["-m", f"benchmarks.{spec.name}", *sys.argv[1:]]
    return subprocess.run(cmd, check=False).returncode


def join(args: argparse.Namespace) -> tuple[int, int]:
    """(rank, world size) of this process; one started by the launcher joins its group first, and args.gpus
    becomes the whole run's device count (each launched process may see one device)."""
    import paddle.distributed as dist

    rank = 0
    if "PADDLE_TRAINER_ID" in os.environ:
        dist.init_parallel_env()
        rank = dist.get_rank()
        args.gpus = dist.get_world_size()
    return rank, dist.get_world_size() if dist.is_initialized() else 1
