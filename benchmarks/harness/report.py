"""Benchmark reports: result.json for machines, result.md and a throughput plot for people, a console summary.

Each run writes into its own folder (model-timestamp), so no earlier result is overwritten.
Beside img/s every table shows the achieved TFLOP/s, the hardware peak probed in the same run, the
efficiency of the hardware and of Paddle's own kernels (roofline.py; PROBE FAILURE where one came
out above 1.0, with the reason) and, on GPUs, the share of the data sheet's peak (MFU).
"""

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.harness.acceptance_gates import Outcome, Verdict
from benchmarks.harness.dllogger import DLLogger
from benchmarks.harness.model_spec import ModelSpec


def run_folder(base: Path, model: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = base / f"{model}-{stamp}"
    n = 1
    while folder.exists():
        n += 1
        folder = base / f"{model}-{stamp}-{n}"
    folder.mkdir(parents=True)
    return folder


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f} %"


def _tflops(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}" if value < 1 else f"{value:.1f}"


def _eff(result: dict, name: str) -> str:
    """An efficiency, or PROBE FAILURE when it came out above 1.0 (the reason is in the notes below the table)."""
    return "PROBE FAILURE" if f"{name}_failure" in result else _pct(result.get(name))


def peak_lines(peaks: dict) -> list[str]:
    """The two rooflines per dtype (the hardware: the fastest kind probed; Paddle's own kernels) and each kind."""
    lines = []
    for dtype, p in peaks.items():
        kinds = p.get("kind_peak_flops", {})
        if "peak_flops" not in p:
            reasons = "; ".join(f"{k}: {v}" for k, v in p.get("kinds", {}).items())
            lines.append(f"- {dtype}: no peak probe ran: {reasons}")
            continue
        own = kinds.get("paddle")
        lines.append(f"- {dtype}: the hardware {p['peak_flops'] / 1e12:.4f} TFLOP/s, Paddle's own kernels "
                     + (f"{own / 1e12:.4f} TFLOP/s" if own else "not probed") + "; per kind: " + "; ".join(
                         f"{kind} {kinds[kind] / 1e12:.4f}" if kind in kinds else f"{kind} {method}"
                         for kind, method in p.get("kinds", {}).items()))
    if not lines:
        return []
    return ["Peaks probed in this run, interleaved with each phase (the lowest phase median per kind; "
            "efficiency of the hardware is against the fastest kind, of Paddle's kernels against the kind its "
            "engine runs on: paddle for training, paddle-inference for Paddle Inference):", *lines, ""]


def verdict_lines(outcome: Outcome) -> list[str]:
    return [f"**Verdict: {outcome.verdict}**", ""] + [f"- {reason}" for reason in outcome.reasons] + \
        ([""] if outcome.reasons else [])


def eval_lines(evaluated: dict) -> list[str]:
    """The eval pass: per trained precision (bench-rn50) or of the given weights (bench-hgnet), with its data."""
    by_name = evaluated if "top1" not in evaluated else {"weights": evaluated}
    rows = [f"| {name} | {r['top1']:.2f} | {r['top5']:.2f} | {r.get('images', '-')} | "
            f"{r.get('data', '-')} |" for name, r in by_name.items() if isinstance(r, dict) and "top1" in r]
    if not rows:
        return []
    return ["## Evaluation", "", "| model | top-1 % | top-5 % | images | data |", "| --- | ---: | ---: | ---: | --- |",
            *rows, ""]


def data_parallel_lines(results: dict) -> list[str]:
    """One line per precision of a data-parallel run: the ranks, their summed img/s, the scaling efficiency."""
    lines = []
    for precision, dp in results.get("data_parallel", {}).items():
        scaling = (f"scaling efficiency {dp['scaling_efficiency'] * 100:.1f} % against one process "
                   f"({dp['reference_ips']:.2f} img/s)" if "scaling_efficiency" in dp else
                   "scaling efficiency not measured (the one-process reference wrote no figure)")
        per_rank = ", ".join(f"rank {r['rank']} {r['ips']:.2f}" for r in dp["ranks"])
        lines.append(f"data-parallel {precision}: {dp['procs']} ranks on {', '.join(dp['nodes'])}, "
                     f"{dp['ips']:.2f} img/s summed ({per_rank}); {scaling}")
    return lines


def markdown(title: str, config: dict, env: dict, results: dict, verdicts: list[Verdict], outcome: Outcome) -> str:
    """result.md: the verdict and the run, then each phase's table, what the figures rest on, and the gates."""
    lines = [f"# {title}", "", *verdict_lines(outcome),
             f"- release: {env.get('release')} ({env.get('flavor')}), "
             f"hardware: {env.get('hardware') or env.get('cpu')}",
             f"- CPU threads: {config.get('threads')} ({config.get('threads_from')})",
             "- configuration: " + ", ".join(f"{k}={v}" for k, v in config.items()), ""]
    lines += peak_lines(results.get("peak", {}))
    lines += _training_table({k: v for k, v in results.get("train", {}).items() if k != "summary"})
    if dp_lines := data_parallel_lines(results):
        lines += [f"- {line}" for line in dp_lines] + [""]
    lines += eval_lines(results.get("eval", {}))
    infer = {k: v for k, v in results.get("infer", {}).items() if k not in ("summary", "agreement")}
    lines += _inference_table(infer) + _figure_notes(results, infer) + _gates_table(verdicts)
    return "\n".join(lines) + "\n"


def _training_table(train: dict) -> list[str]:
    """One row per training precision (none when the run did not train)."""
    if not train:
        return []
    lines = ["## Training", "", "| precision | batch | img/s | TFLOP/s | peak TFLOP/s | of the hardware | "
             "of Paddle's kernels | MFU | step ms (mean) | p99 ms | loss first -> last |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for precision, r in train.items():
        lat = r["latency_ms"]
        lines.append(f"| {precision} | {r['batch']} | {r['ips']:.2f} | {_tflops(r.get('achieved_tflops'))} | "
                     f"{_tflops(r.get('peak_tflops'))} | {_eff(r, 'efficiency')} | "
                     f"{_eff(r, 'efficiency_paddle')} | {_pct(r.get('mfu'))} | "
                     f"{lat['mean']:.1f} | {lat['p99']:.1f} | {r['loss_first']:.3f} -> {r['loss_last']:.3f} |")
    return [*lines, ""]


def _inference_table(infer: dict) -> list[str]:
    """One row per back end x precision x batch size, or one saying why a combination is not available."""
    if not infer:
        return []
    lines = ["## Inference", "", "| engine | precision | batch | img/s | TFLOP/s | of the hardware | "
             "of Paddle's kernels | MFU | mean ms | p50 | p90 | p95 | p99 |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for backend, by_precision in infer.items():
        for precision, by_batch in by_precision.items():
            if "status" in by_batch:
                lines.append(f"| {backend} | {precision} | - | N/A, {by_batch['status']}: {by_batch['reason']} "
                             "| | | | | | | | | |")
                continue
            for bs, r in by_batch.items():
                lat = r["latency_ms"]
                engine = r.get("engine", backend)  # the engine that produced the figure
                lines.append(f"| {engine} | {precision} | {bs.removeprefix('bs')} | {r['ips']:.1f} | "
                             f"{_tflops(r.get('achieved_tflops'))} | {_eff(r, 'efficiency')} | "
                             f"{_eff(r, 'efficiency_paddle')} | "
                             f"{_pct(r.get('mfu'))} | {lat['mean']:.2f} | {lat['p50']:.2f} | {lat['p90']:.2f} | "
                             f"{lat['p95']:.2f} | {lat['p99']:.2f} |")
    return [*lines, ""]


def _figure_notes(results: dict, infer: dict) -> list[str]:
    """What the figures rest on: what was timed, the probes that failed, the back ends' agreement with Paddle."""
    lines = []
    notes = [f"{backend} {precision} {bs}: {r['timed']}" for backend, by_precision in infer.items()
             for precision, by_batch in by_precision.items() if "status" not in by_batch
             for bs, r in by_batch.items() if r.get("timed")]
    if notes:
        lines += ["What was timed: " + "; ".join(notes), ""]
    failures = [f"- {where}: {r[key]}" for where, r in _figures(results) for key in sorted(r)
                if key.endswith("_failure")]
    if failures:
        lines += ["Probe failures (no efficiency reported for these):", *failures, ""]
    if results.get("infer", {}).get("agreement"):
        lines += ["Output agreement with Paddle Inference (max relative difference): " + ", ".join(
            f"{k} {v:.2e}" for k, v in results["infer"]["agreement"].items()), ""]
    return lines


def _gates_table(verdicts: list[Verdict]) -> list[str]:
    """Every gate's verdict with what it measured against what threshold."""
    lines = ["## Gates", "", "| gate | verdict | measured | threshold | profile | note |",
             "| --- | --- | ---: | ---: | --- | --- |"]
    for v in verdicts:
        measured = "-" if v.measured is None else f"{v.measured:.4g}"
        threshold = "-" if v.threshold is None else f"{v.op} {v.threshold:.4g}"
        lines.append(f"| {v.gate} | {v.status} | {measured} | {threshold} | {v.profile} | {v.reason or v.source} |")
    return lines


def _figures(results: dict) -> list[tuple[str, dict]]:
    """(label, figures) of every throughput result: each training precision, each back end x precision x batch."""
    found = [(f"train {p}", r) for p, r in results.get("train", {}).items() if p != "summary"]
    for backend, by_precision in results.get("infer", {}).items():
        if backend in ("summary", "agreement"):
            continue
        for precision, by_batch in by_precision.items():
            if "status" not in by_batch:
                found += [(f"{backend} {precision} {bs}", r) for bs, r in by_batch.items()]
    return found


def console(title: str, profile: str | None, config: dict, results: dict, verdicts: list[Verdict],
            outcome: Outcome, out: Path) -> str:
    """The end of the run's output: the figures, the gates and the verdict."""
    gated = f"gates against profile {profile or 'none'}" if verdicts else "no gate evaluated"
    lines = [f"\n== {title}: {config.get('device')}, {config.get('threads')} CPU threads "
             f"({config.get('threads_from')}), {gated}"]
    for precision, r in results.get("train", {}).items():
        if precision != "summary":
            lines.append(f"   train {precision}: {r['ips']:.2f} img/s, {_tflops(r.get('achieved_tflops'))} TFLOP/s, "
                         f"{_eff(r, 'efficiency')} of the hardware, {_eff(r, 'efficiency_paddle')} of Paddle's kernels"
                         + (f", MFU {_pct(r['mfu'])}" if r.get("mfu") else "")
                         + (f"; input: {r['input']}" if r.get("input") else ""))
    lines += [f"   {line}" for line in data_parallel_lines(results)]
    for backend, by_precision in results.get("infer", {}).items():
        for precision, by_batch in by_precision.items() if backend not in ("summary", "agreement") else ():
            if "status" in by_batch:  # a back end this image or host cannot run: N/A, never a figure
                lines.append(f"   infer {backend} {precision}: N/A - {by_batch['reason']}")
    for v in verdicts:
        measured = "-" if v.measured is None else f"{v.measured:.4g}"
        threshold = "" if v.threshold is None else f" (needs {v.op} {v.threshold:.4g})"
        lines.append(f"   {v.status:<8} {v.gate}: {measured}{threshold}{' - ' + v.reason if v.reason else ''}")
    lines.append(f"   results: {out}/result.json, result.md, throughput.png")
    lines.append(f"== verdict: {outcome.verdict}" + (": " + "; ".join(outcome.reasons) if outcome.reasons else ""))
    return "\n".join(lines)


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


def _write_atomically(path: Path, text: str) -> None:
    """`path` holds either its old content or all of `text`, never a part (a stop may end the process any time)."""
    scratch = path.with_name(f".{path.name}.partial")
    scratch.write_text(text)
    scratch.replace(path)


def write(folder: Path, model: str, title: str, config: dict, env: dict, results: dict,
          verdicts: list[Verdict], outcome: Outcome, with_plot: bool = True) -> dict:
    summary = {
        "model": model, "config": config, "environment": env, "results": results,
        "gates": [v.as_dict() for v in verdicts],
        "verdict": outcome.verdict, "verdict_reasons": outcome.reasons,
        "passed": outcome.verdict in ("PASS", "SMOKE"),
    }
    _write_atomically(folder / "result.md", markdown(title, config, env, results, verdicts, outcome))
    _write_atomically(folder / "result.json", json.dumps(summary, indent=2, default=str) + "\n")  # last: complete
    if with_plot:
        plot(results, folder / "throughput.png", title)
    return summary


def interrupted(folder: Path, model: str, title: str, config: dict, env: dict, results: dict, signal_name: str,
                during: str) -> Path:
    """The report of a run stopped by a signal, in its own folder: verdict INTERRUPTED, with the figures of the
    phases that finished (never gated). Runs on ngc_common.stop's thread while the main thread may still be
    changing `results`: it takes a copy first."""
    for _attempt in range(3):
        try:
            finished = json.loads(json.dumps(results, default=str))
            break
        except RuntimeError:  # changed while copied
            continue
    else:
        finished = {}
    reason = (f"stopped by {signal_name} during {during}; the figures are those of the phases that finished "
              f"({', '.join(finished) or 'none'}), no gate was evaluated")
    write(folder, model, title, config, env, finished, [], Outcome("INTERRUPTED", [reason]), with_plot=False)
    return folder / "result.json"


def finish(out: Path, spec: ModelSpec, title: str, config: dict, env: dict, results: dict,
           verdicts: list[Verdict], outcome: Outcome, profile: str | None, logger: DLLogger) -> int:
    """End a run: write its files, log the summary, print the figures and the verdict last; its exit code."""
    write(out, spec.name, title, config, env, results, verdicts, outcome)
    logger.log("summary", {"verdict": outcome.verdict, "gates_failed": sum(v.status == "FAIL" for v in verdicts),
                           "output": str(out)})
    logger.close()
    print(console(spec.title, profile, config, results, verdicts, outcome, out), flush=True)
    return outcome.exit_code
