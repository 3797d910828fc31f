"""Benchmark reports: result.json for machines, result.md and a throughput plot for people.

Each run writes into its own folder (model-timestamp), so no earlier result is overwritten.
"""

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.harness.gates import Verdict


def run_folder(base: Path, model: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = base / f"{model}-{stamp}"
    n = 1
    while folder.exists():
        n += 1
        folder = base / f"{model}-{stamp}-{n}"
    folder.mkdir(parents=True)
    return folder


def markdown(title: str, config: dict, env: dict, results: dict, verdicts: list[Verdict]) -> str:
    lines = [f"# {title}", "", f"- release: {env.get('release')} ({env.get('flavor')}), "
             f"hardware: {', '.join(g['name'] for g in env.get('gpus', [])) or env.get('cpu')}",
             "- configuration: " + ", ".join(f"{k}={v}" for k, v in config.items()), ""]
    train = {k: v for k, v in results.get("train", {}).items() if k != "summary"}
    if train:
        lines += ["## Training", "", "| precision | batch | img/s | step ms (mean) | p99 ms | loss first -> last |",
                  "| --- | ---: | ---: | ---: | ---: | --- |"]
        for precision, r in train.items():
            lat = r["latency_ms"]
            lines.append(f"| {precision} | {r['batch']} | {r['ips']:.2f} | {lat['mean']:.1f} | {lat['p99']:.1f} | "
                         f"{r['loss_first']:.3f} -> {r['loss_last']:.3f} |")
        lines.append("")
    infer = {k: v for k, v in results.get("infer", {}).items() if k not in ("summary", "agreement")}
    if infer:
        lines += ["## Inference", "", "| backend | precision | batch | img/s | mean ms | p50 | p90 | p95 | p99 |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for backend, by_precision in infer.items():
            for precision, by_batch in by_precision.items():
                if "status" in by_batch:
                    lines.append(f"| {backend} | {precision} | - | {by_batch['status']}: {by_batch['reason']} "
                                 "| | | | | |")
                    continue
                for bs, r in by_batch.items():
                    lat = r["latency_ms"]
                    lines.append(f"| {backend} | {precision} | {bs.removeprefix('bs')} | {r['ips']:.1f} | "
                                 f"{lat['mean']:.2f} | {lat['p50']:.2f} | {lat['p90']:.2f} | {lat['p95']:.2f} | "
                                 f"{lat['p99']:.2f} |")
        lines.append("")
    if results.get("infer", {}).get("agreement"):
        lines += ["Output agreement with Paddle Inference (max relative difference): " + ", ".join(
            f"{k} {v:.2e}" for k, v in results["infer"]["agreement"].items()), ""]
    lines += ["## Gates", "", "| gate | verdict | measured | threshold | profile | note |",
              "| --- | --- | ---: | ---: | --- | --- |"]
    for v in verdicts:
        measured = "-" if v.measured is None else f"{v.measured:.4g}"
        lines.append(f"| {v.gate} | {v.status} | {measured} | {v.op} {v.threshold:.4g} | {v.profile} | "
                     f"{v.reason or v.source} |")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path, title: str) -> bool:
    """Throughput against batch size per inference back end and precision (PNG); False without data."""
    series = []
    for backend, by_precision in results.get("infer", {}).items():
        if backend in ("summary", "agreement"):
            continue
        for precision, by_batch in by_precision.items():
            if "status" in by_batch:
                continue
            points = sorted((int(bs.removeprefix("bs")), r["ips"]) for bs, r in by_batch.items())
            series.append((f"{backend} {precision}", points))
    if not series:
        return False
    os.environ.setdefault("MPLCONFIGDIR", str(path.parent / ".matplotlib"))
    try:
        import matplotlib
    except ImportError:
        print("note: matplotlib is not installed; no throughput plot written")
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for label, points in series:
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("images / s")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def write(folder: Path, model: str, title: str, config: dict, env: dict, results: dict,
          verdicts: list[Verdict]) -> dict:
    summary = {
        "model": model, "config": config, "environment": env, "results": results,
        "gates": [v.as_dict() for v in verdicts],
        "passed": not any(v.status == "FAIL" for v in verdicts),
    }
    (folder / "result.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (folder / "result.md").write_text(markdown(title, config, env, results, verdicts))
    plot(results, folder / "throughput.png", title)
    return summary
