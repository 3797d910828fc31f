"""Data-parallel on the CPU: two processes through paddle.distributed.launch (gloo), all-reduce and one step (JSON).

Run as a launcher: starts `paddle.distributed.launch --nproc_per_node 2` with this file as the worker. Each rank
all-reduces a tensor of its rank+1 and checks the sum, then trains a paddle.DataParallel model one SGD step on
its own batch; the ranks' parameter checksums (gathered with all_gather_object) must be equal, and their batches
differ. Rank 0 prints the result. The GPU counterpart (NCCL, one process per GPU): gpu_nccl.py.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ngc_common import emulation

RANKS = 2
# Two CPU processes: import, rendezvous, one step; far below on any native host. Under qemu (an arm64 image on an
# x86-64 host) two Paddle imports alone took minutes on a busy host: the budget grows as every check's does.
LAUNCH_TIMEOUT_S = 120


def worker() -> None:
    import paddle
    import paddle.distributed as dist

    paddle.set_device("cpu")
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    x = paddle.full([1024], float(rank + 1), dtype="float32")
    dist.all_reduce(x)
    expected = world * (world + 1) / 2
    paddle.seed(0)
    model = paddle.DataParallel(paddle.nn.Linear(8, 4))
    optimizer = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    batch = paddle.full([4, 8], float(rank + 1))  # each rank its own data: only the all-reduce makes them agree
    model(batch).square().mean().backward()
    optimizer.step()
    mine = {"checksum": float(sum(float(p.sum()) for p in model.parameters())), "data": float(batch.sum())}
    gathered: list[dict] = []
    dist.all_gather_object(gathered, mine)
    if rank == 0:
        checksums = [g["checksum"] for g in gathered]
        print(json.dumps({"world_size": world, "sum": float(x[0]), "expected": expected,
                          "allreduce_ok": bool(paddle.allclose(x, paddle.full([1024], expected)).item()),
                          "checksums": checksums, "params_equal": len(set(checksums)) == 1,
                          "data_differ": len({g["data"] for g in gathered}) == world,
                          "backend": os.environ.get("PADDLE_DISTRI_BACKEND", "")}), flush=True)


def launch() -> None:
    with tempfile.TemporaryDirectory() as logs:
        env = {"GLOO_SOCKET_IFNAME": "lo", **os.environ, "OMP_NUM_THREADS": "1"}  # two ranks of one host: loopback
        limit = emulation.budget(LAUNCH_TIMEOUT_S, emulation.detect().emulated)
        try:
            proc = subprocess.run([sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", str(RANKS),
                                   "--max_restart", "0", "--log_dir", logs, __file__, "--worker"], env=env,
                                  capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"paddle.distributed.launch --nproc_per_node {RANKS} did not end in {limit} s: a hang in "
                             "the gloo rendezvous or the step (GLOO_SOCKET_IFNAME=lo)") from None
        log0 = Path(logs) / "workerlog.0"
        text = log0.read_text() if log0.is_file() else proc.stdout
    lines = [ln for ln in text.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"paddle.distributed.launch --nproc_per_node {RANKS} failed (exit {proc.returncode}): "
                         f"{(text or proc.stderr)[-500:]}")
    print(lines[-1])


if __name__ == "__main__":
    worker() if "--worker" in sys.argv else launch()
