"""The benchmark harness's arithmetic and gates, on the host (no Paddle needed)."""

import itertools

import pytest
import yaml

from benchmarks.harness import acceptance_gates
from benchmarks.harness.timing import StepTimer, Timing, percentile
from ngc_common.bench_result import is_efficiency
from ngc_common.errors import InputError


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
    timing = StepTimer(warmup=2, steps=4, batch=32, clock=clock, phase="train").run(lambda i: calls.append(i))
    assert calls == [0, 1, 2, 3, 4, 5]
    assert timing.durations == pytest.approx([0.1, 0.2, 0.3, 0.2])
    assert timing.throughput == pytest.approx(32 / 0.2)  # batch / mean step time
    lat = timing.latency_ms()
    assert lat["mean"] == pytest.approx(200.0) and lat["p50"] == pytest.approx(200.0)
    assert lat["p99"] == pytest.approx(297.0)


def test_step_timer_syncs_inside_the_timed_region() -> None:
    order = []
    StepTimer(0, 2, 1, sync=lambda: order.append("sync"), phase="train").run(lambda i: order.append(f"step{i}"))
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
    assert acceptance_gates.detect_profile(GATES, []) == "cpu"
    assert acceptance_gates.detect_profile(GATES, ["NVIDIA A100-SXM4-80GB"]) == "A100-80GB"
    assert acceptance_gates.detect_profile(GATES, ["Tesla V100-SXM2-16GB"]) == "V100"
    assert acceptance_gates.detect_profile(GATES, ["NVIDIA L4"]) is None


def test_gates_pass_fail_and_not_applicable() -> None:
    results = {"train": {"amp": {"ips": 120.0}, "summary": {"loss_finite": 1}},
               "infer": {"trt": {"fp16": {"bs1": {"latency_ms": {"mean": 1.2}}}}}}
    verdicts = {v.gate: v for v in acceptance_gates.evaluate(GATES, "m", "A100-80GB", results, {"batch_size": 256})}
    assert verdicts["amp"].status == "PASS" and verdicts["amp"].threshold == 100 and verdicts["amp"].acceptance
    assert verdicts["lat"].status == "FAIL" and verdicts["lat"].op == "<="
    assert verdicts["finite"].status == "PASS" and verdicts["finite"].profile == "relative"
    assert not verdicts["finite"].acceptance
    other = {v.gate: v for v in acceptance_gates.evaluate(GATES, "m", "A100-80GB", results, {"batch_size": 64})}
    assert other["amp"].status == "N/A" and "batch_size=64 (gate: 256)" in other["amp"].reason


def test_judge_gives_the_run_its_verdict_smoke_and_missing_gpu_included() -> None:
    results = {"train": {"amp": {"ips": 120.0}, "summary": {"loss_finite": 1}}}
    config = {"batch_size": 256, "smoke": False}
    verdicts, outcome = acceptance_gates.judge(GATES, "m", "A100-80GB", results, config, None, None, None, None)
    assert {v.gate for v in verdicts} == {"amp", "lat", "finite"} and outcome.verdict == "NOT PROVEN"  # lat not run
    slow = {**results, "infer": {"trt": {"fp16": {"bs1": {"latency_ms": {"mean": 1.2}}}}}}
    assert acceptance_gates.judge(GATES, "m", "A100-80GB", slow, config, None, None, None, None)[1].exit_code == 1
    ok = {**results, "infer": {"trt": {"fp16": {"bs1": {"latency_ms": {"mean": 0.5}}}}}}
    assert acceptance_gates.judge(GATES, "m", "A100-80GB", ok, config, None, None, None, None)[1].exit_code == 0
    # a GPU image run without its GPU: the profile's gates are not evaluated, and the run proves nothing
    verdicts, outcome = acceptance_gates.judge(GATES, "m", "A100-80GB", ok, config, None, None, None, "no GPU visible")
    assert all(v.profile == "relative" for v in verdicts)
    assert (outcome.verdict, outcome.reasons, outcome.exit_code) == ("NOT PROVEN", ["no GPU visible"], 3)
    # --smoke: gates are evaluated and written, but the run is a smoke (exit 0), whatever they say
    verdicts, outcome = acceptance_gates.judge(GATES, "m", "A100-80GB", results, {**config, "smoke": True}, None, None,
                                               None, None)
    assert any(v.status != "PASS" for v in verdicts) and (outcome.verdict, outcome.exit_code) == ("SMOKE", 0)


def test_a_gate_whose_back_end_did_not_run_is_not_run_with_its_reason() -> None:
    results = {"infer": {"trt": {"fp16": {"status": "not available", "reason": "Paddle-TRT needs a GPU"}}}}
    config = {"backends": ["trt"], "infer_precisions": ["fp16"], "batch_sizes": [1]}
    lat = next(v for v in acceptance_gates.evaluate(GATES, "m", "A100-80GB", results, config) if v.gate == "lat")
    assert lat.status == "NOT RUN" and "Paddle-TRT needs a GPU" in lat.reason
    asked_less = {**config, "backends": ["other"]}
    lat = next(v for v in acceptance_gates.evaluate(GATES, "m", "A100-80GB", results, asked_less) if v.gate == "lat")
    assert lat.status == "N/A" and "back end trt not asked for" in lat.reason


@pytest.mark.parametrize(("metric", "config", "reason"), [
    ("train.fp32.ips", {"mode": "infer"}, "train not run (--mode infer)"),
    ("train.amp.ips", {"mode": "all", "precisions": ["tf32"]}, "precision amp not asked for (--precision)"),
    ("train.amp", {"precisions": ["tf32"]}, "precision amp not asked for (--precision)"),
    ("train", {"mode": "all"}, None),
    ("data_parallel.amp.scaling_efficiency", {"mode": "infer"}, "train not run (--mode infer)"),
    ("data_parallel.amp.ips", {"precisions": ["fp32"]}, "precision amp not asked for (--precision)"),
    ("data_parallel.fp32.ips", {"mode": "train", "precisions": ["fp32"]}, None),
    ("infer.summary.trt_speedup", {"mode": "train"}, "infer not run (--mode train)"),
    ("infer.summary.trt_speedup", {"batch_sizes": [1, 4]}, "needs batch sizes 1 and 8 in the sweep (--batch-sizes)"),
    ("infer.summary.trt_speedup", {}, None),
    ("infer.summary.trt_speedup", {"batch_sizes": [8, 1, 64]}, None),
    ("infer.paddle-trt.int8.bs256.ips", {"backends": ["paddle-trt"], "infer_precisions": ["fp16"]},
     "inference precision int8 not asked for (--infer-precision)"),
    ("infer.paddle-trt.fp16.bs256.ips", {"backends": ["paddle-trt"], "infer_precisions": ["fp16"],
                                         "batch_sizes": [1, 8]}, "batch size 256 not in the sweep (--batch-sizes)"),
    ("infer.agreement.tensorrt", {"backends": ["paddle-inference"]}, "back end tensorrt not asked for (--backends)"),
    ("infer.paddle-trt.int8.bs256", {"backends": ["paddle-trt"], "infer_precisions": ["fp16"]},
     "inference precision int8 not asked for (--infer-precision)"),
    ("infer.paddle-trt.fp16", {"backends": ["paddle-trt"], "infer_precisions": ["fp16"]}, None),  # its status node
    ("infer.agreement.paddle-trt.max_abs_diff", {"backends": ["paddle-trt"], "infer_precisions": ["fp16"]}, None),
    ("infer.summary.bs8_over_bs1.paddle-trt", {"infer_precisions": ["fp16"]}, None),
    ("eval.top1", {}, "needs --eval-data DIR and --weights FILE"),
    ("eval.top1", {"eval": True}, None),
    ("train.fp32.efficiency", {"mode": "all", "precisions": ["fp32"]}, None),
    ("train.fp32.ips", {"precisions": ["fp32"], "backends": ["onnxruntime"]}, None),  # back ends are inference's
])
def test_what_a_run_did_not_ask_for(metric: str, config: dict, reason: str | None) -> None:
    """A data-parallel figure is the training's (its mode and precisions decide), the inference summary needs batch
    sizes 1 and 8 (the default sweep has them); each reason is the whole line the verdict carries."""
    assert acceptance_gates.not_requested(metric, config) == reason


def test_only_a_number_is_a_figure() -> None:
    results = {"train": {"summary": {"loss_finite": 1, "finite": True, "note": "x", "nested": {"a": 1}}}}
    assert acceptance_gates.lookup(results, "train.summary.loss_finite") == 1.0
    for metric in ("train.summary.finite", "train.summary.note", "train.summary.nested", "train.summary.gone"):
        assert acceptance_gates.lookup(results, metric) is None, metric


def test_the_profile_gates_the_relative_ones_and_the_regressions_all_count_once() -> None:
    """The relative table is never taken for a hardware profile's (its gates would count twice, as acceptance);
    a baseline adds regressions to the gates, at the gates file's max_regression_pct (5 % when it has none)."""
    results = {"train": {"amp": {"ips": 94.0}, "summary": {"loss_finite": 1}}}
    relative = acceptance_gates.evaluate(GATES, "m", "relative", results, {})
    assert [(v.gate, v.profile, v.acceptance) for v in relative] == [("finite", "relative", False)]
    assert acceptance_gates.evaluate({}, "m", "A100-80GB", results, {}) == []  # a gates file without models
    baseline = {"results": {"train": {"amp": {"ips": 100.0}}}}
    gated = acceptance_gates.evaluate(GATES, "m", "A100-80GB", results, {"batch_size": 256}, baseline)
    assert [(v.gate, v.status) for v in gated] == [("amp", "FAIL"), ("lat", "NOT RUN"), ("finite", "PASS"),
                                                   ("regression train.amp.ips", "FAIL")]
    assert gated[-1].threshold == pytest.approx(95.0)  # the file's 5 %
    loose = acceptance_gates.evaluate({**GATES, "max_regression_pct": 10}, "m", None, results, {}, baseline)
    assert [(v.gate, v.status, v.threshold) for v in loose][-1] == ("regression train.amp.ips", "PASS",
                                                                     pytest.approx(90.0))
    default = acceptance_gates.evaluate({k: v for k, v in GATES.items() if k != "max_regression_pct"}, "m", None,
                                        {"train": {"amp": {"ips": 95.5}}}, {}, baseline)
    assert [(v.status, v.threshold) for v in default][-1] == ("PASS", pytest.approx(95.0))
    assert acceptance_gates.evaluate(GATES, "m", None, results, {}, baseline, max_regression_pct=7)[-1].threshold \
        == pytest.approx(93.0)


def test_a_gates_verdict_carries_its_source_and_a_ceiling_is_met_on_the_mark() -> None:
    results = {"train": {"amp": {"ips": 120.0}},
               "infer": {"trt": {"fp16": {"bs1": {"latency_ms": {"mean": 1.0}}}}}}
    verdicts = {v.gate: v for v in acceptance_gates.evaluate(GATES, "m", "A100-80GB", results, {"batch_size": 256})}
    assert (verdicts["lat"].status, verdicts["lat"].source) == ("PASS", "")  # a latency exactly at its ceiling
    assert verdicts["amp"].source == "ref"
    both = {"when": {"batch_size": 256, "mode": "train"}}
    gate = {**GATES["models"]["m"]["A100-80GB"][0], **both}
    off = acceptance_gates.evaluate({"models": {"m": {"A100-80GB": [gate]}}}, "m", "A100-80GB", results,
                                    {"batch_size": 64})[0]
    assert off.reason == "run configuration differs: batch_size=64 (gate: 256), mode=None (gate: train)"


def test_a_pass_decides_even_where_the_cpu_has_no_floor_of_its_own() -> None:
    passed = acceptance_gates.Verdict("regression x", "x", "PASS", 1.0, 0.9, ">=", "baseline", acceptance=True)
    outcome = acceptance_gates.overall([passed], no_gate="no CPU floor for amd-zen4 yet")
    assert (outcome.verdict, outcome.reasons) == ("PASS", [])
    relative = acceptance_gates.Verdict("finite", "x", "PASS", 1.0, 1.0, ">=", "relative")
    assert acceptance_gates.overall([relative], no_gate="no CPU floor for amd-zen4 yet").reasons == [
        "no CPU floor for amd-zen4 yet"]


def test_unknown_hardware_gets_relative_gates_only_and_is_not_proven() -> None:
    verdicts = acceptance_gates.evaluate(GATES, "m", None, {"train": {"summary": {"loss_finite": 1}}}, {})
    assert [(v.gate, v.status, v.profile) for v in verdicts] == [("finite", "PASS", "relative")]
    outcome = acceptance_gates.overall(verdicts)
    assert outcome.verdict == "NOT PROVEN" and outcome.exit_code == 3
    assert "no acceptance gate applies" in outcome.reasons[0]


def test_overall_verdict_and_exit_codes() -> None:
    def verdict(status: str, acceptance: bool = True) -> acceptance_gates.Verdict:
        return acceptance_gates.Verdict("g", "m", status, 1.0, 2.0, ">=", "p", acceptance=acceptance, reason="why")

    assert acceptance_gates.overall([verdict("PASS"), verdict("N/A")]).exit_code == 0
    failed = acceptance_gates.overall([verdict("PASS"), verdict("FAIL", acceptance=False)])
    assert failed.verdict == "FAIL" and failed.exit_code == 1 and "g: 1 (needs >= 2)" in failed.reasons
    not_run = acceptance_gates.overall([verdict("PASS"), verdict("NOT RUN")])
    assert not_run.verdict == "NOT PROVEN" and not_run.reasons == ["g: not run: why"]
    assert acceptance_gates.overall([verdict("PASS", acceptance=False)]).verdict == "NOT PROVEN"
    no_gpu = acceptance_gates.overall([verdict("PASS")], ["no GPU visible"])
    assert no_gpu.verdict == "NOT PROVEN" and no_gpu.reasons == ["no GPU visible"]
    assert acceptance_gates.Outcome("SMOKE").exit_code == 0


def test_regression_against_a_previous_result() -> None:
    now = {"train": {"amp": {"ips": 94.0}}, "infer": {"x": {"fp32": {"bs1": {"latency_ms": {"mean": 1.04}}}}}}
    before = {"results": {"train": {"amp": {"ips": 100.0}},
                          "infer": {"x": {"fp32": {"bs1": {"latency_ms": {"mean": 1.0}}}}}}}
    verdicts = {v.metric: v for v in acceptance_gates.regressions(now, before, 5)}
    assert verdicts["train.amp.ips"].status == "FAIL"  # 6 % slower
    assert verdicts["infer.x.fp32.bs1.latency_ms.mean"].status == "PASS"  # 4 % slower, within 5 %
    assert all(v.acceptance for v in verdicts.values())


@pytest.mark.parametrize(("now", "status"), [(105.0, "PASS"), (106.0, "FAIL"), (95.0, "PASS"), (94.0, "FAIL")])
def test_a_regression_gate_sits_exactly_on_its_allowance_and_says_what_it_compared(now: float, status: str) -> None:
    """Throughput may fall by 5 % (95 passes, 94 fails) and mean or p99 latency rise by 5 % (105 passes, 106 fails);
    other latency figures (p50, a median) are not compared. Each verdict names the metric, the bound and its side."""
    latency = now > 100
    def figures(value: float, other: float) -> dict:
        if latency:
            return {"infer": {"x": {"fp32": {"bs1": {"latency_ms": {"mean": value, "p99": value, "p50": other}}}}}}
        return {"train": {"fp32": {"ips": value}}}
    verdicts = {v.metric: v for v in acceptance_gates.regressions(figures(now, 500.0), {"results": figures(100.0,
                                                                                                        1.0)}, 5)}
    keys = ["infer.x.fp32.bs1.latency_ms.mean", "infer.x.fp32.bs1.latency_ms.p99"] if latency else ["train.fp32.ips"]
    assert sorted(verdicts) == keys  # p50 rose 500x and is not a gate
    for key in keys:
        v = verdicts[key]
        assert (v.status, v.gate, v.measured, v.threshold, v.op) == (
            status, f"regression {key}", now, pytest.approx(105.0 if latency else 95.0), "<=" if latency else ">=")
        assert (v.profile, v.source) == ("baseline", "previous result 100, at most 5 % worse") and v.acceptance


def test_regression_needs_the_same_hardware_and_compares_efficiency_under_other_load() -> None:
    def result(ips: float, eff: float, peak: float, own: float | None = None) -> dict:
        own_figure = {} if own is None else {"efficiency_paddle": own}
        return {"train": {"fp32": {"ips": ips, "efficiency": eff, **own_figure}},
                "peak": {"float32": {"peak_flops": peak}}}

    baseline = {"environment": {"hardware": "Xeon, 2 threads"}, "results": result(10.0, 0.40, 200e9)}
    other = acceptance_gates.regressions(result(10.0, 0.40, 200e9), baseline, 5, "EPYC, 8 threads")
    assert [(v.status, v.acceptance) for v in other] == [("N/A", False)]  # informs; the profile's gates decide
    assert "the baseline ran on Xeon, 2 threads" in other[0].reason
    busy = {v.metric: v for v in acceptance_gates.regressions(result(5.0, 0.39, 100e9), baseline, 5, "Xeon, 2 threads")}
    assert busy["train.fp32.ips"].status == "N/A" and "probed peak 100.0 vs 200.0" in busy["train.fp32.ips"].reason
    assert busy["train.fp32.efficiency"].status == "PASS"
    slower = {v.metric: v
              for v in acceptance_gates.regressions(result(9.0, 0.30, 195e9), baseline, 5, "Xeon, 2 threads")}
    assert slower["train.fp32.ips"].status == "FAIL" and slower["train.fp32.efficiency"].status == "FAIL"


def test_under_other_load_a_figure_is_compared_against_the_kernels_it_runs_on() -> None:
    """CPU training measured busy: 0.40 of the hardware (whose 2-thread peak halved) but 0.41 of Paddle's kernels,
    as idle; a baseline taken idle (0.22 of the hardware) must neither pass a regression nor fail a healthy run
    on the hardware figure."""
    def result(eff: float, own: float, peak: float) -> dict:
        return {"train": {"fp32": {"ips": 9.0, "efficiency": eff, "efficiency_paddle": own}},
                "peak": {"float32": {"peak_flops": peak}}}

    idle = {"environment": {"hardware": "Xeon, 2 threads"}, "results": result(0.22, 0.41, 400e9)}
    healthy = {v.metric: v for v in acceptance_gates.regressions(result(0.40, 0.41, 190e9), idle, 5, "Xeon, 2 threads")}
    assert healthy["train.fp32.efficiency_paddle"].status == "PASS"
    hardware = healthy["train.fp32.efficiency"]
    assert hardware.status == "N/A" and "train.fp32.efficiency_paddle" in hardware.reason
    slowed = {v.metric: v for v in acceptance_gates.regressions(result(0.21, 0.20, 190e9), idle, 5, "Xeon, 2 threads")}
    assert slowed["train.fp32.efficiency_paddle"].status == "FAIL"
    same_load = {v.metric: v
                 for v in acceptance_gates.regressions(result(0.11, 0.20, 400e9), idle, 5, "Xeon, 2 threads")}
    assert same_load["train.fp32.efficiency"].status == "FAIL"  # under the same load both are compared


def test_datasheet_peak_per_precision() -> None:
    table = acceptance_gates.load()
    assert acceptance_gates.datasheet_tflops(table, "A100-80GB", "amp") == 312
    assert acceptance_gates.datasheet_tflops(table, "A100-80GB", "fp32") == 156  # fp32 math runs as TF32 there
    assert acceptance_gates.datasheet_tflops(table, "V100", "fp32") == 15.7
    assert acceptance_gates.datasheet_tflops(table, "cpu", "fp32") is None
    assert acceptance_gates.detect_profile(table, ["NVIDIA H100 80GB HBM3"]) == "H100-SXM"
    assert acceptance_gates.detect_profile(table, ["NVIDIA H100 PCIe"]) == "H100-PCIe"


def test_committed_gates_file_is_consistent() -> None:
    table = acceptance_gates.load()
    names = {p["name"] for p in table["profiles"]}
    for model, profiles in table["models"].items():
        for profile, entries in profiles.items():
            assert profile in names | {"cpu", "relative"}, (model, profile)
            for gate in entries:
                assert ("min" in gate) != ("max" in gate), gate
                assert gate["metric"].split(".")[0] in ("train", "infer", "eval", "data_parallel"), gate
                assert gate.get("source"), f"gate {gate['name']} must state where its threshold comes from"
            if profile == "cpu":  # no absolute CPU figure carries to another machine
                assert all(is_efficiency(g["metric"]) for g in entries), (model, entries)


def test_bad_numbers_are_one_line_errors_not_tracebacks(capsys) -> None:
    from benchmarks.harness.bench_cli import parser
    from benchmarks.rn50.spec import SPEC as spec

    for args in (["--warmup", "-1"], ["--steps", "0"], ["--threads", "two"], ["--batch-sizes", "1,x"]):
        with pytest.raises(SystemExit) as exit_info:
            parser(spec).parse_args(args)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("bench-rn50: error: argument"), err


def test_probes_interleave_with_the_measured_steps_in_slices() -> None:
    from benchmarks.harness.timing import StepTimer, interleave

    order: list[str] = []
    now = [0.0]

    def step(i: int) -> None:
        order.append(f"step {i}")
        now[0] += 1.0  # each step takes one (fake) second

    with interleave(lambda: order.append("probe"), slice_s=2.0):
        StepTimer(warmup=1, steps=5, batch=1, clock=lambda: now[0], phase="infer").run(step)
    # warm-up unprobed; then probe, 2 s slice, probe, 2 s slice, probe, the last 1 s, probe
    assert order == ["step 0", "probe", "step 1", "step 2", "probe", "step 3", "step 4", "probe", "step 5", "probe"]
    order.clear()
    StepTimer(warmup=0, steps=2, batch=1, clock=lambda: now[0], phase="infer").run(step)  # outside the block: no probe
    assert order == ["step 0", "step 1"]
    order.clear()
    with interleave(lambda: order.append("fp32"), 5.0), interleave(lambda: order.append("fp16"), 5.0):
        # one probe per dtype, each time
        StepTimer(warmup=0, steps=1, batch=1, clock=lambda: now[0], phase="infer").run(step)
    assert order == ["fp32", "fp16", "step 0", "fp32", "fp16"]


def test_a_phase_takes_the_median_probe_per_kind_and_the_fastest_kind_is_the_hardware(monkeypatch) -> None:
    from benchmarks.harness import roofline
    from benchmarks.harness.peaks import Peaks
    from benchmarks.harness.timing import StepTimer

    paddle_rates = iter([30e9, 10e9, 32e9])  # a burst of other work during the phase shows in one probe

    def fake_probe_all(device: str, dtype: str, repeats: int, threads: int) -> dict:
        return {"paddle": {"peak_flops": next(paddle_rates), "method": "m"},
                "blas": {"peak_flops": 300e9, "method": "numpy"},
                "cublas": {"status": "not available", "reason": "cuBLAS needs a GPU"}}

    monkeypatch.setattr(roofline, "probe_all", fake_probe_all)
    now = [0.0]

    def step(_i: int) -> None:
        now[0] += 3.0

    peaks = Peaks("cpu", world=2, repeats=1)
    with peaks.around("float32", "train fp32", lambda *a: None) as peak:
        StepTimer(0, 2, 1, clock=lambda: now[0], phase="infer").run(step)  # probe, step, probe, step, probe
        assert peak == {}  # filled only once the phase is over
    assert peak["peak_flops"] == 2 * 300e9 and peak["hardware_kind"] == "blas"  # x world size
    assert peak["kinds"] == {"paddle": 2 * 30e9, "blas": 2 * 300e9} and peak["probes"] == 3
    found = peaks.found["float32"]
    assert found["kind_peak_flops"] == {"paddle": 30e9, "blas": 300e9}
    assert found["kinds"]["cublas"] == "not available: cuBLAS needs a GPU"
    assert [p["kind"] for p in found["probes"]] == ["paddle", "blas", "cublas"] * 3


def test_the_runs_hardware_peak_is_the_fastest_of_each_kinds_lowest_phase(monkeypatch) -> None:
    """Two phases that disagree on the fastest kind (seen in CI: inference probes under load): the run's hardware
    peak is the highest of the per-kind lowest figures, a figure some kind reached, not the lower phase's best."""
    from benchmarks.harness import roofline
    from benchmarks.harness.peaks import Peaks

    phases = iter([{"paddle-inference": 250e9, "blas": 200e9}, {"paddle-inference": 240e9, "blas": 243e9}])
    monkeypatch.setattr(roofline, "probe_all", lambda *a: {k: {"peak_flops": v, "method": "m"}
                                                           for k, v in next(phases).items()})
    peaks = Peaks("cpu", world=1, repeats=1)
    for label in ("train fp32", "inference"):
        with peaks.around("float32", label, lambda *a: None, devices=1):
            pass  # no timed loop: one probe per phase
    found = peaks.found["float32"]
    assert found["kind_peak_flops"] == {"paddle-inference": 240e9, "blas": 200e9}
    assert found["peak_flops"] == max(found["kind_peak_flops"].values()) == 240e9


def _phase_with_probes(monkeypatch, rates: list[float]):
    """A CPU phase of one 3 s step whose paddle-inference probes read `rates` in turn (blas 100 GFLOP/s)."""
    from benchmarks.harness import roofline
    from benchmarks.harness.peaks import Peaks
    from benchmarks.harness.timing import StepTimer

    left = iter(rates)
    monkeypatch.setattr(roofline, "probe_all", lambda *a: {
        "paddle-inference": {"peak_flops": next(left), "method": "m"}, "blas": {"peak_flops": 100e9, "method": "n"}})
    now = [0.0]
    peaks = Peaks("cpu", world=1, repeats=1)
    with peaks.around("float32", "inference", lambda *a: None, devices=1) as peak:
        StepTimer(0, 1, 1, clock=lambda: now[0], phase="infer").run(lambda _i: now.__setitem__(0, now[0] + 3.0))
    return peaks, peak


def test_a_peak_the_work_outran_is_probed_again_and_the_higher_median_stands(monkeypatch) -> None:
    """Probes caught at a bad moment (150 GFLOP/s) under work at 176: the recheck reads 190, so the efficiency is
    176/190 instead of a probe failure; the recheck's probes are in the report, the phase's lowest figures kept."""
    from benchmarks.harness import efficiency

    peaks, peak = _phase_with_probes(monkeypatch, [150e9, 150e9, 190e9, 185e9, 195e9])
    logged = []
    assert peaks.recheck(peak, "float32", "inference", lambda *a: logged.append(a),
                         [(90e9, "paddle-inference"), (176e9, "paddle-inference")])
    assert peak["kinds"] == {"paddle-inference": 190e9, "blas": 100e9} and peak["hardware_kind"] == "paddle-inference"
    assert (peak["peak_flops"], peak["probes"], peak["rechecked"]) == (190e9, 5, 3)
    assert [p["phase"] for p in peaks.found["float32"]["probes"] if p["kind"] == "blas"] == \
        ["inference"] * 2 + ["inference, recheck"] * 3
    assert peaks.found["float32"]["kind_peak_flops"]["paddle-inference"] == 150e9
    assert [entry[0] for entry in logged][-1] == "peak recheck float32 (inference)"  # after its 3 probes
    result = efficiency.annotate({"ips": 176.0}, 1e9, peak, None, "paddle-inference")
    assert result["efficiency"] == pytest.approx(176 / 190) and "efficiency_failure" not in result


def test_a_recheck_never_lowers_a_peak_and_a_peak_still_beaten_stays_a_probe_failure(monkeypatch) -> None:
    from benchmarks.harness import efficiency

    peaks, peak = _phase_with_probes(monkeypatch, [150e9, 150e9, 120e9, 130e9, 125e9])
    assert peaks.recheck(peak, "float32", "inference", lambda *a: None, [(176e9, "paddle-inference")])
    assert peak["peak_flops"] == 150e9 and peak["rechecked"] == 3  # the recheck read lower: the phase's stands
    result = efficiency.annotate({"ips": 176.0}, 1e9, peak, None, "paddle-inference")
    assert "efficiency" not in result and "117 % of the hardware peak" in result["efficiency_failure"]
    assert "rechecked with 3 more probes" in result["efficiency_failure"] and result["peak_rechecked"] == 3


def test_no_recheck_when_the_work_stays_under_every_peak_it_is_measured_against(monkeypatch) -> None:
    """Work under the hardware peak and its own kind's: no probe. Work above a kind it is not measured against
    (ONNX Runtime has no own kind) is no reason either; above its own kind's peak it is."""
    from benchmarks.harness import peaks as peaks_module

    peaks, peak = _phase_with_probes(monkeypatch, [150e9, 150e9, 190e9, 190e9, 190e9])
    assert not peaks.recheck(peak, "float32", "inference", lambda *a: None, [(140e9, "paddle-inference")])
    assert not peaks.recheck({}, "float32", "inference", lambda *a: None, [(140e9, "paddle-inference")])
    assert peak["probes"] == 2 and "rechecked" not in peak
    low = {"peak_flops": 300e9, "kinds": {"paddle": 30e9, "blas": 300e9}}
    assert not peaks_module.outran(low, 60e9, [None]) and peaks_module.outran(low, 60e9, ["paddle"])
    assert peaks_module.outran(low, 301e9, [None])


def test_a_training_recheck_scales_by_the_phases_devices_and_adds_no_kind(monkeypatch) -> None:
    """Training on 4 ranks: the phase's peaks are x4, so the recheck's are too; a kind that failed in the phase's
    probes and works in the recheck gives no figure the phase never measured beside its work."""
    from benchmarks.harness import roofline
    from benchmarks.harness.peaks import Peaks

    probes = iter([{"paddle": {"peak_flops": 20e9, "method": "m"}, "blas": {"status": "failed", "reason": "x"}}]
                  + [{"paddle": {"peak_flops": 30e9, "method": "m"}, "blas": {"peak_flops": 90e9, "method": "n"}}] * 3)
    monkeypatch.setattr(roofline, "probe_all", lambda *a: next(probes))
    peaks = Peaks("cpu", world=4, repeats=1)
    with peaks.around("float32", "train fp32", lambda *a: None) as peak:
        pass  # nothing timed: one probe when the block ends
    assert peak["kinds"] == {"paddle": 80e9} and peak["devices"] == 4
    assert peaks.recheck(peak, "float32", "train fp32", lambda *a: None, [(100e9, "paddle")])  # 100 > 4 x 20
    assert peak["kinds"] == {"paddle": 120e9} and peak["peak_flops"] == 120e9  # 4 x 30, and no blas


def test_the_inference_phase_rechecks_each_dtype_on_the_work_measured_against_it(monkeypatch) -> None:
    """run_loop.infer_all: Paddle Inference's bs8 outran its own kind's probe, so fp32 is probed again and its
    efficiency_paddle is over the recheck's peak; int8 (no probe) and ONNX Runtime under the hardware peak trigger
    nothing on their own; a back end that did not run is left as it was."""
    import sys
    import types

    from benchmarks.harness import efficiency, roofline, run_loop
    from benchmarks.harness.peaks import Peaks

    def infer_with(results: dict):
        fake = types.ModuleType("benchmarks.harness.inference")
        fake.run_all = lambda *a, **k: results
        monkeypatch.setitem(sys.modules, "benchmarks.harness.inference", fake)
        rates = iter([140e9] + [160e9] * 3)
        blas = {"peak_flops": 190e9, "method": "n"}
        monkeypatch.setattr(roofline, "probe_all",
                            lambda *a: {"paddle-inference": {"peak_flops": next(rates), "method": "m"}, "blas": blas})
        monkeypatch.setattr(efficiency, "forward_flops", lambda *a: 1e9)
        config = types.SimpleNamespace(num_classes=10, data_format="NCHW", infer_precision=("fp32", "int8"),
                                       backends=("paddle-inference", "onnxruntime", "tensorrt"), batch_sizes=(1, 8),
                                       infer_image_size=128, device="cpu", smoke=False, infer_iters=10, threads=2,
                                       data=None, eval_data=None, gpu=False, seed=0)
        peaks = Peaks("cpu", world=2, repeats=1)
        logged = []
        out = run_loop.infer_all(config, lambda *a: None, types.SimpleNamespace(log=lambda *a: logged.append(a[0])),
                               peaks, {}, None)
        return out, peaks, logged

    out, peaks, logged = infer_with({
        "paddle-inference": {"fp32": {"bs1": {"ips": 50.0}, "bs8": {"ips": 150.0}}, "int8": {"bs8": {"ips": 900.0}}},
        "onnxruntime": {"fp32": {"bs8": {"ips": 180.0}}},
        "tensorrt": {"fp32": {"status": "not available", "reason": "needs a GPU"}}, "agreement": {}})
    assert logged.count("peak recheck float32 (inference)") == 1 and len(peaks.found["float32"]["probes"]) == 8
    bs8 = out["paddle-inference"]["fp32"]["bs8"]
    assert bs8["efficiency_paddle"] == pytest.approx(150 / 160) and bs8["efficiency"] == pytest.approx(150 / 190)
    assert bs8["peak_rechecked"] == 3  # devices=1 for inference although the run has 2 ranks: not 320e9
    assert out["onnxruntime"]["fp32"]["bs8"]["efficiency"] == pytest.approx(180 / 190)
    assert "efficiency_paddle" not in out["onnxruntime"]["fp32"]["bs8"]
    int8 = out["paddle-inference"]["int8"]["bs8"]
    assert "efficiency" not in int8 and "peak_tflops" not in int8 and "efficiency_failure" not in int8
    assert out["tensorrt"]["fp32"] == {"status": "not available", "reason": "needs a GPU"}

    out, peaks, logged = infer_with({  # int8 far above every peak and ONNX Runtime over Paddle Inference's: no recheck
        "paddle-inference": {"fp32": {"bs8": {"ips": 120.0}}, "int8": {"bs8": {"ips": 900.0}}},
        "onnxruntime": {"fp32": {"bs8": {"ips": 180.0}}}, "agreement": {}})
    assert not [e for e in logged if "recheck" in e] and len(peaks.found["float32"]["probes"]) == 2
    assert out["paddle-inference"]["fp32"]["bs8"]["efficiency_paddle"] == pytest.approx(120 / 140)
    assert "peak_rechecked" not in out["paddle-inference"]["fp32"]["bs8"]


def test_a_figure_below_its_floor_over_a_rechecked_peak_decides_nothing() -> None:
    """The recheck ran after the work: FAIL would rest on a peak not measured beside it, so NOT RUN (the run NOT
    PROVEN), saying why; the same figure over peaks probed beside the work FAILs, and above the floor it PASSes."""
    table = {"models": {"m": {"cpu": [{"name": "eff", "metric": "train.fp32.efficiency", "min": 0.5, "source": "s"}],
                              "relative": []}}}

    def verdict(figures: dict) -> acceptance_gates.Verdict:
        return acceptance_gates.evaluate(table, "m", "cpu", {"train": {"fp32": figures}}, {"precisions": ["fp32"]})[0]

    figures = {"ips": 1.0, "batch": 1, "steps": 1, "efficiency": 0.4, "peak_tflops": 0.1, "peak_rechecked": 3,
               "latency_ms": dict.fromkeys(("mean", "p50", "p90", "p95", "p99"), 1.0)}
    below = verdict(figures)
    assert below.status == "NOT RUN" and "probed again after the work" in below.reason
    assert acceptance_gates.overall([below]).verdict == "NOT PROVEN"
    assert verdict({**figures, "efficiency": 0.6}).status == "PASS"
    assert verdict({k: v for k, v in figures.items() if k != "peak_rechecked"}).status == "FAIL"


def test_an_efficiency_above_one_is_a_probe_failure_and_its_gate_is_not_proven() -> None:
    from benchmarks.harness import efficiency

    peak = {"peak_flops": 300e9, "hardware_kind": "blas", "kinds": {"paddle": 30e9, "blas": 300e9}}
    result = efficiency.annotate({"ips": 10.0}, 6e9, peak, None, "paddle")  # 60 GFLOP/s: 20 % of 300, 200 % of 30
    assert result["efficiency"] == pytest.approx(0.2)
    assert "efficiency_paddle" not in result and "probe failure" in result["efficiency_paddle_failure"]
    over = efficiency.annotate({"ips": 100.0}, 6e9, peak, None, "paddle")  # 600 GFLOP/s: above every probe
    assert "efficiency" not in over and "200 % of the hardware peak probed (blas)" in over["efficiency_failure"]
    table = {"models": {"m": {"cpu": [{"name": "eff", "metric": "train.fp32.efficiency", "min": 0.1, "source": "s"}],
                              "relative": []}}}
    verdicts = acceptance_gates.evaluate(table, "m", "cpu", {"train": {"fp32": over}}, {"precisions": ["fp32"]})
    assert [(v.status, v.measured) for v in verdicts] == [("NOT RUN", None)]
    assert verdicts[0].reason == over["efficiency_failure"]
    outcome = acceptance_gates.overall(verdicts)
    assert outcome.verdict == "NOT PROVEN" and "probe failure" in outcome.reasons[0]


def test_the_planted_slowdown_hook_doubles_every_timed_step(monkeypatch) -> None:
    from benchmarks.harness.timing import PLANTED_SLOWDOWN_ENV, StepTimer

    now = [0.0]

    def step(_i: int) -> None:
        now[0] += 0.5

    def durations(phase: str) -> list[float]:
        timer = StepTimer(0, 3, 4, clock=lambda: now[0], phase=phase)
        timer.sleep = lambda seconds: now.__setitem__(0, now[0] + seconds)
        return timer.run(step).durations

    monkeypatch.setenv(PLANTED_SLOWDOWN_ENV, "2")
    assert durations("train") == durations("infer") == [1.0, 1.0, 1.0]  # each 0.5 s step slept another 0.5 s
    monkeypatch.setenv(PLANTED_SLOWDOWN_ENV, "train=2")  # one phase alone: the other runs as shipped
    assert (durations("train"), durations("infer")) == ([1.0] * 3, [0.5] * 3)
    monkeypatch.setenv(PLANTED_SLOWDOWN_ENV, "infer=1.5, train=1")
    assert (durations("train"), durations("infer")) == ([0.5] * 3, [0.75] * 3)
    for bad in ("fast", "train=0.5", "eval=2", "train=2,train=3", "train", "=2"):
        monkeypatch.setenv(PLANTED_SLOWDOWN_ENV, bad)
        with pytest.raises(InputError, match=PLANTED_SLOWDOWN_ENV):
            StepTimer(0, 1, 1, phase="train")


def test_the_result_schema_knows_every_back_end_dtype_and_percentile_the_harness_writes() -> None:
    """The baseline reader refuses names it does not know (ngc_common/bench_result.py): its lists must hold every
    name the harness can write, or a real result would be refused."""
    from benchmarks.harness import efficiency, run_config, timing
    from benchmarks.harness.model_registry import models
    from ngc_common import bench_result

    backends = {b for spec in models().values() for b in (*spec.backends_cpu, *spec.backends_gpu)}
    assert backends | set(run_config.BACKEND_NEEDS) <= set(bench_result.INFER_BACKENDS)
    dtypes = {efficiency.probe_dtype(p) for p in (*bench_result.TRAIN_PRECISIONS, *bench_result.INFER_PRECISIONS)}
    assert dtypes | {"float16"} <= set(bench_result.PEAK_DTYPES)
    assert set(Timing(8, [0.1, 0.2]).latency_ms()) == set(bench_result.LATENCY_KEYS)
    assert set(Timing(8, [0.1]).summary()) <= bench_result.FIGURE_KEYS
    rechecked = {"peak_flops": 2e9, "kinds": {"paddle": 1e9, "blas": 2e9}, "rechecked": 3}
    for ips in (1.0, 100.0):  # figures and failures, over a peak probed again after the work
        assert set(efficiency.annotate({"ips": ips}, 1e9, rechecked, 5.0, "paddle")) <= bench_result.FIGURE_KEYS
    assert {f"p{q}" for q in timing.PERCENTILES} < set(bench_result.LATENCY_KEYS)


def test_why_missing_walks_only_mappings_and_takes_a_back_ends_status_only_for_its_own_inference_figure() -> None:
    """A figure whose parents are not mappings is simply not measured (no AttributeError); the status of a back end
    explains an inference metric of that back end only, never a training metric of the same names, and a metric
    too short to name a back end and a precision has none."""
    assert acceptance_gates.why_missing("train.fp32.ips", {"train": 5}) == "metric not measured in this run"
    assert acceptance_gates.why_missing("train.fp32.ips", {"train": {"fp32": 5}}) == "metric not measured in this run"
    trt = {"infer": {"trt": {"fp16": {"status": "not available", "reason": "needs a GPU"}}}}
    assert acceptance_gates.why_missing("infer.trt.fp16", trt) == "trt fp16: not available: needs a GPU"
    assert acceptance_gates.why_missing("train.trt.fp16", trt) == "metric not measured in this run"
    assert acceptance_gates.why_missing("infer.trt", trt) == "metric not measured in this run"
    assert acceptance_gates.why_missing("data_parallel", {}) == "metric not measured in this run"
    assert acceptance_gates.why_missing("data_parallel.fp32", {}).startswith("no data-parallel figures for fp32")
    assert acceptance_gates.why_missing("data_parallel.fp32", {"data_parallel": {"fp32": {}}}).startswith(
        "the one-process reference of the same job wrote no fp32 figure")


def test_outran_means_strictly_above_a_ceiling_the_phase_measured() -> None:
    from benchmarks.harness.peaks import outran

    low = {"peak_flops": 300e9, "kinds": {"paddle": 30e9, "blas": 300e9}}
    assert not outran(low, 300e9, [None]) and not outran(low, 30e9, ["paddle"])  # at the peak is no outrun
    assert not outran({"peak_flops": 300e9}, 60e9, ["paddle"])  # no kinds probed: only the hardware peak counts


def test_a_recheck_logs_what_outran_and_moves_the_hardware_kind_to_the_new_best(monkeypatch) -> None:
    """The phase's best kind was blas (100 GFLOP/s) and its own kind read 80; work at 120 outran both, and the
    recheck reads Paddle's kind at 190: that is the hardware peak now, and the log says what was achieved."""
    peaks, peak = _phase_with_probes(monkeypatch, [80e9, 80e9, 190e9, 185e9, 195e9])
    assert peak["hardware_kind"] == "blas"
    logged = []
    assert peaks.recheck(peak, "float32", "inference", lambda *a: logged.append(a),
                         [(110e9, "paddle-inference"), (120e9, "paddle-inference")])
    assert (peak["hardware_kind"], peak["peak_flops"]) == ("paddle-inference", 190e9)
    assert logged[-1] == ("peak recheck float32 (inference)",
                          {"achieved_flops": 120e9, "peak_flops": 190e9, "hardware_kind": "paddle-inference"})


def test_a_recheck_whose_probes_fail_keeps_the_phases_peaks(monkeypatch) -> None:
    """Every recheck probe failed (or one kind did): the phase's own medians stand for the kinds the recheck lacks."""
    from benchmarks.harness import roofline
    from benchmarks.harness.peaks import Peaks

    def run(recheck: dict) -> dict:
        probes = iter([{"paddle": {"peak_flops": 20e9, "method": "m"}, "blas": {"peak_flops": 90e9, "method": "n"}}]
                      + [recheck] * 3)
        monkeypatch.setattr(roofline, "probe_all", lambda *a: next(probes))
        peaks = Peaks("cpu", world=1, repeats=1)
        with peaks.around("float32", "train fp32", lambda *a: None) as peak:
            pass
        assert peaks.recheck(peak, "float32", "train fp32", lambda *a: None, [(30e9, "paddle")])
        return peak

    failed = {"status": "failed", "reason": "x"}
    assert run({"paddle": failed, "blas": failed})["kinds"] == {"paddle": 20e9, "blas": 90e9}
    assert run({"paddle": {"peak_flops": 40e9, "method": "m"}, "blas": failed})["kinds"] == \
        {"paddle": 40e9, "blas": 90e9}


def test_a_probe_asks_for_the_runs_device_dtype_repeats_and_threads_and_logs_each_kinds_figure(monkeypatch) -> None:
    from benchmarks.harness import roofline
    from benchmarks.harness.peaks import Peaks

    calls = []
    monkeypatch.setattr(roofline, "probe_all", lambda *a: calls.append(a) or {
        "paddle": {"peak_flops": 5e9, "method": "m"}, "cublas": {"status": "not available", "reason": "no GPU"}})
    logged = []
    peaks = Peaks("cpu", world=1, repeats=3, threads=4)
    peaks.probe("float32", "train", lambda *a: logged.append(a))
    assert calls == [("cpu", "float32", 3, 4)]
    assert peaks.found["float32"] == {  # the report's record: each probe without its method, each kind's method once
        "dtype": "float32", "kinds": {"paddle": "m", "cublas": "not available: no GPU"},
        "probes": [{"phase": "train", "kind": "paddle", "peak_flops": 5e9},
                   {"phase": "train", "kind": "cublas", "status": "not available", "reason": "no GPU"}]}
    assert logged == [("peak probe float32 (train)", {"paddle": 5e9, "cublas": "not available"})]
    Peaks("gpu", world=1, repeats=2).probe("float16", "infer", lambda *a: None)
    assert calls[-1] == ("gpu", "float16", 2, 1)  # one thread unless told


def test_an_emulated_run_probes_no_peak_and_its_phases_have_no_efficiency(monkeypatch) -> None:
    """Under qemu a probe measures the emulator (one took 6-8 minutes of a smoke run): no probe runs, each is logged
    as `not run` with the reason, the phase has no peak and annotate() gives it no efficiency."""
    from benchmarks.harness import efficiency, roofline
    from benchmarks.harness.peaks import Peaks

    monkeypatch.setattr(roofline, "probe_all", lambda *a: pytest.fail("probed under emulation"))
    logged = []
    peaks = Peaks("cpu", world=1, repeats=1, skip="not probed: emulated: aarch64 under qemu")
    with peaks.around("float32", "train fp32", lambda *a: logged.append(a)) as peak:
        pass
    assert peak == {} and peaks.found == {}  # results.peak holds measured peaks only (its schema's rule)
    assert logged == [("peak probe float32 (train fp32)", dict.fromkeys(
        roofline.KINDS, "not run: not probed: emulated: aarch64 under qemu"))]
    # each kind as a probe that did not run reports itself (roofline.probe_all's shape), so nothing reads a peak
    not_run = {"status": "not run", "reason": "not probed: emulated: aarch64 under qemu"}
    assert peaks.probe("float32", "infer", lambda *a: None) == {kind: not_run for kind in roofline.KINDS}
    result = efficiency.annotate({"ips": 2.0}, 1e9, peak or None, None)
    assert "efficiency" not in result and "peak_tflops" not in result and result["achieved_tflops"] == 2e-3


def test_the_run_hands_its_emulation_to_the_peaks(monkeypatch) -> None:
    import types

    from benchmarks.harness import run_loop

    made = []
    monkeypatch.setattr(run_loop, "Peaks", lambda *a, **k: made.append(k.get("skip")) or types.SimpleNamespace(
        found={}))
    config = types.SimpleNamespace(device="cpu", smoke=True, threads=1, gpu=False, mode="none")
    spec = types.SimpleNamespace(extra_results=lambda config: {})
    for emulated, skip in ((None, None), ("emulated: aarch64 under qemu", "not probed: emulated: aarch64 under qemu")):
        assert run_loop._measure(config, spec, None, {}, "cpu", (0, 1), {}, run_loop._Progress(), emulated)
        assert made[-1] == skip


def test_profiles_and_data_sheet_peaks_where_the_gates_file_lacks_a_part() -> None:
    """No profiles, a profile without peaks, amp-o2 as fp16, a precision looked up under its own name."""
    assert acceptance_gates.detect_profile({}, ["NVIDIA A100-SXM4-80GB"]) is None
    bare = {"profiles": [{"name": "x", "match": "x"}, {"name": "y", "match": "y", "peak_tflops": {"bf16": 5}}]}
    assert acceptance_gates.datasheet_tflops(bare, "x", "fp32") is None
    assert acceptance_gates.datasheet_tflops(bare, "y", "bf16") == 5
    assert acceptance_gates.datasheet_tflops(acceptance_gates.load(), "A100-80GB", "amp-o2") == 312


def test_judge_passes_the_baseline_its_allowance_and_the_hardware_on() -> None:
    results = {"train": {"fp32": {"ips": 90.0}}}
    baseline = {"results": {"train": {"fp32": {"ips": 100.0}}}, "environment": {"hardware": "X"}}
    verdicts, outcome = acceptance_gates.judge(GATES, "other", None, results, {}, baseline, None, "X", None)
    assert [(v.metric, v.status, v.threshold) for v in verdicts] == [("train.fp32.ips", "FAIL", 95.0)]
    assert outcome.verdict == "FAIL"
    verdicts, outcome = acceptance_gates.judge(GATES, "other", None, results, {}, baseline, 20.0, "X", None)
    assert [(v.status, v.threshold) for v in verdicts] == [("PASS", 80.0)] and outcome.verdict == "PASS"
    verdicts, _outcome = acceptance_gates.judge(GATES, "other", None, results, {}, baseline, None, "Y", None)
    assert verdicts == [acceptance_gates.Verdict(
        "regression vs baseline", "-", "N/A", None, None, "", "baseline", reason="the baseline ran on X, this run on "
        "Y: not comparable; fix: pass a result.json of the same hardware profile")]


def test_a_cpu_run_lacks_a_floor_only_where_its_kind_has_none() -> None:
    gates = {"models": {"m": {"cpu": [{"name": "a", "metric": "x", "min": 1, "when": {"cpu_kind": "avx512"}},
                                      {"name": "b", "metric": "y", "min": 1}]}}}
    assert acceptance_gates.unfloored_cpu(gates, "m", "cpu", {"cpu_kind": "avx2"}) == (
        "no CPU efficiency floor for this CPU kind (avx2; gates.yaml has floors for avx512): the figures are "
        "reported, not gated; the A/B gate against the previous release decides here (ngc-paddle bench-compare)")
    assert acceptance_gates.unfloored_cpu(gates, "m", "cpu", {"cpu_kind": "avx512"}) is None
    assert acceptance_gates.unfloored_cpu(gates, "m", "A100-80GB", {"cpu_kind": "avx2"}) is None
    assert acceptance_gates.unfloored_cpu(gates, "other", "cpu", {"cpu_kind": "avx2"}) is None
    assert acceptance_gates.unfloored_cpu({}, "m", "cpu", {"cpu_kind": "avx2"}) is None


def test_only_numbers_are_flattened_and_a_key_keeps_its_letters() -> None:
    assert acceptance_gates._flatten({"a": {"b": 1, "X": 2.5, "c": "x", "d": True, "e": None}}) == \
        {"a.b": 1.0, "a.X": 2.5}


def test_a_baseline_given_as_bare_results_is_compared_with_its_own_peak() -> None:
    def run(ips: float, peak: float) -> dict:
        return {"train": {"fp32": {"ips": ips}}, "peak": {"float32": {"peak_flops": peak}}}

    same = acceptance_gates.regressions(run(90.0, 1e11), run(100.0, 1e11), 5)
    assert [(v.metric, v.status) for v in same] == [("train.fp32.ips", "FAIL")]
    busier = {v.metric: v.status for v in acceptance_gates.regressions(run(90.0, 2e11), run(100.0, 1e11), 5)}
    assert busier == {"train.fp32.ips": "N/A"}
    new = acceptance_gates.regressions({**run(90.0, 1e11), "infer": {"ips": 5.0}}, run(100.0, 1e11), 5)
    assert [v.metric for v in new] == ["train.fp32.ips"]  # a figure the baseline lacks compares with nothing
