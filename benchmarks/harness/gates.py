"""Acceptance gates: thresholds per hardware profile from gates.yaml, relative gates, regressions.

Why: a benchmark is a release gate only if a run ends in a verdict per gate (PASS, FAIL, or NOT RUN
with the reason), with the measured figure, the threshold and the profile it came from.
A gate applies only when the run's configuration matches its `when` (image size, batch size,
model variant, GPUs): figures measured another way are not compared with it.
"""

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

GATES_FILE = Path(__file__).resolve().parents[1] / "gates.yaml"


@dataclass
class Verdict:
    gate: str
    metric: str
    status: str  # PASS | FAIL | NOT RUN
    measured: float | None
    threshold: float | None
    op: str  # ">=" or "<="
    profile: str
    source: str = ""
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def load(path: Path = GATES_FILE) -> dict:
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SystemExit(f"error: cannot read gates file {path}: {exc}; fix: check its YAML") from exc


def detect_profile(gates: dict, gpu_names: list[str]) -> str | None:
    """The hardware profile of a run: the first profile whose pattern matches GPU 0; 'cpu' without GPUs."""
    if not gpu_names:
        return "cpu"
    for profile in gates.get("profiles", []):
        if re.search(profile["match"], gpu_names[0]):
            return profile["name"]
    return None


def lookup(results: dict, path: str) -> float | None:
    node: Any = results
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return float(node) if isinstance(node, int | float) else None


def _compare(name: str, metric: str, measured: float | None, gate: dict, profile: str, config: dict) -> Verdict:
    op, threshold = (">=", gate["min"]) if "min" in gate else ("<=", gate["max"])
    verdict = Verdict(name, metric, "NOT RUN", measured, float(threshold), op, profile, gate.get("source", ""))
    mismatched = {k: v for k, v in gate.get("when", {}).items() if config.get(k) != v}
    if mismatched:
        verdict.reason = "run configuration differs: " + ", ".join(
            f"{k}={config.get(k)} (gate: {v})" for k, v in mismatched.items())
        return verdict
    if measured is None:
        verdict.reason = "metric not measured in this run"
        return verdict
    ok = measured >= threshold if op == ">=" else measured <= threshold
    verdict.status = "PASS" if ok else "FAIL"
    return verdict


def evaluate(gates: dict, model: str, profile: str | None, results: dict, config: dict,
             baseline: dict | None = None, max_regression_pct: float | None = None) -> list[Verdict]:
    """Verdicts for one run: the profile's gates (or the relative ones), then regressions vs a baseline."""
    table = gates.get("models", {}).get(model, {})
    verdicts: list[Verdict] = []
    chosen = profile if profile in table else "relative"
    for gate in table.get(chosen, []):
        verdicts.append(_compare(gate["name"], gate["metric"], lookup(results, gate["metric"]), gate,
                                 chosen if profile in table else f"relative (no profile for {profile or 'this GPU'})",
                                 config))
    if chosen != "relative":
        for gate in table.get("relative", []):
            verdicts.append(_compare(gate["name"], gate["metric"], lookup(results, gate["metric"]), gate,
                                     "relative", config))
    if baseline is not None:
        verdicts += regressions(results, baseline, max_regression_pct or gates.get("max_regression_pct", 5.0))
    return verdicts


def _flatten(node: Any, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}{key}."))
    elif isinstance(node, int | float) and not isinstance(node, bool):
        out[prefix.rstrip(".")] = float(node)
    return out


def regressions(results: dict, baseline: dict, pct: float) -> list[Verdict]:
    """Throughput (`.ips`) may not fall, latency (`latency_ms.*`) may not rise, by more than pct %."""
    now, before = _flatten(results), _flatten(baseline.get("results", baseline))
    verdicts = []
    for metric in sorted(set(now) & set(before)):
        if metric.endswith(".ips"):
            threshold, op = before[metric] * (1 - pct / 100), ">="
            ok = now[metric] >= threshold
        elif ".latency_ms." in metric and metric.endswith((".mean", ".p99")):
            threshold, op = before[metric] * (1 + pct / 100), "<="
            ok = now[metric] <= threshold
        else:
            continue
        verdicts.append(Verdict(f"regression {metric}", metric, "PASS" if ok else "FAIL", now[metric], threshold, op,
                                "baseline", f"previous result {before[metric]:.4g}, at most {pct:g} % worse"))
    return verdicts
