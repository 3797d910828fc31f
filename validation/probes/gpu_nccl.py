"""NCCL all-reduce across every visible GPU (JSON).

Run as a launcher: starts `paddle.distributed.launch` over all visible GPUs with this file as the
worker; each rank all-reduces a tensor of its rank+1 and checks the sum; rank 0 prints the result.
"""

import json
import os
import subprocess
import sys
import tempfile


def worker() -> None:
    import paddle
    import paddle.distributed as dist

    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    x = paddle.full([1024], float(rank + 1), dtype="float32")
    dist.all_reduce(x)
    expected = world * (world + 1) / 2
    ok = bool(paddle.allclose(x, paddle.full([1024], expected)).item())
    if rank == 0:
        print(json.dumps({"world_size": world, "sum": float(x[0]), "expected": expected, "ok": ok}), flush=True)


def launch() -> None:
    import paddle

    count = paddle.device.cuda.device_count()
    gpus = ",".join(str(i) for i in range(count))
    with tempfile.TemporaryDirectory() as logs:
        try:
            proc = subprocess.run([sys.executable, "-m", "paddle.distributed.launch", "--gpus", gpus, "--log_dir",
                                   logs, __file__, "--worker"], capture_output=True, text=True, timeout=240)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"paddle.distributed.launch --gpus {gpus} did not end in 240 s: a hang in the NCCL "
                             "rendezvous or the all-reduce (NCCL_DEBUG=INFO shows where)") from None
        log0 = os.path.join(logs, "workerlog.0")
        if os.path.exists(log0):
            with open(log0) as fh:
                text = fh.read()
        else:
            text = proc.stdout
    lines = [ln for ln in text.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"paddle.distributed.launch failed (exit {proc.returncode}): {proc.stderr[-500:]}")
    print(lines[-1])


if __name__ == "__main__":
    worker() if "--worker" in sys.argv else launch()
