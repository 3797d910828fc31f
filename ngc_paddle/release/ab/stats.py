"""The statistics of an A/B comparison: a bootstrap interval of the ratio, a paired signed-rank test of the rounds'
ratios against the bound, and how many rounds would decide.

The long form: docs/design-notes.md, section `ngc_paddle/release/ab/stats.py`.
"""

import math
import random
from dataclasses import dataclass
from statistics import NormalDist, fmean, stdev

RESAMPLES = 4000
SEED = 20261204  # fixed: the same rounds give the same interval, run after run
CONFIDENCE = 0.95
EXACT_MAX = 60  # up to this many rounds the signed-rank p-value is exact (counted), beyond it the normal approximation
WILCOXON_ARE = 3 / math.pi  # the signed-rank test's efficiency relative to the t test on normal data (Hodges-Lehmann)


@dataclass(frozen=True)
class Interval:
    """The geometric-mean ratio of the rounds and its bootstrap percentile interval."""

    ratio: float
    low: float
    high: float
    rounds: int


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _check(ratios: list[float]) -> None:
    if not ratios or any(not (r > 0 and math.isfinite(r)) for r in ratios):
        raise ValueError(f"ratios must be positive finite numbers: {ratios}")


def ratio_interval(ratios: list[float], confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
                   seed: int = SEED) -> Interval:
    """The geometric mean of the per-round ratios and its percentile bootstrap interval (resampling the rounds)."""
    _check(ratios)
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(logs) for _ in range(n)) / n for _ in range(resamples))
    tail = (1 - confidence) / 2
    low = means[max(0, math.floor(tail * resamples))]
    high = means[min(resamples - 1, math.ceil((1 - tail) * resamples) - 1)]
    return Interval(geometric_mean(ratios), math.exp(low), math.exp(high), n)


@dataclass(frozen=True)
class PairedTest:
    """The one-sided signed-rank test that the rounds' ratios lie beyond the bound (on the worse side of it)."""

    w_plus: float  # the sum of the ranks of the rounds on the better side of the bound (small: a regression)
    p: float  # P(W+ <= w_plus) with no regression beyond the bound (the rounds' signs as a coin toss)
    method: str  # "exact" or "normal"
    rounds: int  # rounds counted (a ratio exactly on the bound says nothing either way and is dropped)
    min_p: float  # the smallest p these rounds can give (all beyond the bound): 2^-rounds


def worse_differences(ratios: list[float], bound: float, direction: str) -> list[float]:
    """log(ratio) - log(bound) per round, signed so that a round worse than the bound is negative (for a metric
    better higher, a ratio below the bound; for one better lower, above it)."""
    _check(ratios)
    sign = 1.0 if direction == "higher" else -1.0
    return [sign * (math.log(r) - math.log(bound)) for r in ratios]


def _midranks(values: list[float]) -> list[float]:
    """Ranks 1..n of `values`, tied values sharing the mean of their ranks."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _null_counts(doubled_ranks: list[int]) -> list[int]:
    """How many of the 2^n sign assignments give each 2 x W+ = 0 .. sum (each rank positive or not)."""
    counts = [1] + [0] * sum(doubled_ranks)
    top = 0
    for weight in doubled_ranks:
        top += weight
        for total in range(top, weight - 1, -1):
            counts[total] += counts[total - weight]
    return counts


def signed_rank(ratios: list[float], bound: float, direction: str) -> PairedTest:
    """The one-sided Wilcoxon signed-rank test of the rounds' log(ratio) against log(bound): is the candidate worse
    than the bound allows, round by round? Small p: yes."""
    differences = [d for d in worse_differences(ratios, bound, direction) if d != 0]
    n = len(differences)
    if n == 0:
        return PairedTest(0.0, 1.0, "exact", 0, 1.0)
    ranks = _midranks([abs(d) for d in differences])
    w_plus = sum(r for r, d in zip(ranks, differences, strict=True) if d > 0)
    min_p = 0.5 ** n
    if n <= EXACT_MAX:
        counts = _null_counts([round(2 * r) for r in ranks])
        below = sum(counts[: round(2 * w_plus) + 1])
        return PairedTest(w_plus, min(1.0, below / 2 ** n), "exact", n, min_p)
    mean = n * (n + 1) / 4
    ties = sum(c ** 3 - c for c in (ranks.count(r) for r in set(ranks)))
    sigma = math.sqrt(n * (n + 1) * (2 * n + 1) / 24 - ties / 48)
    z = (w_plus - mean + 0.5) / sigma if sigma > 0 else 0.0
    return PairedTest(w_plus, min(1.0, NormalDist().cdf(z)), "normal", n, min_p)


def rounds_for_min_p(alpha: float) -> int:
    """The fewest rounds whose signed-rank test can give p < alpha (every round beyond the bound: p = 2^-n)."""
    return math.floor(math.log2(1 / alpha)) + 1


def rounds_to_confirm(ratios: list[float], bound: float, direction: str, alpha: float) -> int:
    """About how many more rounds would let the signed-rank test confirm a regression the interval shows: the
    usual sample size of a one-sided test at `alpha` with the rounds' own effect (mean over standard deviation of
    the differences), divided by the test's efficiency (WILCOXON_ARE), and never fewer than the rounds any p < alpha
    needs. At least 1."""
    differences = worse_differences(ratios, bound, direction)
    n = len(differences)
    floor = rounds_for_min_p(alpha) - n
    spread = stdev(differences) if n > 1 else 0.0
    centre = fmean(differences)
    if spread == 0 or centre >= 0:
        return max(1, floor)
    needed = math.ceil((NormalDist().inv_cdf(1 - alpha) * spread / centre) ** 2 / WILCOXON_ARE)
    return max(1, floor, needed - n)


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
