"""The A/B verdict: per metric PASS, FAIL or NOT PROVEN from the interval of candidate/reference, then overall.

The long form: docs/design-notes.md, section `ngc_paddle/release/ab/verdict.py`.
"""

import importlib.util
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import median
from typing import Literal

from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.ab import stats
from ngc_paddle.release.ab.metrics import IMAGE_SIZE, Metric

MIN_ROUNDS = 3  # a bootstrap of fewer rounds is the rounds themselves, not an interval
ALPHA = 0.05  # the paired test's one-sided level
FAIL_MIN_ROUNDS = stats.rounds_for_min_p(ALPHA)  # 5: 2^-4 = 0.0625 cannot reach p < 0.05
IMAGE_SIZE_REASON = "reported: the month-over-month stage gates the size's growth (with the manifest's reasons)"
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
    test_p: float | None  # the paired signed-rank test's one-sided p that the rounds are beyond the bound
    more_rounds: int | None  # NOT PROVEN: about how many more rounds would decide (None: the ratio sits on the bound)
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


def max_regression_pct(root: Path) -> float:
    """gates.yaml's max_regression_pct, through the benchmarks' own loader (one schema, one source)."""
    path = root / "benchmarks" / "harness" / "gates_file.py"
    spec = importlib.util.spec_from_file_location("ngc_gates_file", path) if path.is_file() else None
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
    ratios = [c / r for c, r in pairs]
    interval = stats.ratio_interval(ratios)
    common = dict(key=metric.key, label=metric.label, unit=metric.unit, direction=metric.direction,
                  ratio=interval.ratio, low=interval.low, high=interval.high, bound=bound, rounds=len(pairs),
                  candidate=median(candidate), reference=median(reference))
    shown = f"{len(pairs)} round{'s' if len(pairs) != 1 else ''}, CI [{interval.low:.3f}, {interval.high:.3f}]"
    if metric.key == IMAGE_SIZE:
        return MetricVerdict(status="INFO", more_rounds=None, test_p=None, reason=IMAGE_SIZE_REASON, **common)
    test = stats.signed_rank(ratios, bound, metric.direction)
    common["test_p"] = test.p
    if len(pairs) < MIN_ROUNDS:
        return MetricVerdict(status="NOT PROVEN", more_rounds=MIN_ROUNDS - len(pairs), reason=(
            f"too few rounds: {len(pairs)} measured, {MIN_ROUNDS} needed for an interval; "
            f"{MIN_ROUNDS - len(pairs)} more would give one"), **common)
    worse = interval.high < bound if metric.direction == "higher" else interval.low > bound
    within = interval.low >= bound if metric.direction == "higher" else interval.high <= bound
    if worse and test.p < ALPHA:
        return MetricVerdict(status="FAIL", more_rounds=None, reason=(
            f"regression beyond {threshold_pct:g} %: {shown}, all beyond {bound:.3f}; paired signed-rank test of the "
            f"rounds' ratios p={test.p:.3f}"), **common)
    if worse:
        more = stats.rounds_to_confirm(ratios, bound, metric.direction, ALPHA)
        why = (f"a FAIL needs {FAIL_MIN_ROUNDS} rounds (the paired test's smallest p with {len(pairs)} is "
               f"{test.min_p:.3f})" if len(pairs) < FAIL_MIN_ROUNDS else
               f"the paired signed-rank test of the rounds' ratios does not confirm it (p={test.p:.3f})")
        return MetricVerdict(status="NOT PROVEN", more_rounds=more, reason=(
            f"the interval is beyond {bound:.3f} ({shown}) but {why}; about {more} more round"
            f"{'s' if more != 1 else ''} would decide"), **common)
    if within:
        return MetricVerdict(status="PASS", more_rounds=None, reason=f"within {threshold_pct:g} %: {shown}", **common)
    more = stats.rounds_to_decide(interval, bound)
    decide = (f"about {more} more rounds would decide" if more else
              "the ratio sits on the threshold: no number of rounds decides it")
    return MetricVerdict(status="NOT PROVEN", more_rounds=more, reason=(
        f"noise too high: {shown} straddles {bound:.3f}; {decide}"), **common)


def overall(verdicts: list[MetricVerdict]) -> tuple[str, list[str]]:
    """The A/B verdict of a comparison and its reasons (each metric that did not pass)."""
    gated = [v for v in verdicts if v.status != "INFO"]
    if not gated:
        return "NOT PROVEN", ["no metric was measured by both images in the same rounds"]
    status = min((v.status for v in gated), key=ORDER.index)
    return status, [f"{v.label}: {v.status}: {v.reason}" for v in gated if v.status != "PASS"]
