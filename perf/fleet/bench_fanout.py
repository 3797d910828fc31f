"""The fan-out's cost: the same gates through Slurm and on this host, and N profiles at once against their sum.

Why: sending the gates to a cluster must not cost more than a few percent of the gates themselves (target: the
fan-out's overhead <= 5 % of the gates' wall time), and profiles submitted together must take about the longest
of them, not their sum. Both are measured side by side on one machine, against the one-node test cluster
(toolchain/ensure-slurm.sh) and the image already built (`make image`).

  python -m perf.fleet.bench_fanout [--release 26.12] [--repeats 1] [--profiles 2] [--quick]
Figures go to docs/measurements.md (section perf-fleet).

The long form: docs/design-notes.md, section `perf/fleet/bench_fanout.py`.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from ngc_paddle.image_build.scratch import scratch_copy
from ngc_paddle.manifest.loader import latest_release
from perf.measurements import REPO, record

FAST = ["-m", "fast"]


def gates(root: Path, release: str, registry: str, profiles: dict) -> tuple[float, dict]:
    """Wall seconds of one `ngc-paddle gates` run and its cells (a run that ends in another verdict than PASS stops
    the measurement: it measured something else)."""
    fleet = root / "fleets" / f"bench-{time.monotonic_ns()}.yaml"
    fleet.write_text(yaml.safe_dump({"profiles": profiles}, sort_keys=False))
    state = root / "build" / "release" / release / "state.json"
    state.unlink(missing_ok=True)  # every run runs its jobs (no cell kept from the run before)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ngc_paddle.cli", "--root", str(root), "gates", release, "--flavor",
                           "cpu", "--fleet", str(fleet), "--registry", registry], capture_output=True, text=True,
                          cwd=REPO)
    wall = time.monotonic() - started
    if proc.returncode not in (0, 3):
        sys.exit(f"error: gates failed (exit {proc.returncode}): {proc.stderr.strip()[-400:]}")
    cells = json.loads(state.read_text())["cpu"]["gates"]["profiles"]
    return wall, cells


def job_seconds(root: Path, cell: dict) -> float:
    """The job's own work: the seconds of its steps (steps.tsv), without submission, queueing and collection."""
    steps = sorted((root / cell["folder"]).glob("attempt-*/steps.tsv"))[-1]
    return sum(float(line.split("\t")[2]) for line in steps.read_text().splitlines())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--release", default=None)
    p.add_argument("--flavor", default="cpu", help="only cpu runs on the test cluster")
    p.add_argument("--source", action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--profiles", type=int, default=2, help="profiles run at once in part 2")
    p.add_argument("--registry", default="127.0.0.1:5019")
    p.add_argument("--quick", action="store_true", help="part 1 with the validation's fast checks and bench-rn50 only")
    args = p.parse_args()
    release = args.release or latest_release(REPO / "releases")
    gates_of = {"validate": FAST, "bench": {"bench-rn50": []}} if args.quick else {}  # {}: the release's own
    with tempfile.TemporaryDirectory(prefix="perf-fleet-") as tmp:
        root = scratch_copy(REPO, Path(tmp) / "repo", "ngc-paddle")
        local = {"cpu": {"local": {}, **gates_of}}
        slurm = {"cpu": {"slurm": {"partition": "cpu", "cpus_per_task": 2}, **gates_of}}
        rows, here, there = [], [], []
        for i in range(args.repeats):
            for name, profiles, walls in (("this host", local, here), ("Slurm job", slurm, there)):
                wall, cells = gates(root, release, args.registry, profiles)
                walls.append(wall)
                steps = job_seconds(root, cells["cpu"])
                rows.append(f"| {i + 1} | {name} | {wall:.1f} | {steps:.0f} | {wall - steps:.1f} | "
                            f"{cells['cpu']['status']} |")
                print(rows[-1], flush=True)
        overhead = (statistics.median(there) - statistics.median(here)) / statistics.median(here)

        one = {"validate": FAST, "bench": {"bench-rn50": ["--smoke"]}}
        parts = {f"p{i}": {"hardware": "cpu", "slurm": {"partition": "cpu" if i % 2 == 0 else "gpu",
                                                        "cpus_per_task": 1}, **one} for i in range(args.profiles)}
        alone = [gates(root, release, args.registry, {name: profile})[0] for name, profile in parts.items()]
        together, cells = gates(root, release, args.registry, parts)
    what = "validation -m fast + bench-rn50" if args.quick else "the whole validation + bench-rn50 + bench-hgnet"
    lines = [f"Gates: {what}, cpu flavor.", "",
             "| run | where | wall s | job's own steps s | outside the job s | verdict |",
             "| --- | --- | ---: | ---: | ---: | --- |", *rows, "",
             f"Fan-out overhead (median Slurm job against median this host, same job script): **{overhead:+.1%}** "
             "of the gates' wall time (target <= 5 %).", "",
             f"{args.profiles} profiles (1 CPU each of the node's 2, validate -m fast + bench-rn50 --smoke): alone "
             f"{' + '.join(f'{w:.0f}' for w in alone)} = {sum(alone):.0f} s; at once {together:.0f} s "
             f"(**{together / sum(alone):.2f}** of the sum; verdicts {sorted({c['status'] for c in cells.values()})})."]
    print("\n".join(lines))
    record("perf-fleet", "Fleet fan-out against the same gates on this host", "\n".join(lines))


if __name__ == "__main__":
    main()
