"""Multi-GPU and multi-node runs: re-run the same command under paddle.distributed.launch (NCCL)."""

import argparse
import os
import subprocess
import sys

from benchmarks.harness.hardware import BadInput
from benchmarks.harness.spec import ModelSpec


def relaunch_distributed(args: argparse.Namespace, spec: ModelSpec) -> int | None:
    """The launcher's exit code when this run needs several processes; None when it runs here, in one."""
    if (args.gpus <= 1 and args.nnodes <= 1) or "PADDLE_TRAINER_ID" in os.environ:
        return None
    cmd = [sys.executable, "-m", "paddle.distributed.launch", "--gpus", ",".join(map(str, range(args.gpus)))]
    if args.nnodes > 1:
        if not args.master:
            raise BadInput("--nnodes > 1 needs --master IP:PORT of the first node")
        cmd += ["--nnodes", str(args.nnodes), "--master", args.master]
    cmd += ["-m", f"benchmarks.{spec.name}", *sys.argv[1:]]
    return subprocess.run(cmd, check=False).returncode
