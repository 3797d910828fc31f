"""The A/B verdict: per metric PASS, FAIL or NOT PROVEN from the interval of candidate/reference, then overall.

Why: a regression is decided only when the whole interval is beyond the allowed one, a pass only when the whole
interval is within it; an interval that straddles the threshold is NOT PROVEN ("noise too high: N rounds, CI [a, b]")
with about how many more rounds would decide, never a coin toss. The threshold is gates.yaml's
`max_regression_pct` (read through benchmarks/harness/gates_file.py, the loader the benchmarks use): throughput may
fall to (1 - t), a time may grow to (1 + t). The Mann-Whitney U test is the second opinion: an interval beyond the
threshold FAILs only if the U test also finds the samples different (p < ALPHA), so a FAIL needs 4 rounds or more
(3 a side cannot give p < 0.05): on a busy 2-core host 3 smoke rounds of one image against itself gave a bootstrap
interval of [0.45, 0.84], which alone would have been a false fail.
The image size is reported, not gated here: month-over-month gates its growth, with the manifest's reasons.
"""

import importlib.util
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import median
from typing import Literal

from ngc_paddle.errors import NgcPaddleError
from ngc_paddle.release.ab import stats
from ngc_paddle.release.ab.metrics import IMAGE_SIZE, Metric

MIN_ROUNDS = 3  # a bootstrap of fewer rounds is the rounds themselves, not an interval
ALPHA = 0.05
GATES_FILE = Path("benchmarks") / "gates.yaml"
Status = Literal["PASS", "FAIL", "NOT PROVEN", "INFO"]
ORDER = ("FAIL", "NOT RUN", "NOT PROVEN", "PASS")  # worst first


@dataclass(frozen=True)
class MetricVerdict:
    key: str
    label: str
    unit: str
    direction: str
    status: Status
    ratio: float
    low: float
    high: float
    bound: float  # the ratio the interval is judged against: 1 - t (higher is better) or 1 + t (lower is better)
    rounds: int
    candidate: float  # medians of the rounds
    reference: float
    u_p: float | None
    u_method: str
    more_rounds: int | None  # NOT PROVEN: about how many more rounds would decide (None: the ratio sits on the bound)
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


def max_regression_pct(root: Path) -> float:
    """gates.yaml's max_regression_pct, through the benchmarks' own loader (one schema, one source)."""
    path = root / "benchmarks" / "harness" / "gates_file.py"
    spec = importlib.util.spec_from_file_location("ngc_gates_file", path)
    if spec is None or spec.loader is None:
        raise NgcPaddleError(f"{path}: (file): cannot be loaded; fix: restore it (git checkout)")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return float(module.read(root / GATES_FILE)["max_regression_pct"])


def judge(metric: Metric, pairs: list[tuple[float, float]], threshold_pct: float) -> MetricVerdict:
    """One metric's verdict from its (candidate, reference) figures, one pair per measured round."""
    t = threshold_pct / 100
    bound = 1 - t if metric.direction == "higher" else 1 + t
    candidate, reference = [c for c, _ in pairs], [r for _, r in pairs]
    interval = stats.ratio_interval([c / r for c, r in pairs])
    test = stats.mann_whitney(candidate, reference) if len(pairs) > 1 else None
    common = dict(key=metric.key, label=metric.label, unit=metric.unit, direction=metric.direction,
                  ratio=interval.ratio, low=interval.low, high=interval.high, bound=bound, rounds=len(pairs),
                  candidate=median(candidate), reference=median(reference), u_p=test.p if test else None,
                  u_method=test.method if test else "")
    shown = f"{len(pairs)} round{'s' if len(pairs) != 1 else ''}, CI [{interval.low:.3f}, {interval.high:.3f}]"
    if metric.key == IMAGE_SIZE:
        return MetricVerdict(status="INFO", more_rounds=None, reason="reported: month-over-month gates the size",
                             **common)
    if len(pairs) < MIN_ROUNDS:
        return MetricVerdict(status="NOT PROVEN", more_rounds=MIN_ROUNDS - len(pairs),
                             reason=f"too few rounds: {len(pairs)} measured, {MIN_ROUNDS} needed", **common)
    worse = interval.high < bound if metric.direction == "higher" else interval.low > bound
    within = interval.low >= bound if metric.direction == "higher" else interval.high <= bound
    if worse:
        if test and test.min_p < ALPHA and test.p >= ALPHA:
            return MetricVerdict(status="NOT PROVEN", more_rounds=None, reason=(
                f"the interval is beyond {bound:.3f} ({shown}) but the U test does not confirm it (p={test.p:.3f})"),
                **common)
        if not test or test.min_p >= ALPHA:  # 3 rounds: a bootstrap of 3 is too narrow to FAIL on alone
            return MetricVerdict(status="NOT PROVEN", more_rounds=1, reason=(
                f"the interval is beyond {bound:.3f} ({shown}) but too few rounds for the U test to confirm it (its "
                f"smallest p is {test.min_p if test else 1:.2f}); about 1 more round would decide"), **common)
        return MetricVerdict(status="FAIL", more_rounds=None, reason=(
            f"regression beyond {threshold_pct:g} %: {shown}, all beyond {bound:.3f}; U test p={test.p:.3f}"),
            **common)
    if within:
        return MetricVerdict(status="PASS", more_rounds=None, reason=f"within {threshold_pct:g} %: {shown}", **common)
    more = stats.rounds_to_decide(interval, bound)
    decide = f"about {more} more rounds would decide" if more else "the ratio sits on the threshold"
    return MetricVerdict(status="NOT PROVEN", more_rounds=more, reason=(
        f"noise too high: {shown} straddles {bound:.3f}; {decide}"), **common)


def overall(verdicts: list[MetricVerdict]) -> tuple[str, list[str]]:
    """The A/B verdict of a comparison and its reasons (each metric that did not pass)."""
    gated = [v for v in verdicts if v.status != "INFO"]
    if not gated:
        return "NOT PROVEN", ["no metric was measured by both images in the same rounds"]
    status = min((v.status for v in gated), key=ORDER.index)
    return status, [f"{v.label}: {v.status}: {v.reason}" for v in gated if v.status != "PASS"]
