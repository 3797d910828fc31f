"""Benchmark the validation suite: serial against parallel (pytest-xdist), side by side in one run.

  python -m perf.validation.bench_validate [IMAGE] [--repeat N]

Runs `validate --serial` and `validate` (one xdist worker per core) alternately in fresh containers
of IMAGE (default: the newest release's default flavor) and prints both wall times and the ratio.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine, image_ref
from perf.measurements import REPO


def run(image: str, *args: str) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as out:
        started = time.monotonic()
        proc = engine.run(image, "validate", "--output", "/report", *args,
                          flags=("--network", "none", "-v", f"{out}:/report"))
        elapsed = time.monotonic() - started
        if proc.returncode not in (ExitCode.PASS, ExitCode.FAIL):
            raise SystemExit(f"validate failed to run: {proc.stderr[-500:]}")
        return elapsed, json.loads((Path(out) / "validation.json").read_text())["counts"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image", nargs="?")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    if args.image is None:
        args.image, _ = image_ref.resolve(None, None, None, REPO)  # the newest release's default flavor
    serial, parallel = [], []
    for i in range(args.repeat):
        t, counts = run(args.image, "--serial")
        serial.append(t)
        print(f"run {i + 1}: serial   {t:6.1f} s  {counts}", flush=True)
        t, counts = run(args.image)
        parallel.append(t)
        print(f"run {i + 1}: parallel {t:6.1f} s  {counts}", flush=True)
    s, p = statistics.median(serial), statistics.median(parallel)
    print(f"\n| mode | median s (of {args.repeat}) |\n| --- | ---: |")
    print(f"| serial | {s:.1f} |\n| parallel (xdist) | {p:.1f} |")
    print(f"\nparallel / serial = {p / s:.3f} (speed-up {s / p:.2f}x) on {args.image}")
    out = REPO / "build" / "bench" / "validate.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"image": args.image, "serial_s": serial, "parallel_s": parallel,
                               "speedup": round(s / p, 3)}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
