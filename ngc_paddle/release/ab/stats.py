"""The statistics of an A/B comparison: a bootstrap interval of the ratio, a Mann-Whitney U test, rounds to decide.

Why: one pair of runs on a 2-core host moves 10-30 % between runs of the same image; what decides is an interval
from several rounds, not a pair (asv, Google Benchmark's compare.py, pyperf: anchors.md). The ratio of a round is
candidate/reference measured back to back on the same node, so slow drift of the node hits both; the interval is a
percentile bootstrap of the geometric mean of those per-round ratios (ratios multiply, so their logs are averaged),
with a fixed seed so that the same figures always give the same verdict. The Mann-Whitney U test on the raw samples
(candidate's against reference's, unpaired) is the second opinion asv and compare.py use; scipy is not a dependency
of this project, so the small test is written here: exact (the null distribution of U counted) without ties and up
to EXACT_MAX samples a side, else the normal approximation with tie and continuity corrections.
"""

import math
import random
from dataclasses import dataclass
from functools import cache

RESAMPLES = 4000
SEED = 20261204  # fixed: the same rounds give the same interval, run after run
CONFIDENCE = 0.95
EXACT_MAX = 25  # up to this many samples a side the U test's p-value is exact (without ties)


@dataclass(frozen=True)
class Interval:
    """The geometric-mean ratio of the rounds and its bootstrap percentile interval."""

    ratio: float
    low: float
    high: float
    rounds: int


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def ratio_interval(ratios: list[float], confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
                   seed: int = SEED) -> Interval:
    """The geometric mean of the per-round ratios and its percentile bootstrap interval (resampling the rounds)."""
    if not ratios or any(not (r > 0 and math.isfinite(r)) for r in ratios):
        raise ValueError(f"ratios must be positive finite numbers: {ratios}")
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(logs) for _ in range(n)) / n for _ in range(resamples))
    tail = (1 - confidence) / 2
    low = means[max(0, math.floor(tail * resamples))]
    high = means[min(resamples - 1, math.ceil((1 - tail) * resamples) - 1)]
    return Interval(geometric_mean(ratios), math.exp(low), math.exp(high), n)


@dataclass(frozen=True)
class UTest:
    """Mann-Whitney U of candidate's samples against reference's: U of the candidate, two-sided p, how computed."""

    u: float
    p: float
    method: str  # "exact" or "normal"
    min_p: float  # the smallest p-value these sample sizes can give: above alpha, the test cannot confirm anything


@cache
def _arrangements(n1: int, n2: int) -> tuple[int, ...]:
    """How many orderings of n1 + n2 distinct values give each U = 0 .. n1*n2 (U: pairs where the first wins)."""
    if n1 == 0 or n2 == 0:
        return (1,)
    with_first_top = _arrangements(n1 - 1, n2)  # the largest value is one of the first sample's: it beats all n2
    with_second_top = _arrangements(n1, n2 - 1)
    counts = [0] * (n1 * n2 + 1)
    for u, c in enumerate(with_first_top):
        counts[u + n2] += c
    for u, c in enumerate(with_second_top):
        counts[u] += c
    return tuple(counts)


def mann_whitney(first: list[float], second: list[float]) -> UTest:
    """The two-sided Mann-Whitney U test of `first` against `second`."""
    n1, n2 = len(first), len(second)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    u = sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in first for y in second)
    ties = len(set(first) | set(second)) < n1 + n2
    exact_min = 2 / math.comb(n1 + n2, n1)
    if not ties and max(n1, n2) <= EXACT_MAX:
        counts = _arrangements(n1, n2)
        total = sum(counts)
        k = round(u)
        below, above = sum(counts[: k + 1]) / total, sum(counts[k:]) / total
        return UTest(u, min(1.0, 2 * min(below, above)), "exact", min(1.0, exact_min))
    values = sorted([*first, *second])
    n = n1 + n2
    tie_term = sum(c ** 3 - c for c in (values.count(v) for v in set(values)))
    sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    if sigma == 0:
        return UTest(u, 1.0, "normal", 1.0)
    z = max(0.0, abs(u - n1 * n2 / 2) - 0.5) / sigma
    p = math.erfc(z / math.sqrt(2))
    z_max = max(0.0, n1 * n2 / 2 - 0.5) / sigma
    return UTest(u, min(1.0, p), "normal", min(1.0, math.erfc(z_max / math.sqrt(2))))


def rounds_to_decide(interval: Interval, bound: float) -> int | None:
    """About how many more rounds would move the interval off `bound`: its half-width on the side facing the bound
    shrinks as 1/sqrt(rounds), so n rounds become n x (half-width / distance to the bound)^2. None when the ratio
    sits on the bound (no number of rounds decides that)."""
    centre = math.log(interval.ratio)
    distance = abs(centre - math.log(bound))
    if distance < 1e-9:
        return None
    half = centre - math.log(interval.low) if bound < interval.ratio else math.log(interval.high) - centre
    needed = math.ceil(interval.rounds * (half / distance) ** 2 - 1e-9)
    return max(1, needed - interval.rounds)
