"""The A/B statistics and verdict: a known shift is found, equal images are not flagged, noise is NOT PROVEN with a
sensible number of rounds still needed, and the hand-written U test agrees with its exact definition."""

import math
import random
from itertools import combinations

import pytest

from ngc_paddle.release.ab import stats, verdict
from ngc_paddle.release.ab.metrics import Metric

THROUGHPUT = Metric("bench-rn50:train.fp32.ips", "bench-rn50 train fp32 img/s", "img/s", "higher")
LATENCY = Metric("bench-rn50:infer.paddle-inference.fp32.bs1.latency_ms.p50", "latency", "ms", "lower")


def rounds(ratio: float, noise: float, n: int, seed: int, base: float = 10.0) -> list[tuple[float, float]]:
    """n rounds of (candidate, reference): the node drifts (both alike), each run has its own noise."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        drift = base * (1 + 0.2 * math.sin(i))  # the node slows and speeds up: both images alike
        pairs.append((drift * ratio * math.exp(rng.gauss(0, noise)), drift * math.exp(rng.gauss(0, noise))))
    return pairs


def test_the_interval_holds_the_ratio_and_is_reproducible() -> None:
    ratios = [0.5, 0.52, 0.49, 0.51, 0.5]
    interval = stats.ratio_interval(ratios)
    assert interval.low <= interval.ratio <= interval.high
    assert interval.low >= 0.49 and interval.high <= 0.52
    assert stats.ratio_interval(ratios) == interval  # fixed seed: the same rounds, the same interval
    with pytest.raises(ValueError):
        stats.ratio_interval([1.0, 0.0])


@pytest.mark.parametrize("seed", range(5))
def test_a_planted_2x_slowdown_fails(seed: int) -> None:
    judged = verdict.judge(THROUGHPUT, rounds(0.5, 0.05, 5, seed), threshold_pct=5)
    assert judged.status == "FAIL", judged.reason
    assert judged.high < 0.95 and "U test p=" in judged.reason and judged.u_p < 0.05


def test_a_2x_latency_growth_fails_and_a_faster_candidate_passes() -> None:
    slower = verdict.judge(LATENCY, [(2 * r, r) for _, r in rounds(1.0, 0.03, 5, 1)], threshold_pct=5)
    assert slower.status == "FAIL" and slower.low > 1.05
    faster = verdict.judge(THROUGHPUT, rounds(1.3, 0.03, 5, 2), threshold_pct=5)
    assert faster.status == "PASS"  # a speed-up is no regression


@pytest.mark.parametrize("seed", range(10))
def test_equal_images_are_not_flagged(seed: int) -> None:
    judged = verdict.judge(THROUGHPUT, rounds(1.0, 0.01, 5, seed), threshold_pct=5)
    assert judged.status == "PASS", judged.reason
    assert judged.low >= 0.95 and "within 5 %" in judged.reason


def test_noise_is_not_proven_with_the_rounds_that_would_decide() -> None:
    judged = verdict.judge(THROUGHPUT, rounds(1.0, 0.15, 4, 3), threshold_pct=5)
    assert judged.status == "NOT PROVEN"
    assert judged.reason.startswith("noise too high: 4 rounds, CI [") and "straddles 0.950" in judged.reason
    assert judged.more_rounds and f"about {judged.more_rounds} more rounds would decide" in judged.reason


def test_rounds_to_decide_scales_as_one_over_sqrt_n() -> None:
    # half-width 0.1 (in log units) at 4 rounds, 0.05 away from the bound: 4 x (0.1/0.05)^2 = 16 rounds, 12 more
    interval = stats.Interval(ratio=1.0, low=math.exp(-0.1), high=math.exp(0.1), rounds=4)
    assert stats.rounds_to_decide(interval, math.exp(-0.05)) == 12
    assert stats.rounds_to_decide(interval, 1.0) is None  # on the bound: no number of rounds decides
    # and the estimate is sensible: with that many rounds of the same noise the verdict is decided
    pairs = rounds(0.97, 0.08, 4, 7)
    first = verdict.judge(THROUGHPUT, pairs, threshold_pct=10)
    if first.status == "NOT PROVEN" and first.more_rounds:
        decided = [verdict.judge(THROUGHPUT, rounds(0.97, 0.08, 4 + 2 * first.more_rounds, s), 10).status
                   for s in range(5)]
        assert decided.count("NOT PROVEN") <= 2, decided


def test_too_few_rounds_are_not_proven_and_a_fail_needs_the_u_test() -> None:
    two = verdict.judge(THROUGHPUT, [(5.0, 10.0), (5.1, 10.0)], threshold_pct=5)
    assert two.status == "NOT PROVEN" and "too few rounds" in two.reason
    three = verdict.judge(THROUGHPUT, [(5.0, 10.0), (5.1, 10.2), (4.9, 9.9)], threshold_pct=5)
    assert three.status == "NOT PROVEN" and "too few rounds for the U test" in three.reason
    four = verdict.judge(THROUGHPUT, [(5.0, 10.0), (5.1, 10.2), (4.9, 9.9), (5.0, 10.1)], threshold_pct=5)
    assert four.status == "FAIL" and "U test p=0.029" in four.reason


def test_a_shift_the_u_test_does_not_see_is_not_proven() -> None:
    # per-round ratios all below the bound, but the node's drift mixes the raw samples: the U test disagrees
    pairs = [(9.0, 10.0), (18.0, 20.0), (4.5, 5.0), (13.5, 15.0), (27.0, 30.0)]
    judged = verdict.judge(THROUGHPUT, pairs, threshold_pct=5)
    assert judged.status == "NOT PROVEN" and "U test does not confirm" in judged.reason


def _exact_p(first: list[float], second: list[float]) -> float:
    """The two-sided p-value by enumerating every split of the pooled values (the definition)."""
    pooled = [*first, *second]
    def u_of(a, b):
        return sum(x > y for x in a for y in b)
    observed = u_of(first, second)
    splits = [set(c) for c in combinations(range(len(pooled)), len(first))]
    us = [u_of([pooled[i] for i in s], [pooled[i] for i in range(len(pooled)) if i not in s]) for s in splits]
    low = sum(u <= observed for u in us) / len(us)
    high = sum(u >= observed for u in us) / len(us)
    return min(1.0, 2 * min(low, high))


@pytest.mark.parametrize(("first", "second"), [([1, 2, 3], [4, 5, 6]), ([1, 5, 9, 2], [3, 4, 8]),
                                               ([10.5, 3.2, 7.7, 1.1, 6.0], [2.2, 9.9, 4.4, 8.8])])
def test_the_exact_u_test_matches_its_definition(first: list[float], second: list[float]) -> None:
    test = stats.mann_whitney(first, second)
    assert test.method == "exact" and math.isclose(test.p, _exact_p(first, second))
    assert test.min_p == 2 / math.comb(len(first) + len(second), len(first))


def test_the_normal_u_test_with_ties_is_close_to_the_exact_one() -> None:
    a, b = [float(x % 7) for x in range(30)], [float(x % 5) + 2 for x in range(30)]
    test = stats.mann_whitney(a, b)
    assert test.method == "normal" and 0 <= test.p <= 1
    assert stats.mann_whitney([1.0, 1.0], [1.0, 1.0]).p == 1.0
