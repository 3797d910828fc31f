"""The scaling efficiency of a data-parallel run against the committed gates.yaml: gated on the profile and
configuration DLE published it for (8 A100 80GB of one node), reported with the reason everywhere else."""

import pytest

from benchmarks.harness import acceptance_gates

GATES = acceptance_gates.load()
EIGHT = {"image_size": 224, "batch_size": 256, "gpus": 8, "nnodes": 1, "mode": "train", "precisions": ["tf32", "amp"],
         "smoke": False}
TF32 = "data_parallel.tf32.scaling_efficiency"


def dp(**scaling: float | None) -> dict:
    """results of a data-parallel run whose precisions scaled as given (None: the reference wrote no figure)."""
    found = {}
    for precision, efficiency in scaling.items():
        found[precision] = {"procs": 8, "nodes": ["n#0"], "ranks": [], "ips": 8000.0}
        if efficiency is not None:
            found[precision].update(reference_ips=1000.0, scaling_efficiency=efficiency)
    return {"data_parallel": found, "train": {"tf32": {"ips": 8000.0}, "amp": {"ips": 23000.0},
                                               "summary": {"loss_finite": 1}}}


def verdict(results: dict, profile: str | None, config: dict, metric: str = TF32,
            model: str = "rn50") -> acceptance_gates.Verdict:
    return next(v for v in acceptance_gates.evaluate(GATES, model, profile, results, config) if v.metric == metric)


@pytest.mark.parametrize(("efficiency", "status"), [(0.95, "PASS"), (0.882, "PASS"), (0.88, "FAIL"), (0.5, "FAIL")])
def test_eight_a100s_of_one_node_are_gated_on_dles_published_scaling(efficiency: float, status: str) -> None:
    found = verdict(dp(tf32=efficiency, amp=1.0), "A100-80GB", EIGHT)
    assert (found.status, found.op, found.threshold, found.acceptance) == (status, ">=", 0.881, True)
    assert "7.83x" in found.source and "-10 %" in found.source


def test_a_scaling_below_the_floor_fails_the_run_and_one_above_passes_it() -> None:
    _, failed = acceptance_gates.judge(GATES, "rn50", "A100-80GB", dp(tf32=0.97, amp=0.80), EIGHT, None, None, None,
                                       None)
    assert failed.verdict == "FAIL" and failed.exit_code == 1
    assert failed.reasons == ["train AMP scaling efficiency (8 GPUs, one node): 0.8 (needs >= 0.927)"]
    _, passed = acceptance_gates.judge(GATES, "rn50", "A100-80GB", dp(tf32=0.97, amp=1.01), EIGHT, None, None, None,
                                       None)
    assert passed.verdict == "PASS" and passed.exit_code == 0


def test_another_gpu_count_or_several_nodes_report_the_scaling_with_the_reason() -> None:
    four = verdict(dp(tf32=0.5), "A100-80GB", {**EIGHT, "gpus": 4})
    assert four.status == "N/A" and four.measured == 0.5
    assert four.reason.startswith("reported, not gated: run configuration differs: gpus=4 (gate: 8) (the published "
                                  "scaling: A100-80GB (image_size=224, batch_size=256, gpus=8, nnodes=1))")
    two_nodes = verdict(dp(tf32=0.5), "A100-80GB", {**EIGHT, "nnodes": 2})
    assert two_nodes.status == "N/A" and "nnodes=2 (gate: 1)" in two_nodes.reason


def test_a_cpu_run_or_another_gpu_reports_its_scaling_never_gates_it() -> None:
    cpu = {"mode": "train", "precisions": ["fp32"], "gpus": 0, "procs": 2, "nnodes": 1, "smoke": False}
    verdicts, outcome = acceptance_gates.judge(GATES, "rn50", "cpu", dp(fp32=0.3), cpu, None, None, None, None)
    found = next(v for v in verdicts if v.metric == "data_parallel.fp32.scaling_efficiency")
    assert (found.gate, found.status, found.measured, found.threshold, found.op, found.profile, found.acceptance) == (
        "fp32 scaling efficiency", "N/A", 0.3, None, "", "cpu", False)
    unknown = verdict(dp(fp32=0.3), None, cpu, metric="data_parallel.fp32.scaling_efficiency")
    assert (unknown.gate, unknown.profile) == ("fp32 scaling efficiency", "-")  # hardware no profile matched
    assert found.reason == ("reported, not gated: no published scaling figure for this model and precision "
                            "(gates.yaml)")
    assert outcome.verdict != "FAIL"
    h200 = verdict(dp(tf32=0.3), "H200", EIGHT)
    assert h200.status == "N/A" and h200.reason.startswith(
        "reported, not gated: the published scaling is for A100-80GB (image_size=224, batch_size=256, gpus=8, "
        "nnodes=1); this run's hardware profile is H200")
    hgnet = verdict(dp(tf32=0.3), "A100-80GB", EIGHT, model="hgnet")
    assert hgnet.status == "N/A" and "no published scaling figure" in hgnet.reason


def test_a_gated_run_whose_one_gpu_reference_wrote_nothing_is_not_proven_with_the_reason() -> None:
    verdicts, outcome = acceptance_gates.judge(GATES, "rn50", "A100-80GB", dp(tf32=None, amp=1.0), EIGHT, None, None,
                                               None, None)
    found = next(v for v in verdicts if v.metric == TF32)
    assert found.status == "NOT RUN" and "one-process reference of the same job wrote no tf32 figure" in found.reason
    assert outcome.verdict == "NOT PROVEN" and any("scaling" in r for r in outcome.reasons)


def test_a_single_process_run_has_no_scaling_verdict_and_a_gated_one_says_why() -> None:
    single = {"train": {"tf32": {"ips": 900.0}, "summary": {"loss_finite": 1}}}
    one = {**EIGHT, "gpus": 1}
    assert verdict(single, "A100-80GB", one).status == "N/A"  # the gate's when: 8 GPUs
    assert not [v for v in acceptance_gates.evaluate(GATES, "rn50", "cpu", single, one) if "scaling" in v.metric]
    found = verdict(single, "A100-80GB", EIGHT)
    assert found.status == "NOT RUN" and found.reason == ("no data-parallel figures for tf32: the run trained in one "
                                                          "process")
