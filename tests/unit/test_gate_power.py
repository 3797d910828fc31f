"""perf/bench_gate_power.py: the runs it makes match the gates' configuration, and how it counts them."""

import argparse

import pytest

from benchmarks.harness import acceptance_gates
from perf import bench_gate_power as power


def test_each_model_runs_in_the_configuration_of_its_cpu_gates_for_each_kind() -> None:
    table = acceptance_gates.load()
    for kind in ("intel-avx512", "amd-avx2", "amd-avx512", "amd-avx512-capped-avx2"):
        rn50 = power.gate_args(table, "rn50", kind)
        assert rn50[rn50.index("--image-size") + 1] == "128" and rn50[rn50.index("--batch-size") + 1] == "16"
        assert rn50[rn50.index("--infer-image-size") + 1] == "128" and rn50[rn50.index("--gpus") + 1] == "0"
        assert {g["metric"].split(".")[0] for g in power.cpu_gates(table, "rn50", kind)} == {"train", "infer"}
        hgnet = power.gate_args(table, "hgnet", kind)
        assert hgnet[hgnet.index("--model") + 1] == "tiny" and hgnet[hgnet.index("--infer-image-size") + 1] == "224"
        assert {g["metric"].split(".")[0] for g in power.cpu_gates(table, "hgnet", kind)} == {"train", "infer"}
    assert power.cpu_gates(table, "hgnet", "intel-avx2") == [] and power.gate_args(table, "hgnet", "intel-avx2") == []
    clash = {"models": {"m": {"cpu": [{"when": {"cpu_kind": "k", "image_size": 128}},
                                      {"when": {"cpu_kind": "k", "image_size": 224}}]}}}
    with pytest.raises(ValueError, match="disagree on image_size"):
        power.gate_args(clash, "m", "k")


def test_a_slowed_phase_must_fail_its_own_gate_and_pass_the_other() -> None:
    assert power.outcome("healthy", "PASS") == "ok" and power.outcome("slowed-train", "FAIL") == "ok"
    assert power.outcome("healthy", "NOT PROVEN") == "false fail" and power.outcome("healthy", None) == "false fail"
    assert power.outcome("slowed-infer", "PASS") == "miss" and power.outcome("slowed", "NOT PROVEN") == "miss"
    runs = [{"variant": "healthy", "outcome": "ok"}, {"variant": "healthy", "outcome": "false fail"},
            {"variant": "slowed-train", "outcome": "ok"}]
    assert power.rates(runs) == {"healthy": {"runs": 2, "wrong": 1, "rate": 0.5},
                                 "slowed-train": {"runs": 1, "wrong": 0, "rate": 0.0}}
    train, infer = "train.fp32.efficiency_paddle", "infer.paddle-inference.fp32.bs8.efficiency"
    runs = [  # training slowed: caught by its gate, but the inference gate failed too (a false fail of that gate)
        {"model": "rn50", "kind": "k", "load": "idle", "variant": "slowed-train",
         "gates": {train: ("FAIL", 0.2), infer: ("FAIL", 0.3)}},
        # inference slowed: the inference gate missed it, though the run failed on the training gate
        {"model": "rn50", "kind": "k", "load": "idle", "variant": "slowed-infer",
         "gates": {train: ("FAIL", 0.2), infer: ("PASS", 0.7)}},
        {"model": "rn50", "kind": "k", "load": "idle", "variant": "healthy",
         "gates": {train: ("PASS", 0.4), infer: ("PASS", 0.7)}},
        {"model": "rn50", "kind": "k", "load": "idle", "variant": "slowed-infer",  # no inference floor of this kind
         "gates": {train: ("PASS", 0.4), infer: ("N/A", 0.3)}}]
    assert power.per_gate(runs) == {("rn50", "k", "idle", train): {"runs": 4, "false fail": 1, "miss": 0},
                                    ("rn50", "k", "idle", infer): {"runs": 3, "false fail": 1, "miss": 1}}


def test_models_and_loads_that_share_a_gate_metric_are_counted_apart() -> None:
    train = "train.fp32.efficiency_paddle"
    runs = [{"model": model, "kind": "k", "load": load, "variant": "slowed-train", "gates": {train: (status, 0.3)}}
            for model, load, status in [("rn50", "idle", "FAIL"), ("hgnet", "idle", "PASS"), ("hgnet", "busy", "FAIL"),
                                        ("rn50", "busy", "FAIL")]]
    counted = power.per_gate(runs)
    assert counted[("hgnet", "k", "idle", train)] == {"runs": 1, "false fail": 0, "miss": 1}  # not hidden by rn50's
    assert sum(c["miss"] for c in counted.values()) == 1 and len(counted) == 4


def test_a_slowed_phase_without_a_floor_for_the_kind_is_not_gated_not_missed() -> None:
    table = acceptance_gates.load()
    assert power.gated_phases(table, "rn50", "amd-avx512") == ("infer", "train")
    assert power.gated_phases(table, "hgnet", "amd-avx512-capped-avx2") == ("infer", "train")
    floor = {"name": "train", "metric": "train.fp32.efficiency_paddle", "min": 0.5, "when": {"cpu_kind": "k"}}
    assert power.gated_phases({"models": {"m": {"cpu": [floor]}}}, "m", "k") == ("train",)  # no inference floor
    only_train = ("train",)
    assert power.not_gated("slowed-infer", only_train) == ["infer"]
    assert power.not_gated("slowed-train", only_train) == []
    # the run's verdict: nothing can fail it (its training gate must pass), so PASS is right and FAIL a false fail
    assert power.expected("slowed-infer", None, only_train) == "PASS"
    assert power.outcome("slowed-infer", "PASS", only_train) == "ok"
    assert power.outcome("slowed-infer", "FAIL", only_train) == "false fail"
    assert power.outcome("slowed-train", "PASS", only_train) == "miss"
    runs = [{"model": "hgnet", "kind": "c", "load": "busy", "variant": v, "gated": only_train, "gates": {}}
            for v in ("healthy", "slowed-infer", "slowed-infer", "slowed-train")]
    assert power.per_phase_not_gated(runs) == {("hgnet", "c", "busy", "infer"): 2}
    options = argparse.Namespace(runs=1, mode="all", models=["hgnet"], loads=["busy"], isas=["avx2"])
    for run in runs:
        run.update(verdict="PASS", outcome="ok", seconds=1.0)
    text = power.markdown(runs, options, [], [61.0])
    assert "- hgnet c busy infer: not gated (A/B covers it): no infer floor for this kind, 2 slowed run(s) not " \
        "counted as misses" in text
    assert "miss rate 0/1 (0 %) of the gated slowed runs; 2 slowed run(s) not gated (no floor of the kind for the " \
        "slowed phase)" in text  # the two unguarded runs are not counted as caught
    assert "One round (every model x kind x load x variant above) took 1.0 min; 10 rounds: about 0.2 h." in text
    assert "per CPU kind (capped to AVX2)." in text  # the kinds this run covered, not every kind there is


def test_the_floor_of_the_runs_own_cpu_kind_is_the_one_counted() -> None:
    metric = "train.fp32.efficiency_paddle"
    verdicts = [{"profile": "cpu", "metric": metric, "status": "FAIL", "measured": 0.3},  # this kind's floor
                {"profile": "cpu", "metric": metric, "status": "N/A", "measured": 0.3},  # another kind's
                {"profile": "relative", "metric": "train.summary.loss_finite", "status": "PASS", "measured": 1}]
    assert power.cpu_verdicts(verdicts) == {metric: ("FAIL", 0.3)}
    assert power.cpu_verdicts(verdicts[1:]) == {metric: ("N/A", 0.3)}


def test_bad_input_is_one_line_and_exit_2(capsys) -> None:
    assert power.main(["img", "--models", "nope", "--no-record"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: nope: not a model with CPU gates")
    assert power.main(["img", "--isas", "avx1024", "--no-record"]) == 2
    assert "error: avx1024: not a model" in capsys.readouterr().err


def test_a_malformed_gates_file_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    bad = tmp_path / "gates.yaml"
    text = acceptance_gates.GATES_FILE.read_text()
    bad.write_text(text.replace("metric: train.fp32.efficiency_paddle", "metric: train.fp32.ips", 1))
    assert power.main(["img", "--gates", str(bad), "--no-record"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "models.rn50.cpu.0.metric: a CPU gate must gate an efficiency" in err[0], err
