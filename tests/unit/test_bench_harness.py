"""The benchmark harness's arithmetic and gates, on the host (no Paddle needed)."""

import itertools

import pytest
import yaml

from benchmarks.harness import gates
from benchmarks.harness.timing import StepTimer, Timing, percentile


def test_percentile_matches_linear_interpolation() -> None:
    values = [10.0, 20.0, 30.0, 40.0, 50.0]
    assert percentile(values, 50) == 30.0
    assert percentile(values, 90) == pytest.approx(46.0)
    assert percentile(values, 99) == pytest.approx(49.6)
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)


def test_step_timer_excludes_warmup_and_computes_throughput() -> None:
    # A fake clock: each step takes 0.5 s during warm-up, then 0.1, 0.2, 0.3, 0.2 s.
    durations = iter([0.5, 0.5, 0.1, 0.2, 0.3, 0.2])
    ticks = itertools.accumulate(x for d in durations for x in (0.0, d))
    clock = iter(ticks).__next__
    calls = []
    timing = StepTimer(warmup=2, steps=4, batch=32, clock=clock).run(lambda i: calls.append(i))
    assert calls == [0, 1, 2, 3, 4, 5]
    assert timing.durations == pytest.approx([0.1, 0.2, 0.3, 0.2])
    assert timing.throughput == pytest.approx(32 / 0.2)  # batch / mean step time
    lat = timing.latency_ms()
    assert lat["mean"] == pytest.approx(200.0) and lat["p50"] == pytest.approx(200.0)
    assert lat["p99"] == pytest.approx(297.0)


def test_step_timer_syncs_inside_the_timed_region() -> None:
    order = []
    StepTimer(0, 2, 1, sync=lambda: order.append("sync")).run(lambda i: order.append(f"step{i}"))
    assert order == ["step0", "sync", "step1", "sync"]


def test_timing_summary_fields() -> None:
    summary = Timing(8, [0.5, 0.5]).summary()
    assert summary["ips"] == 16.0 and summary["steps"] == 2 and set(summary["latency_ms"]) == {
        "mean", "p50", "p90", "p95", "p99"}


GATES = yaml.safe_load("""
max_regression_pct: 5
profiles: [{name: A100-80GB, match: "A100.*80GB"}, {name: V100, match: V100}]
models:
  m:
    A100-80GB:
      - {name: amp, metric: train.amp.ips, min: 100, when: {batch_size: 256}, source: ref}
      - {name: lat, metric: infer.trt.fp16.bs1.latency_ms.mean, max: 1.0}
    relative:
      - {name: finite, metric: train.summary.loss_finite, min: 1}
""")


def test_profile_detection() -> None:
    assert gates.detect_profile(GATES, []) == "cpu"
    assert gates.detect_profile(GATES, ["NVIDIA A100-SXM4-80GB"]) == "A100-80GB"
    assert gates.detect_profile(GATES, ["Tesla V100-SXM2-16GB"]) == "V100"
    assert gates.detect_profile(GATES, ["NVIDIA L4"]) is None


def test_gates_pass_fail_and_not_run() -> None:
    results = {"train": {"amp": {"ips": 120.0}, "summary": {"loss_finite": 1}},
               "infer": {"trt": {"fp16": {"bs1": {"latency_ms": {"mean": 1.2}}}}}}
    verdicts = {v.gate: v for v in gates.evaluate(GATES, "m", "A100-80GB", results, {"batch_size": 256})}
    assert verdicts["amp"].status == "PASS" and verdicts["amp"].threshold == 100
    assert verdicts["lat"].status == "FAIL" and verdicts["lat"].op == "<="
    assert verdicts["finite"].status == "PASS" and verdicts["finite"].profile == "relative"
    other = {v.gate: v for v in gates.evaluate(GATES, "m", "A100-80GB", results, {"batch_size": 64})}
    assert other["amp"].status == "NOT RUN" and "batch_size=64 (gate: 256)" in other["amp"].reason


def test_unknown_hardware_gets_relative_gates_only() -> None:
    verdicts = gates.evaluate(GATES, "m", None, {"train": {"summary": {"loss_finite": 0}}}, {})
    assert [(v.gate, v.status) for v in verdicts] == [("finite", "FAIL")]
    assert verdicts[0].profile.startswith("relative (no profile")


def test_regression_against_a_previous_result() -> None:
    now = {"train": {"amp": {"ips": 94.0}}, "infer": {"x": {"fp32": {"bs1": {"latency_ms": {"mean": 1.04}}}}}}
    before = {"results": {"train": {"amp": {"ips": 100.0}},
                          "infer": {"x": {"fp32": {"bs1": {"latency_ms": {"mean": 1.0}}}}}}}
    verdicts = {v.metric: v for v in gates.regressions(now, before, 5)}
    assert verdicts["train.amp.ips"].status == "FAIL"  # 6 % slower
    assert verdicts["infer.x.fp32.bs1.latency_ms.mean"].status == "PASS"  # 4 % slower, within 5 %


def test_committed_gates_file_is_consistent() -> None:
    table = gates.load()
    names = {p["name"] for p in table["profiles"]}
    for model, profiles in table["models"].items():
        for profile, entries in profiles.items():
            assert profile in names | {"cpu", "relative"}, (model, profile)
            for gate in entries:
                assert ("min" in gate) != ("max" in gate), gate
                assert gate["metric"].split(".")[0] in ("train", "infer", "eval"), gate
                assert gate.get("source"), f"gate {gate['name']} must state where its threshold comes from"
