"""The A/B statistics and verdict: a known shift is found, equal images are not flagged, noise is NOT PROVEN with a
sensible number of rounds still needed, drift that hits both images alike hides no regression, and the hand-written
signed-rank test agrees with its definition."""

import math
import random
import shutil
from itertools import product
from pathlib import Path

import pytest

from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.ab import stats, verdict
from ngc_paddle.release.ab.metrics import IMAGE_SIZE, Metric

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
    for bad in ([], [1.0, 0.0], [1.0, -1.0], [1.0, math.inf], [1.0, math.nan]):
        with pytest.raises(ValueError, match="ratios must be positive finite numbers"):
            stats.ratio_interval(bad)


def test_the_interval_is_the_bootstrap_percentiles_at_the_asked_level() -> None:
    """Two rounds, 0.8 and 1.25: a resample's geometric mean is 0.8 (a quarter of them), 1.0 (half) or 1.25. A 95 %
    interval (2.5 % tails) and a 60 % one (20 % tails) reach both ends; a 40 % one (30 % tails) holds the middle."""
    for confidence in (stats.CONFIDENCE, 0.6):
        interval = stats.ratio_interval([0.8, 1.25], confidence)
        assert (interval.low, interval.ratio, interval.high, interval.rounds) == pytest.approx((0.8, 1.0, 1.25, 2))
    narrow = stats.ratio_interval([0.8, 1.25], 0.4)
    assert (narrow.low, narrow.high) == pytest.approx((1.0, 1.0))
    assert stats.CONFIDENCE == 0.95  # the level report.py's tables state ("95 % CI")


@pytest.mark.parametrize("seed", range(5))
def test_a_planted_2x_slowdown_fails(seed: int) -> None:
    judged = verdict.judge(THROUGHPUT, rounds(0.5, 0.05, 5, seed), threshold_pct=5)
    assert judged.status == "FAIL", judged.reason
    assert judged.high < 0.95 and "paired signed-rank test" in judged.reason and judged.test_p < 0.05


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


def test_too_few_rounds_are_not_proven_and_a_fail_needs_five_rounds_beyond_the_bound() -> None:
    two = verdict.judge(THROUGHPUT, [(5.0, 10.0), (5.1, 10.0)], threshold_pct=5)
    assert two.status == "NOT PROVEN" and "too few rounds" in two.reason and two.more_rounds == 1
    halved = [(5.0, 10.0), (5.1, 10.2), (4.9, 9.9), (5.0, 10.1), (5.2, 10.0)]
    assert verdict.FAIL_MIN_ROUNDS == 5
    for n in (3, 4):  # the paired test's smallest p is 2^-n: 0.125, 0.0625, neither below 0.05
        early = verdict.judge(THROUGHPUT, halved[:n], threshold_pct=5)
        assert early.status == "NOT PROVEN" and f"a FAIL needs 5 rounds (the paired test's smallest p with {n}" \
            in early.reason, early.reason
        assert early.more_rounds == 5 - n and f"about {5 - n} more round" in early.reason
    five = verdict.judge(THROUGHPUT, halved, threshold_pct=5)
    assert five.status == "FAIL" and "paired signed-rank test of the rounds' ratios p=0.031" in five.reason
    assert five.test_p == 1 / 32


def test_a_regression_the_paired_test_does_not_confirm_is_not_proven_with_the_rounds_needed() -> None:
    # 6 rounds: the mean is beyond the bound, but two rounds sit well on the better side of it
    ratios = [0.70, 0.72, 0.75, 0.71, 0.97, 0.99]
    judged = verdict.judge(THROUGHPUT, [(r * 10, 10.0) for r in ratios], threshold_pct=5)
    assert judged.high < 0.95, judged
    assert judged.status == "NOT PROVEN" and "does not confirm it (p=" in judged.reason
    assert judged.test_p >= 0.05 and judged.more_rounds and judged.more_rounds >= 1
    assert f"about {judged.more_rounds} more round" in judged.reason
    # and the estimate is sensible: that many more rounds of the same kind confirm it
    longer = ratios * (1 + math.ceil(judged.more_rounds / len(ratios)))
    assert verdict.judge(THROUGHPUT, [(r * 10, 10.0) for r in longer], threshold_pct=5).status == "FAIL"


def test_drift_that_hits_both_images_alike_does_not_hide_a_real_regression() -> None:
    # the node's speed swings 6x across the rounds (both images alike); the candidate is 20 % slower in each round
    rng = random.Random(11)
    speeds = [10.0, 30.0, 5.0, 60.0, 12.0, 45.0, 8.0, 25.0]
    pairs = [(s * 0.8 * math.exp(rng.gauss(0, 0.03)), s * math.exp(rng.gauss(0, 0.03))) for s in speeds]
    candidate, reference = sorted(c for c, _ in pairs), sorted(r for _, r in pairs)
    assert candidate[-1] > reference[len(reference) // 2]  # the raw samples overlap: unpaired, they look alike
    judged = verdict.judge(THROUGHPUT, pairs, threshold_pct=5)
    assert judged.status == "FAIL", judged.reason
    assert 0.75 < judged.ratio < 0.85 and judged.test_p < 0.01


@pytest.mark.parametrize("noise", [0.02, 0.06])
def test_equal_images_are_never_failed_over_many_seeds(noise: float) -> None:
    statuses = [verdict.judge(THROUGHPUT, rounds(1.0, noise, 8, seed), threshold_pct=5).status for seed in range(150)]
    assert "FAIL" not in statuses
    assert statuses.count("PASS") >= (140 if noise < 0.05 else 40), statuses  # quiet rounds decide: PASS


def test_the_image_size_is_reported_not_gated() -> None:
    size = Metric(IMAGE_SIZE, "image size", "bytes", "lower")
    judged = verdict.judge(size, [(3.0e9, 2.0e9)], threshold_pct=5)
    assert judged.status == "INFO" and "month-over-month" in judged.reason and judged.test_p is None
    assert verdict.overall([judged]) == ("NOT PROVEN", ["no metric was measured by both images in the same rounds"])


def _exact_p(differences: list[float]) -> float:
    """P(W+ <= observed) by enumerating every assignment of signs to the |differences| (the definition)."""
    ranks = stats._midranks([abs(d) for d in differences])
    observed = sum(r for r, d in zip(ranks, differences, strict=True) if d > 0)
    totals = [sum(r for r, positive in zip(ranks, signs, strict=True) if positive)
              for signs in product((False, True), repeat=len(ranks))]
    return sum(t <= observed + 1e-9 for t in totals) / len(totals)


@pytest.mark.parametrize("ratios", [[0.9, 0.8, 0.85, 0.97], [0.9, 1.02, 0.7, 0.93, 0.96, 0.88],
                                    [0.9, 0.9, 1.0, 1.0, 0.8, 0.85, 1.1],  # ties among |log(r) - log(bound)|
                                    [0.5, 0.6, 0.55, 0.52, 0.58]])
def test_the_exact_signed_rank_test_matches_its_definition(ratios: list[float]) -> None:
    bound = 0.95
    test = stats.signed_rank(ratios, bound, "higher")
    differences = [math.log(r) - math.log(bound) for r in ratios]
    assert test.method == "exact" and math.isclose(test.p, _exact_p(differences))
    assert test.min_p == 0.5 ** len(ratios)
    # a time metric (better lower) is the mirror image: the same test on 1/ratio against 1/bound
    mirrored = stats.signed_rank([1 / r for r in ratios], 1 / bound, "lower")
    assert math.isclose(mirrored.p, test.p) and mirrored.w_plus == test.w_plus


def test_the_normal_signed_rank_test_is_close_to_the_exact_one() -> None:
    rng = random.Random(5)
    ratios = [0.9 * math.exp(rng.gauss(0, 0.08)) for _ in range(stats.EXACT_MAX)]
    exact = stats.signed_rank(ratios, 0.95, "higher")
    normal = stats.signed_rank(ratios * 2, 0.95, "higher")  # 2 x EXACT_MAX rounds: approximated
    assert exact.method == "exact" and normal.method == "normal"
    assert exact.p < 0.05 and normal.p < exact.p  # the same rounds twice: stronger evidence
    on_bound = stats.signed_rank([0.95, 0.95], 0.95, "higher")
    assert on_bound.rounds == 0 and on_bound.p == 1.0  # rounds on the bound say nothing either way


def test_worse_differences_are_log_distances_to_the_bound_signed_worse_negative() -> None:
    assert stats.worse_differences([0.9, 1.1], 1.0, "higher") == pytest.approx([math.log(0.9), math.log(1.1)])
    assert stats.worse_differences([0.9, 1.1], 1.0, "lower") == pytest.approx([-math.log(0.9), -math.log(1.1)])
    assert stats._midranks([1.0, 2.0, 2.0]) == [1.0, 2.5, 2.5] and stats._midranks([3.0, 1.0]) == [2.0, 1.0]


@pytest.mark.parametrize(("differences", "more"), [
    # z(0.95) = 1.6449; 6 rounds alternating -0.3 and 0.1: mean -0.1, sd 0.2191, (1.6449 x 0.2191 / 0.1)^2 / (3/pi)
    # = 13.6, so 14 rounds in all: 8 more (the 5 any p < 0.05 needs are already there)
    ([-0.3, 0.1] * 3, 8),
    ([0.1, -0.5], 11),  # mean -0.2, sd 0.4243: 12.7 -> 13 rounds, 11 more
    ([-0.05, -0.05], 3),  # no spread: only the 5 rounds any p < 0.05 needs, 3 more
    ([-0.69], 4),  # one round: no spread to scale by, 4 more to reach 5
    ([0.1, 0.2], 3), ([math.log(2.0), math.log(0.5)], 3),  # no regression on average (mean >= 0, here exactly
    # 0): only the 5 rounds' floor
    ([-0.2] * 6, 1),  # enough rounds and no spread: at least one more
])
def test_rounds_to_confirm_is_the_one_sided_sample_size_over_the_tests_efficiency(differences: list[float],
                                                                                   more: int) -> None:
    ratios = [math.exp(d) for d in differences]
    assert stats.rounds_to_confirm(ratios, 1.0, "higher", 0.05) == more
    assert stats.rounds_to_confirm([1 / r for r in ratios], 1.0, "lower", 0.05) == more


def test_rounds_to_decide_scales_the_half_width_facing_the_bound() -> None:
    """Ratio e^-0.1 in [e^-0.3, e^0.05] after 4 rounds. A bound above it (e^-0.05) faces the upper half-width 0.15:
    4 x (0.15 / 0.05)^2 = 36 rounds, 32 more; a bound below it (e^-0.15) faces the lower one, 0.2: 64, 60 more. A
    narrow interval already off the bound needs at least one more round."""
    interval = stats.Interval(math.exp(-0.1), math.exp(-0.3), math.exp(0.05), 4)
    assert stats.rounds_to_decide(interval, math.exp(-0.05)) == 32
    assert stats.rounds_to_decide(interval, math.exp(-0.15)) == 60
    narrow = stats.Interval(math.exp(-0.1), math.exp(-0.12), math.exp(-0.08), 4)
    assert stats.rounds_to_decide(narrow, math.exp(-0.05)) == 1


def test_the_ab_threshold_is_gates_yamls_max_regression_pct(tmp_path: Path) -> None:
    """Read through the benchmarks' own loader from the repository it is given: the committed file's 5 %, and
    another tree's own value."""
    repo = Path(__file__).resolve().parents[2]
    assert verdict.max_regression_pct(repo) == 5.0
    (tmp_path / "benchmarks" / "harness").mkdir(parents=True)
    shutil.copy(repo / "benchmarks" / "harness" / "gates_file.py", tmp_path / "benchmarks" / "harness")
    text = (repo / "benchmarks" / "gates.yaml").read_text().replace("max_regression_pct: 5\n",
                                                                      "max_regression_pct: 7.5\n")
    (tmp_path / "benchmarks" / "gates.yaml").write_text(text)
    assert verdict.max_regression_pct(tmp_path) == 7.5
    (tmp_path / "benchmarks" / "harness" / "gates_file.py").unlink()  # a tree without the loader: one line, exit 2
    with pytest.raises(NgcPaddleError, match=r"gates_file.py: \(file\): cannot be loaded; fix: restore it"):
        verdict.max_regression_pct(tmp_path)


def test_the_signed_rank_test_of_no_round_or_one() -> None:
    """Rounds exactly on the bound say nothing: no rounds counted, p = 1. One round beyond it: W+ = 0, which half of
    the two sign assignments reach, so p = 0.5 = the smallest p one round can give."""
    assert stats.signed_rank([1.0, 1.0], 1.0, "higher") == stats.PairedTest(0.0, 1.0, "exact", 0, 1.0)
    assert stats.signed_rank([0.5], 1.0, "higher") == stats.PairedTest(0.0, 0.5, "exact", 1, 0.5)


def test_beyond_60_rounds_the_signed_rank_p_is_the_normal_approximation() -> None:
    """64 rounds: W+ has mean 64 x 65 / 4 = 1040 and sd sqrt(64 x 65 x 129 / 24) = 149.5 under no regression. All
    rounds worse: W+ = 0, z = (0 - 1040 + 0.5) / 149.5 = -6.95, p = 1.8e-12. Rounds alternately worse and better by
    1..64 (the better ones the even ranks): W+ = 2 + 4 + ... + 64 = 1056, z = 0.110, p = 0.544."""
    worse = stats.signed_rank([math.exp(-0.01 * i) for i in range(1, 65)], 1.0, "higher")
    assert (worse.method, worse.rounds, worse.w_plus) == ("normal", 64, 0.0)
    assert worse.p == pytest.approx(1.805e-12, rel=1e-3) and worse.min_p == 0.5 ** 64
    mixed = stats.signed_rank([math.exp(0.01 * i * (1 if i % 2 == 0 else -1)) for i in range(1, 65)], 1.0, "higher")
    assert (mixed.method, mixed.w_plus) == ("normal", 1056.0) and mixed.p == pytest.approx(0.5439, abs=1e-4)


def test_tied_rounds_narrow_the_normal_approximation_by_the_tie_correction() -> None:
    """64 rounds all a factor 2 off the bound, 48 worse and 16 better: every |difference| ties at rank 32.5, W+ = 16 x
    32.5 = 520 and the variance loses (64^3 - 64) / 48 = 5460 of its 22360: sd 130, z = (520 - 1040 + 0.5) / 130
    = -3.996, p = 3.219e-5."""
    ratios = [0.5] * 48 + [2.0] * 16  # |log 0.5| == |log 2| exactly
    tied = stats.signed_rank(ratios, 1.0, "higher")
    assert (tied.method, tied.w_plus) == ("normal", 520.0) and tied.p == pytest.approx(3.218995e-05, rel=1e-5)


def test_a_metric_only_one_image_produced_in_a_round_is_named_with_the_side_that_lacks_it() -> None:
    """Missing pairs are named (never gated): which metric, which image has none, in which measured round; a metric
    both images have is no gap, and the warm-up round is not read."""
    from ngc_paddle.release.ab.metrics import Metric
    from ngc_paddle.release.ab.rounds import Rounds

    ips = Metric("bench-rn50:train.fp32.ips", "bench-rn50 train fp32 img/s", "img/s", "higher")
    p50 = Metric("bench-rn50:infer.p50", "bench-rn50 infer p50", "ms", "lower")
    amp = Metric("bench-rn50:train.amp.ips", "bench-rn50 train amp img/s", "img/s", "higher")
    found = Rounds("done", samples={
        0: {"candidate": {amp: 1.0}, "reference": {}},  # warm-up: not measured
        1: {"candidate": {ips: 10.0, p50: 5.0}, "reference": {ips: 10.0}},
        2: {"reference": {ips: 9.0, amp: 3.0}},
        3: {"candidate": {ips: 11.0}},
    })
    assert found.missing() == [
        "bench-rn50 infer p50 (reference has none in round 01)",
        "bench-rn50 train amp img/s (candidate has none in round 02)",
        "bench-rn50 train fp32 img/s (candidate has none in round 02)",
        "bench-rn50 train fp32 img/s (reference has none in round 03)",
    ]


@pytest.mark.parametrize("gpus, hardware", [(0, "cpu"), (2, "gpu")])
def test_bench_compare_job_runs_the_rounds_alone_on_this_host(tmp_path, gpus: int, hardware: str) -> None:
    """bench-compare's job: no validation gate and no absolute runs, only the A/B rounds of the named benchmarks,
    on this host's platform, the candidate's environment passed on, nothing pulled unless asked."""
    from ngc_paddle.platforms import host_or_default
    from ngc_paddle.release.ab import plan

    spec = plan.compare_job("cand", "ref", tmp_path, ("bench-rn50", "bench-hgnet"), 7, True, gpus, True, warmup=2,
                            candidate_env=("A=1",))
    assert (spec.flavor, spec.profile, spec.hardware, spec.image, spec.folder, spec.gpus) == \
        ("compare", "this-host", hardware, "cand", tmp_path, gpus)
    assert (spec.validate, spec.pull, spec.benches, spec.platform, spec.candidate_env) == \
        (False, False, (), host_or_default(), ("A=1",))
    assert (spec.reference, spec.ab_rounds, spec.ab_warmup, spec.ab_validate_args) == \
        ("ref", 7, 2, plan.VALIDATE_FAST)
    assert [command for command, _args in spec.ab_benches] == ["bench-rn50", "bench-hgnet"]
    assert plan.compare_job("c", "r", tmp_path, ("bench-rn50",), 5, True, 0, False, pull=True).pull
    assert plan.compare_job("c", "r", tmp_path, ("bench-rn50",), 5, True, 0, False).ab_validate_args is None
