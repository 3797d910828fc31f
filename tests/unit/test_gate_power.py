"""perf/bench_gate_power.py: the runs it makes match the gates' configuration, and how it counts them."""

import pytest

from benchmarks.harness import gates
from perf import bench_gate_power as power


def test_each_model_runs_in_the_configuration_of_its_cpu_gates_for_each_kind() -> None:
    table = gates.load()
    for kind in ("intel-avx512", "amd-avx2", "amd-avx512", "amd-avx512-capped-avx2"):
        rn50 = power.gate_args(table, "rn50", kind)
        assert rn50[rn50.index("--image-size") + 1] == "128" and rn50[rn50.index("--batch-size") + 1] == "16"
        assert rn50[rn50.index("--infer-image-size") + 1] == "128" and rn50[rn50.index("--gpus") + 1] == "0"
        assert {g["metric"].split(".")[0] for g in power.cpu_gates(table, "rn50", kind)} == {"train", "infer"}
    hgnet = power.gate_args(table, "hgnet", "intel-avx512")
    assert hgnet[hgnet.index("--model") + 1] == "tiny" and hgnet[hgnet.index("--infer-image-size") + 1] == "224"
    assert power.cpu_gates(table, "hgnet", "amd-avx2") == [] and power.gate_args(table, "hgnet", "amd-avx2") == []
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
        {"kind": "k", "variant": "slowed-train", "gates": {train: ("FAIL", 0.2), infer: ("FAIL", 0.3)}},
        # inference slowed: the inference gate missed it, though the run failed on the training gate
        {"kind": "k", "variant": "slowed-infer", "gates": {train: ("FAIL", 0.2), infer: ("PASS", 0.7)}},
        {"kind": "k", "variant": "healthy", "gates": {train: ("PASS", 0.4), infer: ("PASS", 0.7)}},
        {"kind": "k", "variant": "slowed-infer", "gates": {train: ("PASS", 0.4), infer: ("N/A", 0.3)}}]  # no floor
    assert power.per_gate(runs) == {("k", train): {"runs": 4, "false fail": 1, "miss": 0},
                                    ("k", infer): {"runs": 3, "false fail": 1, "miss": 1}}


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
    text = gates.GATES_FILE.read_text()
    bad.write_text(text.replace("metric: train.fp32.efficiency_paddle", "metric: train.fp32.ips", 1))
    assert power.main(["img", "--gates", str(bad), "--no-record"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "models.rn50.cpu.0.metric: a CPU gate must gate an efficiency" in err[0], err
