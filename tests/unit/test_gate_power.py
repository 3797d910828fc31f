"""perf/bench_gate_power.py: the runs it makes match the gates' configuration, and how it counts them."""

import pytest

from benchmarks.harness import gates
from perf import bench_gate_power as power


def test_each_model_runs_in_the_configuration_of_its_cpu_gates() -> None:
    table = gates.load()
    rn50 = power.gate_args(table, "rn50")
    assert rn50[rn50.index("--image-size") + 1] == "128" and rn50[rn50.index("--batch-size") + 1] == "16"
    assert rn50[rn50.index("--infer-image-size") + 1] == "128" and rn50[rn50.index("--gpus") + 1] == "0"
    hgnet = power.gate_args(table, "hgnet")
    assert hgnet[hgnet.index("--model") + 1] == "tiny" and hgnet[hgnet.index("--infer-image-size") + 1] == "224"
    clash = {"models": {"m": {"cpu": [{"when": {"image_size": 128}}, {"when": {"image_size": 224}}]}}}
    with pytest.raises(ValueError, match="disagree on image_size"):
        power.gate_args(clash, "m")


def test_false_fails_and_misses_are_counted_per_variant() -> None:
    assert power.outcome("healthy", "PASS") == "ok" and power.outcome("slowed", "FAIL") == "ok"
    assert power.outcome("healthy", "NOT PROVEN") == "false fail" and power.outcome("healthy", None) == "false fail"
    assert power.outcome("slowed", "PASS") == "miss" and power.outcome("slowed", "NOT PROVEN") == "miss"
    runs = [{"variant": "healthy", "outcome": "ok"}, {"variant": "healthy", "outcome": "false fail"},
            {"variant": "slowed", "outcome": "ok"}]
    assert power.rates(runs) == {"healthy": {"runs": 2, "wrong": 1, "rate": 0.5},
                                 "slowed": {"runs": 1, "wrong": 0, "rate": 0.0}}
    caught_by_one = [{"variant": "slowed", "gates": {"train": ("PASS", 0.2), "infer": ("FAIL", 0.3)}},
                     {"variant": "healthy", "gates": {"train": ("PASS", 0.4), "infer": ("PASS", 0.7)}}]
    assert power.per_gate(caught_by_one) == {"train": {"healthy": 0, "slowed": 1}, "infer": {"healthy": 0, "slowed": 0}}


def test_bad_input_is_one_line_and_exit_2(capsys) -> None:
    assert power.main(["img", "--models", "nope", "--no-record"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: nope: not a model with CPU gates")


def test_a_malformed_gates_file_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    bad = tmp_path / "gates.yaml"
    text = gates.GATES_FILE.read_text()
    bad.write_text(text.replace("metric: train.fp32.efficiency_paddle", "metric: train.fp32.ips", 1))
    assert power.main(["img", "--gates", str(bad), "--no-record"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "models.rn50.cpu.0.metric: a CPU gate must gate an efficiency" in err[0], err
