"""Acceptance gates: thresholds per hardware profile from gates.yaml, relative gates, regressions, the verdict.

Why: a benchmark is a release gate only if a run ends in a verdict per gate, with the measured
figure, the threshold and where the threshold came from, and an overall verdict that never
passes on missing evidence. Per gate:
  PASS / FAIL  measured and compared;
  N/A          the run was not configured for it (its `when` differs, or its mode, back end,
               precision or batch size was not asked for): nothing to prove;
  NOT RUN      it applied, but the figure is missing (a back end or device not available).
Overall: FAIL (exit 1) when a gate failed; NOT PROVEN (exit 3) when an acceptance gate (the
profile's, or a regression against --baseline) did not run, none passed, or the run lacked
what the image exists for (a GPU flavor without a GPU); PASS (exit 0) otherwise.
"""

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness import gates_file, scaling
from ngc_common.bench_result import PEAK_RECHECKED, is_efficiency
from ngc_common.exit_codes import ExitCode, for_verdict

GATES_FILE = Path(__file__).resolve().parents[1] / "gates.yaml"
# A metric about speed (efficiency, throughput, latency, a ratio of two speeds): what an emulated run cannot prove.
SPEED_METRIC = re.compile(r"efficiency|\.ips$|latency|_over_")
PEAK_TOLERANCE = 0.15  # throughput is compared with a baseline only when the probed peaks agree this well


@dataclass
class Verdict:
    gate: str
    metric: str
    status: str  # PASS | FAIL | NOT RUN | N/A | NOT PROVEN (emulated)
    measured: float | None
    threshold: float | None
    op: str  # ">=" or "<="
    profile: str
    source: str = ""
    reason: str = ""
    acceptance: bool = False  # the profile's own gates and regressions; relative gates are sanity checks

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Outcome:
    verdict: str  # PASS | FAIL | NOT PROVEN
    reasons: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        return for_verdict(self.verdict)


def load(path: Path = GATES_FILE) -> dict:
    """The gates file, read with bounds and checked against its schema (gates_file.GatesFile); a file that is
    not one raises ngc_common.errors.InputError, one line naming the file and the field (the command exits 2)."""
    return gates_file.read(path)


def detect_profile(gates: dict, gpu_names: list[str]) -> str | None:
    """The hardware profile of a run: the first profile whose pattern matches GPU 0; 'cpu' without GPUs."""
    if not gpu_names:
        return "cpu"
    for profile in gates.get("profiles", []):
        if re.search(profile["match"], gpu_names[0]):
            return profile["name"]
    return None


def datasheet_tflops(gates: dict, profile: str | None, precision: str) -> float | None:
    """The data sheet's dense peak of the profile's GPU for a training or inference precision."""
    peaks = next((p.get("peak_tflops", {}) for p in gates.get("profiles", []) if p["name"] == profile), {})
    key = {"amp": "fp16", "amp-o2": "fp16", "fp32": "tf32" if "tf32" in peaks else "fp32"}.get(precision, precision)
    return peaks.get(key)


def lookup(results: dict, path: str) -> float | None:
    node: Any = results
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return float(node) if isinstance(node, int | float) and not isinstance(node, bool) else None


def not_requested(metric: str, config: dict) -> str | None:
    """Why a metric was not part of this run's configuration, or None when the run asked for it."""
    parts = metric.split(".")
    if parts[0] == "data_parallel":  # data_parallel.<precision>.*: the training's, in several processes
        parts[0] = "train"
    mode = config.get("mode", "all")
    if parts[0] in ("train", "infer") and mode not in (parts[0], "all"):
        return f"{parts[0]} not run (--mode {mode})"
    if parts[0] == "train" and len(parts) > 1 and parts[1] != "summary" \
            and parts[1] not in config.get("precisions", [parts[1]]):
        return f"precision {parts[1]} not asked for (--precision)"
    if parts[:2] == ["infer", "summary"] and not {1, 8} <= set(config.get("batch_sizes", [1, 8])):
        return "needs batch sizes 1 and 8 in the sweep (--batch-sizes)"
    if parts[0] == "infer" and len(parts) > 2:
        backend = parts[2] if parts[1] == "agreement" else parts[1]
        if parts[1] != "summary" and backend not in config.get("backends", [backend]):
            return f"back end {backend} not asked for (--backends)"
        if parts[1] not in ("summary", "agreement") and len(parts) > 3:
            if parts[2] not in config.get("infer_precisions", [parts[2]]):
                return f"inference precision {parts[2]} not asked for (--infer-precision)"
            batch = parts[3].removeprefix("bs")
            if batch.isdigit() and int(batch) not in config.get("batch_sizes", [int(batch)]):
                return f"batch size {batch} not in the sweep (--batch-sizes)"
    if parts[0] == "eval" and not config.get("eval"):
        return "needs --eval-data DIR and --weights FILE"
    return None


def _compare(gate: dict, results: dict, profile: str, config: dict, acceptance: bool) -> Verdict:
    op, threshold = (">=", gate["min"]) if "min" in gate else ("<=", gate["max"])
    measured = lookup(results, gate["metric"])
    verdict = Verdict(gate["name"], gate["metric"], "N/A", measured, float(threshold), op, profile,
                      gate.get("source", ""), acceptance=acceptance)
    mismatched = {k: v for k, v in gate.get("when", {}).items() if config.get(k) != v}
    if mismatched:
        verdict.reason = "run configuration differs: " + ", ".join(
            f"{k}={config.get(k)} (gate: {v})" for k, v in mismatched.items())
        return verdict
    skipped = not_requested(gate["metric"], config)
    if skipped:
        verdict.reason = skipped
        return verdict
    if measured is None:
        verdict.status, verdict.reason = "NOT RUN", why_missing(gate["metric"], results)
        return verdict
    ok = measured >= threshold if op == ">=" else measured <= threshold
    verdict.status = "PASS" if ok else "FAIL"
    if not ok and rechecked(results, gate["metric"]):  # its peak was probed after the work, not beside it
        verdict.status, verdict.reason = "NOT RUN", (
            f"{measured:.4g} is below the floor against a peak probed again after the work (the work had outrun the "
            "probes beside it), so it decides nothing; run it again on a quieter host")
    return verdict


def _figures_of(results: dict, metric: str) -> dict:
    """The mapping that holds `metric`'s leaf (its figure's siblings: failures, marks); {} where there is none."""
    parent: Any = results
    for part in metric.split(".")[:-1]:
        parent = parent.get(part, {}) if isinstance(parent, dict) else {}
    return parent if isinstance(parent, dict) else {}


def rechecked(results: dict, metric: str) -> bool:
    """Whether `metric` is an efficiency over a peak probed again after the work (efficiency.annotate marks it)."""
    return is_efficiency(metric) and bool(_figures_of(results, metric).get(PEAK_RECHECKED))


def why_missing(metric: str, results: dict) -> str:
    """The reason a figure is missing: a probe failure (an efficiency above 1.0), or the reason a back end gave
    for not running."""
    parts = metric.split(".")
    failure = _figures_of(results, metric).get(f"{parts[-1]}_failure")
    if isinstance(failure, str):
        return failure
    if parts[0] == "data_parallel" and len(parts) > 1:
        if parts[1] not in results.get("data_parallel", {}):
            return f"no data-parallel figures for {parts[1]}: the run trained in one process"
        return (f"the one-process reference of the same job wrote no {parts[1]} figure, so no scaling efficiency "
                "(its log: launch-logs/reference.log)")
    if parts[0] == "infer" and len(parts) > 2:
        node = results.get("infer", {}).get(parts[1], {}).get(parts[2], {})
        if isinstance(node, dict) and node.get("status"):
            return f"{parts[1]} {parts[2]}: {node['status']}: {node.get('reason', '')}"
    return "metric not measured in this run"


def evaluate(gates: dict, model: str, profile: str | None, results: dict, config: dict,
             baseline: dict | None = None, max_regression_pct: float | None = None,
             hardware: str | None = None, emulated: str | None = None) -> list[Verdict]:
    """Verdicts for one run: the profile's gates (or none), the relative ones, then regressions vs a baseline (none
    under emulation: its figures compare with nothing)."""
    table = gates.get("models", {}).get(model, {})
    verdicts = [_compare(g, results, profile, config, True) for g in table.get(profile or "", [])
                if profile in table and profile != "relative"]
    verdicts += [_compare(g, results, "relative", config, False) for g in table.get("relative", [])]
    verdicts += scaling_reported(table, profile, results, verdicts)
    if emulated:
        return unproven_under_emulation(verdicts, emulated)
    if baseline is not None:
        verdicts += regressions(results, baseline, max_regression_pct or gates.get("max_regression_pct", 5.0),
                                hardware)
    return verdicts


def scaling_reported(table: dict, profile: str | None, results: dict, verdicts: list[Verdict]) -> list[Verdict]:
    """The scaling efficiency of each precision of a data-parallel run that no gate decides (benchmarks/harness/
    scaling.py): a gate of the profile that does not apply to the run gets the reason it is reported, not gated; a
    profile without one gets an N/A verdict of its own with the figure and that reason. Returns those added."""
    added = []
    for precision in results.get("data_parallel", {}):
        name = scaling.metric(precision)
        own = [v for v in verdicts if v.metric == name]
        for verdict in own:
            if verdict.status == "N/A":
                verdict.reason = scaling.why_not_gated(table, name, profile, verdict.reason)
        if not own:
            added.append(Verdict(f"{precision} scaling efficiency", name, "N/A", lookup(results, name), None, "",
                                 profile or "-", reason=scaling.why_not_gated(table, name, profile, None)))
    return added


def unproven_under_emulation(verdicts: list[Verdict], reason: str) -> list[Verdict]:
    """An emulated run's verdicts (ngc_common.emulation): every gate of the hardware profile, and every relative gate
    on a speed, is NOT PROVEN with the reason (once per gate: an emulated run has no CPU kind, so a floor of each
    kind would apply alike); the functional relative gates (a finite loss, back ends agreeing) decide as anywhere."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for verdict in verdicts:
        if verdict.acceptance or SPEED_METRIC.search(verdict.metric):
            if (verdict.gate, verdict.metric) in seen:
                continue
            seen.add((verdict.gate, verdict.metric))
            verdict.status, verdict.reason = "NOT PROVEN", reason
        kept.append(verdict)
    return kept


def judge(gates: dict, model: str, profile: str | None, results: dict, config: dict, baseline: dict | None,
          max_regression_pct: float | None, hardware: str | None, missing: str | None,
          emulated: str | None = None) -> tuple[list[Verdict], Outcome]:
    """The verdict per gate and for the run; `missing` names what the image exists for and the run lacked (no
    profile gate applies then); `emulated` why the run's figures prove nothing (each gate is NOT PROVEN with it, and
    so is the run). A --smoke run is evaluated too, but its outcome is SMOKE (exit 0)."""
    verdicts = evaluate(gates, model, profile if not missing else None, results, config, baseline,
                        max_regression_pct, hardware, emulated)
    unproven = [r for r in (missing, emulated) if r]
    outcome = Outcome("SMOKE") if config.get("smoke") else overall(verdicts, unproven,
                                                                   unfloored_cpu(gates, model, profile, config))
    return verdicts, outcome


def unfloored_cpu(gates: dict, model: str, profile: str | None, config: dict) -> str | None:
    """Why no CPU floor applies to this run, when its CPU kind has none (a floor holds for the kind it was
    measured on, benchmarks/harness/cpu_kind.py); None when one exists or the run is not a CPU run."""
    kinds = sorted({g.get("when", {}).get("cpu_kind") for g in gates.get("models", {}).get(model, {}).get("cpu", [])}
                   - {None})
    kind = config.get("cpu_kind")
    if profile != "cpu" or not kinds or kind in kinds:
        return None
    return (f"no CPU efficiency floor for this CPU kind ({kind}; gates.yaml has floors for {', '.join(kinds)}): "
            "the figures are reported, not gated; the A/B gate against the previous release decides here "
            "(ngc-paddle bench-compare)")


def _flatten(node: Any, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}{key}."))
    elif isinstance(node, int | float) and not isinstance(node, bool):
        out[prefix.rstrip(".")] = float(node)
    return out


def _peak(results: dict) -> float | None:
    return lookup(results, "peak.float32.peak_flops")


def regressions(results: dict, baseline: dict, pct: float, hardware: str | None = None) -> list[Verdict]:
    """Efficiency may not fall by more than pct %; throughput (`.ips`) may not fall and latency may not rise
    by more than pct % either, compared only when the baseline ran on the same hardware under the same
    load (the probed peaks agree within PEAK_TOLERANCE). Under another load only the efficiency against
    the kernels the workload runs on (`efficiency_paddle`, where the figure has one) is compared: the
    hardware peak is probed on every core, and a workload that keeps fewer busy (CPU training) loses less
    to other work than that peak does, so its share of the hardware moves with the load."""
    then_hw = baseline.get("environment", {}).get("hardware")
    if hardware and then_hw and then_hw != hardware:
        return [Verdict("regression vs baseline", "-", "N/A", None, None, "", "baseline",
                        reason=f"the baseline ran on {then_hw}, this run on {hardware}: not comparable; "
                        "fix: pass a result.json of the same hardware profile")]
    now, before = _flatten(results), _flatten(baseline.get("results", baseline))
    peak_now, peak_then = _peak(results), _peak(baseline.get("results", baseline))
    load_differs = None
    if peak_now and peak_then and abs(peak_now / peak_then - 1) > PEAK_TOLERANCE:
        load_differs = (f"probed peak {peak_now / 1e9:.1f} vs {peak_then / 1e9:.1f} GFLOP/s in the baseline: the "
                        "host is busier or clocked differently; efficiency is compared instead")
    verdicts = []
    for metric in sorted(set(now) & set(before)):
        if is_efficiency(metric) or metric.endswith(".ips"):
            threshold, op = before[metric] * (1 - pct / 100), ">="
            ok = now[metric] >= threshold
        elif ".latency_ms." in metric and metric.endswith((".mean", ".p99")):
            threshold, op = before[metric] * (1 + pct / 100), "<="
            ok = now[metric] <= threshold
        else:
            continue
        verdict = Verdict(f"regression {metric}", metric, "PASS" if ok else "FAIL", now[metric], threshold, op,
                          "baseline", f"previous result {before[metric]:.4g}, at most {pct:g} % worse",
                          acceptance=True)
        if load_differs and metric.endswith(".efficiency") and f"{metric}_paddle" in now:
            verdict.status, verdict.reason = "N/A", f"{load_differs}: {metric}_paddle (against the kernels it runs on)"
        elif load_differs and not is_efficiency(metric):
            verdict.status, verdict.reason = "N/A", load_differs
        verdicts.append(verdict)
    return verdicts


def overall(verdicts: list[Verdict], missing: list[str] | None = None, no_gate: str | None = None) -> Outcome:
    """One verdict for the run; `missing` names what the run needed and did not have (e.g. a GPU); `no_gate` why
    no acceptance gate exists for this hardware, when that is known (unfloored_cpu)."""
    failed = [v for v in verdicts if v.status == "FAIL"]
    if failed:
        return Outcome("FAIL", [f"{v.gate}: {v.measured:.4g} (needs {v.op} {v.threshold:.4g})" for v in failed])
    reasons = list(missing or [])
    reasons += [f"{v.gate}: not run: {v.reason}" for v in verdicts if v.acceptance and v.status == "NOT RUN"]
    if not any(v.acceptance and v.status == "PASS" for v in verdicts) and not reasons and no_gate:
        reasons.append(no_gate)
    if not any(v.acceptance and v.status == "PASS" for v in verdicts) and not reasons:
        reasons.append("no acceptance gate applies to this hardware and configuration (the profile's gates need "
                       "their reference configuration; or give --baseline RESULT.json of this hardware)")
    return Outcome("NOT PROVEN", reasons) if reasons else Outcome("PASS")
