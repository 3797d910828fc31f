"""A benchmark NOT PROVEN only because its CPU kind has no floor is decided by the A/B of the same flavor and profile
(gates.yaml: "reported, not gated (NOT PROVEN unless the A/B gate decides)"), on this host's release (the bench
stage) and in a fleet job (fleet/results.py) alike; any other NOT PROVEN, and every FAIL, keeps its verdict."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.harness import acceptance_gates as harness_gates
from ngc_common import bench_result
from ngc_paddle import engine
from ngc_paddle.release.ab import ab_report, gate_without_floor
from ngc_paddle.release.ab.metrics import Metric
from ngc_paddle.release.ab.rounds import Rounds
from ngc_paddle.release.fleet import results
from ngc_paddle.release.fleet.payload import JobSpec
from ngc_paddle.release.fleet.runners.interface import JobState, Placed
from ngc_paddle.release.stages import bench
from tests.unit.fuzz_support import bench_result as fixture_result

KIND = "arm-sve"  # a CPU kind gates.yaml keeps no floor for
REFERENCE = "127.0.0.1:5019/ngc-paddle@sha256:" + "cd" * 32
DIGEST = "sha256:" + "ab" * 32
TRAIN = Metric("bench-rn50:train.fp32.ips", "bench-rn50 train fp32 img/s", "img/s", "higher")
HGNET = Metric("bench-hgnet:train.fp32.ips", "bench-hgnet train fp32 img/s", "img/s", "higher")


def judged(kind: str = KIND, **changes) -> dict:
    """A CPU result.json of rn50 judged by the harness's own gates for a run of CPU `kind` (its real reasons)."""
    data = fixture_result("rn50")
    data["config"] = {**data["config"], "cpu_kind": kind}
    data["results"].update(changes)
    verdicts, outcome = harness_gates.judge(harness_gates.load(), "rn50", "cpu", data["results"], data["config"],
                                            None, None, None, None)
    return {**data, "gates": [v.as_dict() for v in verdicts], "verdict": outcome.verdict,
            "verdict_reasons": outcome.reasons, "passed": outcome.verdict == "PASS"}


def parsed(data: dict) -> bench_result.ResultFile:
    return bench_result.parse(Path("result.json"), data, "fix", ValueError)


def ab_summary(candidate: float, reference: float = 10.0, rounds: int = 4, metric: Metric = TRAIN) -> dict:
    """ab.json of an A/B whose rounds measured `metric` at these figures (a little noise per round)."""
    found = Rounds("done", samples={r: {"candidate": {metric: candidate * (1 + r / 1000)},
                                        "reference": {metric: reference}} for r in range(1, rounds + 1)})
    summary = ab_report.summarize(found, 5, {"hostname": "node1"})
    summary["reference"]["name"] = REFERENCE
    return summary


def test_the_harness_says_no_floor_the_way_the_rule_reads_it() -> None:
    reason = harness_gates.unfloored_cpu(harness_gates.load(), "rn50", "cpu", {"cpu_kind": KIND})
    assert reason is not None and reason.startswith(gate_without_floor.NO_FLOOR + KIND + ";")
    assert gate_without_floor.kind_without_floor(parsed(judged())) == KIND


def test_only_a_not_proven_resting_on_the_missing_floor_alone_is_the_ab_s_to_decide() -> None:
    floored = judged(kind="amd-avx512")  # a kind with floors: the fixture's figures pass them
    assert floored["verdict"] == "PASS" and gate_without_floor.kind_without_floor(parsed(floored)) is None
    missing = {**judged(), "verdict_reasons": ["needs a GPU: this host has none", judged()["verdict_reasons"][0]]}
    assert gate_without_floor.kind_without_floor(parsed(missing)) is None  # NOT PROVEN for another reason as well
    floor_first = {**missing, "verdict_reasons": missing["verdict_reasons"][::-1]}  # whatever the order
    assert gate_without_floor.kind_without_floor(parsed(floor_first)) is None
    failed = {**judged(), "verdict": "FAIL", "verdict_reasons": ["training loss is finite: 0 (needs >= 1)"]}
    assert gate_without_floor.kind_without_floor(parsed(failed)) is None


def test_any_gate_that_decided_or_another_single_reason_keeps_the_verdict_the_runs_own() -> None:
    """The one reason must be the missing floor; no gate may have failed, and no acceptance gate passed or was not
    run; the kind comes from the config, else from the reason itself."""
    base = judged()
    emulated = {**base, "verdict_reasons": ["emulated: aarch64 programs run under qemu-user"]}
    assert gate_without_floor.kind_without_floor(parsed(emulated)) is None
    for status, acceptance in (("FAIL", False), ("FAIL", True), ("PASS", True), ("NOT RUN", True)):
        gates = [dict(g) for g in base["gates"]]
        gates[0].update(status=status, acceptance=acceptance)
        assert gate_without_floor.kind_without_floor(parsed({**base, "gates": gates})) is None, (status, acceptance)
    quiet = [dict(g) for g in base["gates"]]
    quiet[0].update(status="PASS", acceptance=False)  # a relative gate that passed decides nothing
    assert gate_without_floor.kind_without_floor(parsed({**base, "gates": quiet})) == KIND
    unnamed = {**base, "config": {**base["config"], "cpu_kind": ""}}
    assert gate_without_floor.kind_without_floor(parsed(unnamed)) == KIND  # read from the reason


def test_the_ab_decides_pass_fail_or_leaves_it_not_proven_naming_both() -> None:
    verdict, why = gate_without_floor.decide("bench-rn50", KIND, ab_summary(10.0), "")
    assert verdict == "PASS" and why.startswith(f"no floor for CPU kind {KIND}: decided by A/B (4 rounds against "
                                                f"{REFERENCE}): bench-rn50 train fp32 img/s ratio 1.00")
    assert " CI [1.00" in why and why.endswith("PASS")
    verdict, why = gate_without_floor.decide("bench-rn50", KIND, ab_summary(5.0, rounds=6), "")
    assert verdict == "FAIL" and "ratio 0.50" in why and why.endswith("FAIL")
    verdict, why = gate_without_floor.decide("bench-rn50", KIND, ab_summary(10.0, rounds=2), "")
    assert verdict == "NOT PROVEN" and why.startswith(f"no floor for CPU kind {KIND}, and the A/B is NOT PROVEN (2 ")
    verdict, why = gate_without_floor.decide("bench-rn50", KIND, None, "A/B NOT RUN: no release before 26.12")
    assert (verdict, why) == ("NOT PROVEN", f"no floor for CPU kind {KIND}, and A/B NOT RUN: no release before 26.12")
    # only the benchmark's own metrics decide it: an A/B of bench-hgnet says nothing about bench-rn50
    verdict, why = gate_without_floor.decide("bench-rn50", KIND, ab_summary(10.0, metric=HGNET), "")
    assert verdict == "NOT PROVEN" and "measured no figure of bench-rn50" in why


def test_the_release_bench_stage_takes_the_ab_verdict_where_no_floor_holds(tmp_path: Path, monkeypatch) -> None:
    def fake_run(image, command, *args, flags):
        out = tmp_path / "bench" / command / "rn50-1"
        out.mkdir(parents=True)
        (out / "result.json").write_text(json.dumps(judged()))
        return SimpleNamespace(returncode=3, stderr="")  # the benchmark's own exit: NOT PROVEN

    monkeypatch.setattr(engine, "run", fake_run)
    outcome = bench.run_benchmarks("img", tmp_path / "bench", ("bench-rn50",), {}, lambda: (ab_summary(10.0), ""))
    assert outcome.status == "passed", outcome.detail
    assert outcome.detail.startswith(f"bench-rn50: PASS: no floor for CPU kind {KIND}: decided by A/B (4 rounds")
    assert outcome.detail.endswith("; absolute gates: NOT PROVEN (2 pass, 0 fail, 0 not run, 8 n/a, no baseline)")

    for summary, status in ((ab_summary(5.0, rounds=6), "failed"), (ab_summary(10.0, rounds=2), "not proven")):
        shutil.rmtree(tmp_path / "bench")
        assert bench.run_benchmarks("img", tmp_path / "bench", ("bench-rn50",), {},
                                    lambda s=summary: (s, "")).status == status


def cpu_job(tmp_path: Path) -> Placed:
    spec = JobSpec(flavor="cpu", profile="cpu", hardware="cpu", image=f"127.0.0.1:5019/ngc-paddle@{DIGEST}",
                   folder=tmp_path / "job", benches=(("bench-rn50", ()),), validate=False, reference=REFERENCE,
                   ab_rounds=4, ab_benches=(("bench-rn50", ("--smoke",)),))
    job = Placed(spec, tmp_path / "job")
    folder = job.local / "attempt-1"
    result = folder / "bench" / "bench-rn50" / "rn50-1" / "result.json"
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps(judged()))
    (folder / "facts.txt").write_text(f"hostname=node1\ngpu_count=0\nimage_digest={DIGEST}\n")
    (folder / "steps.tsv").write_text("bench-rn50\t3\t40\n")
    (folder / "outcome").write_text("done\n")
    return job


@pytest.mark.parametrize(("candidate", "expected"), [(10.0, "PASS"), (5.0, "FAIL")])
def test_a_fleet_job_folds_the_same_rule_into_its_cell(tmp_path: Path, candidate: float, expected: str) -> None:
    job = cpu_job(tmp_path)
    ab = job.local / "attempt-1" / "bench-ab"
    ab.mkdir()
    (ab / "outcome").write_text("done\n")
    (ab / "facts.txt").write_text(f"candidate_image={job.spec.image}\nreference_image={REFERENCE}\n")
    lines = []
    for r in range(0, 7):
        for side, ips in (("candidate", candidate), ("reference", 10.0)):
            out = ab / f"round-{r:02d}" / side / "bench-rn50" / "rn50-1"
            out.mkdir(parents=True)
            figures = {"train": {"fp32": {"ips": ips * (1 + r / 1000)}}}
            (out / "result.json").write_text(json.dumps({"results": figures}))
            lines.append(f"round-{r:02d}\t{side}\tbench-rn50\t0\t{1000 + r}\t900")
    (ab / "rounds.tsv").write_text("\n".join(lines) + "\n")
    baseline = job.local / "inputs" / "baseline-bench-rn50.json"  # the previous release's figures, named by origin
    baseline.parent.mkdir(parents=True)
    baseline.write_text("{}")
    baseline.with_suffix(".from").write_text("26.11 cpu rn50-1\n")
    reading = results.read(job, JobState("1", "COMPLETED"), "", 5.0)
    assert "baseline 26.11 cpu rn50-1)" in reading.detail, reading.detail
    assert reading.ab == expected and reading.bench == {"bench-rn50": expected} and reading.status == expected
    assert f"bench-rn50: {expected}: no floor for CPU kind {KIND}: decided by A/B (6 rounds" in reading.detail
    # the job's A/B report, written beside its rounds: both images by the names the release gave them, and the node
    summary = json.loads((ab / "ab.json").read_text())
    assert (summary["candidate"]["name"], summary["reference"]["name"]) == (job.spec.image, REFERENCE)
    assert summary["node"]["hostname"] == "node1" and summary["node"]["image_digest"] == DIGEST
    md = (ab / "ab.md").read_text()
    assert md.startswith("# A/B of cpu@cpu on node1\n") and "- node: hostname node1" in md
    assert (ab / "rounds.svg").is_file()


def test_a_fleet_job_without_a_reference_stays_not_proven_naming_both(tmp_path: Path) -> None:
    job = cpu_job(tmp_path)
    job = Placed(JobSpec(**{**job.spec.__dict__, "reference": None, "ab_rounds": 0, "ab_benches": ()}), job.local)
    reading = results.read(job, JobState("1", "COMPLETED"), "", 5.0, no_reference="no release before 26.12")
    assert reading.status == "NOT PROVEN" and reading.ab is None
    assert f"bench-rn50: NOT PROVEN: no floor for CPU kind {KIND}, and A/B NOT RUN: no release before 26.12" \
        in reading.detail


def _metric(key: str, status: str, ratio: float) -> dict:
    return {"key": key, "label": key.split(":")[1], "status": status, "ratio": ratio, "low": ratio - 0.01,
            "high": ratio + 0.01}


def test_the_ab_reason_is_exact_worst_first_and_counts_what_it_leaves_out() -> None:
    """The verdict is the worst of the benchmark's own metrics (ORDER, not the names' alphabet), the reason shows
    at most SHOWN of them worst first and counts the rest; an A/B that did not run names its first reason only."""
    head = f"no floor for CPU kind {KIND}"
    ref = {"name": REFERENCE}
    metrics = [_metric("bench-rn50:a", "PASS", 1.0), _metric("bench-rn50:b", "NOT RUN", 0.9),
               _metric("bench-hgnet:c", "FAIL", 0.5), _metric("bench-rn50:d", "NOT PROVEN", 0.97)]
    verdict, why = gate_without_floor.decide("bench-rn50", KIND, {"rounds": 3, "reference": ref,
                                                                  "verdict": "NOT PROVEN", "metrics": metrics}, "")
    assert (verdict, why) == ("NOT PROVEN", f"{head}, and the A/B is NOT RUN (3 rounds against {REFERENCE}): "
                              "b ratio 0.900 CI [0.890, 0.910] NOT RUN; d ratio 0.970 CI [0.960, 0.980] NOT PROVEN; "
                              "a ratio 1.000 CI [0.990, 1.010] PASS")
    passing = [_metric(f"bench-rn50:m{i}", "PASS", 1.0) for i in range(gate_without_floor.SHOWN)]
    verdict, why = gate_without_floor.decide("bench-rn50", KIND, {"rounds": 5, "reference": ref, "metrics": passing},
                                             "")
    assert verdict == "PASS" and why.count(" PASS") == gate_without_floor.SHOWN and "more" not in why
    verdict, why = gate_without_floor.decide("bench-rn50", KIND, {"rounds": 5, "reference": ref, "metrics": [
        *passing, _metric("bench-rn50:z", "PASS", 1.0), _metric("bench-rn50:y", "PASS", 1.0)]}, "")
    assert verdict == "PASS" and why.endswith("PASS; 2 more") and "z ratio" not in why
    # An A/B that did not run: its first reason, even where its metrics hold figures; none: what it lacked.
    not_run = {"verdict": "NOT RUN", "reasons": ["the reference image could not be pulled", "second"],
               "metrics": passing}
    assert gate_without_floor.decide("bench-rn50", KIND, not_run, "") == (
        "NOT PROVEN", f"{head}, and the A/B is NOT RUN: the reference image could not be pulled")
    assert gate_without_floor.decide("bench-rn50", KIND, {"verdict": "NOT RUN"}, "") == (
        "NOT PROVEN", f"{head}, and the A/B is NOT RUN: it measured no figure of bench-rn50")


def test_the_reference_is_named_by_its_name_else_its_image_cut_at_120() -> None:
    assert gate_without_floor._reference({"reference": {"image": "r/x"}}) == "r/x"
    assert gate_without_floor._reference({"reference": {"name": "n", "image": "r/x"}}) == "n"
    assert gate_without_floor._reference({}) == "the reference"
    assert gate_without_floor._reference({"reference": {"image": "r" * 200}}) == "r" * 120
