"""One CPU thread against the default thread count, side by side: training img/s and efficiency.

Why: Paddle computes on one thread unless told otherwise; the image's default must use the CPUs
the container is given. Each configuration runs as its own `bench-<model> --mode train` process
(OpenMP fixes its thread count when Paddle loads), one after the other in this run, and the
script prints img/s, the probed peak and efficiency of each and the speed-up of the default.
Efficiency (achieved over probed peak) should stay about the same while img/s scales.

  python -m benchmarks.harness.bench_threads [--model rn50] [--steps 8] [--repeats 1]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import cpus
from benchmarks.harness.model_registry import models


def train_once(model: str, threads: int | None, steps: int, folder: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "NGC_PADDLE_THREADS_FROM",
                                                           cpus.STARTED_WITH, "MKL_NUM_THREADS", "OMP_THREAD_LIMIT")}
    cmd = [sys.executable, "-m", f"benchmarks.{model}", "--mode", "train", "--steps", str(steps),
           "--output", str(folder)] + (["--threads", str(threads)] if threads else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    results = sorted(folder.glob("*/result.json"))
    if not results:
        raise SystemExit(f"error: {' '.join(cmd)} wrote no result (exit {proc.returncode}): {proc.stderr[-500:]}")
    data = json.loads(results[-1].read_text())
    train = data["results"]["train"]["fp32"]
    return {"threads": data["config"]["threads"], "ips": train["ips"], "efficiency": train.get("efficiency"),
            "peak_gflops": train.get("peak_tflops", 0) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=tuple(models()), default=next(iter(models())))
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=1, help="alternate the two configurations this many times")
    args = parser.parse_args()
    print(f"CPU budget: {cpus.budget().explain()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for threads in (1, None):
                row = train_once(args.model, threads, args.steps, Path(tmp) / f"{i}-{threads}")
                row["label"] = "one thread" if threads == 1 else "default"
                rows.append(row)
                print(f"  {row['label']:<10} {row['threads']} threads: {row['ips']:.2f} img/s, peak "
                      f"{row['peak_gflops']:.1f} GFLOP/s, efficiency {row['efficiency'] * 100:.1f} %", flush=True)
    one = [r["ips"] for r in rows if r["label"] == "one thread"]
    default = [r for r in rows if r["label"] == "default"]
    speedup = (sum(r["ips"] for r in default) / len(default)) / (sum(one) / len(one))
    print(f"{args.model} training, default ({default[0]['threads']} threads) / one thread = {speedup:.2f}x img/s")


if __name__ == "__main__":
    main()
