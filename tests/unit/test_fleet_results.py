"""A finished job's folder read into its cell's verdict (ngc_paddle.release.fleet.results), without a fan-out."""

from pathlib import Path

import pytest

from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.fleet import results
from ngc_paddle.release.fleet.payload import JobSpec
from ngc_paddle.release.fleet.runners.interface import JobState, Placed
from tests.unit.test_fleet_fanout import DIGEST, IMAGE, finished

DONE = JobState("7", "COMPLETED", "node1", "", "0:0")


def _job(tmp_path: Path, steps: str | None = None, **leave) -> Placed:
    """A cpu job of bench-rn50 that ran through (finished() of the fan-out's tests); `steps`: steps.tsv instead."""
    spec = JobSpec(flavor="cpu", profile="cpu", hardware="cpu", image=IMAGE, folder=tmp_path / "job",
                   benches=(("bench-rn50", ()),))
    job = Placed(spec, tmp_path / "job")
    finished(job, **leave)
    if steps is not None:
        (job.local / "attempt-1" / "steps.tsv").write_text(steps)
    return job


def test_the_worst_step_decides_in_the_cells_order_not_the_alphabets() -> None:
    assert results.worst([]) == "NOT RUN"
    assert results.worst(["PASS", "N/A", "NOT RUN"]) == "NOT RUN"
    assert results.worst(["NOT PROVEN", "N/A", "PASS"]) == "N/A"
    assert results.worst(["PASS", "NOT PROVEN"]) == "NOT PROVEN"


def test_slurm_words_leave_out_an_empty_reason_and_a_clean_exit() -> None:
    assert results.slurm_words(JobState("1", "FAILED", "", "JobLaunchFailure", "0:9")) == \
        "FAILED (JobLaunchFailure, exit 0:9)"
    assert results.slurm_words(JobState("1", "COMPLETED", "", "None", "0")) == "COMPLETED"
    assert results.slurm_words(JobState("1", "COMPLETED", "", "", "")) == "COMPLETED"
    assert results.slurm_words(JobState("1", "TIMEOUT", "", "", "0:0")) == "TIMEOUT"
    assert results.slurm_words(JobState("1", "FAILED", "", "None", "1")) == "FAILED (exit 1)"


def test_a_job_whose_folder_holds_every_verdict_passes(tmp_path: Path) -> None:
    reading = results.read(_job(tmp_path), DONE, "")
    assert (reading.status, reading.validate, reading.bench) == ("PASS", "PASS", {"bench-rn50": "PASS"})


def test_the_node_must_prove_it_ran_the_candidates_digest(tmp_path: Path) -> None:
    """facts.txt names another digest, or none: the node's figures are not the candidate's (NOT RUN)."""
    other = results.read(_job(tmp_path / "other", digest="sha256:" + "cd" * 32), DONE, "")
    assert other.status == "NOT RUN" and other.detail.endswith(f", not the candidate {DIGEST[:19]}")
    assert other.facts["hostname"] == "node1"  # the node's facts are kept for the notes
    none = results.read(_job(tmp_path / "none", digest=""), DONE, "")
    assert none.status == "NOT RUN"


def test_steps_are_tab_separated_lines_of_a_command_its_exit_code_and_seconds(tmp_path: Path) -> None:
    """Only lines of three tab-separated fields whose second is an integer count: a line split by blanks, with two
    fields, or with a code that is not a number leaves that step unrun; a negative code (a signal) is a number."""
    def validate_of(steps: str) -> tuple[str | None, str]:
        reading = results.read(_job(tmp_path / str(len(list(tmp_path.iterdir()))), steps=steps), DONE, "")
        return reading.validate, reading.detail

    assert validate_of("validate\t0\t30.5\nbench-rn50\t0\t40\n")[0] == "PASS"
    assert validate_of("validate 0 30\nbench-rn50\t0\t40\n")[0] == "NOT RUN"
    assert validate_of("validate\t0\nbench-rn50\t0\t40\n")[0] == "NOT RUN"
    assert validate_of("validate\tX0\t30\nbench-rn50\t0\t40\n")[0] == "NOT RUN"
    assert validate_of("validate\tnone\t30\nbench-rn50\t0\t40\n")[0] == "NOT RUN"
    interrupted = validate_of("validate\t-2\t30\nbench-rn50\t0\t40\n")
    assert interrupted[0] == "NOT RUN" and "validate NOT RUN (interrupted (exit -2))" in interrupted[1]
    assert "validate NOT RUN (did not run)" in validate_of("bench-rn50\t0\t40\n")[1]


def test_a_steps_file_beyond_64_kib_is_refused(tmp_path: Path) -> None:
    line = "note\t0\t1\n"
    big = "validate\t0\t30\nbench-rn50\t0\t40\n" + line * (64 * 1024 // len(line))
    big += "x" * (64 * 1024 + 1 - len(big))
    with pytest.raises(NgcPaddleError, match=r"steps\.tsv"):
        results.read(_job(tmp_path, steps=big), DONE, "")
    assert results.read(_job(tmp_path / "fits", steps=big[:64 * 1024]), DONE, "").validate == "PASS"


def test_interrupted_steps_are_not_run_and_an_unreadable_report_fails(tmp_path: Path) -> None:
    stopped = results.read(_job(tmp_path / "stopped", steps="validate\t130\t30\nbench-rn50\t143\t40\n"), DONE, "")
    assert (stopped.validate, stopped.bench, stopped.status) == ("NOT RUN", {"bench-rn50": "NOT RUN"}, "NOT RUN")
    assert "bench-rn50: interrupted (exit 143)" in stopped.detail
    job = _job(tmp_path / "garbled")
    (job.local / "attempt-1" / "validation" / "validation.json").write_text("{not json")
    garbled = results.read(job, DONE, "")
    assert garbled.validate == "FAIL" and "exit 0 but its report cannot be read: " in garbled.detail
    assert "validation.json: (file): not valid JSON" in garbled.detail


def test_a_benchmark_without_a_verdict_it_can_stand_on_fails_or_is_not_run(tmp_path: Path) -> None:
    """An exit code that is no verdict fails even beside a result.json; exit 0 without one fails too; a result.json
    that cannot be read fails saying what to check; an interrupted run's result is NOT RUN."""
    odd = results.read(_job(tmp_path / "odd", steps="validate\t0\t30\nbench-rn50\t2\t40\n"), DONE, "")
    assert odd.bench == {"bench-rn50": "FAIL"} and "bench-rn50 could not run (exit 2)" in odd.detail
    job = _job(tmp_path / "none")
    for result in (job.local / "attempt-1" / "bench" / "bench-rn50").glob("*/result.json"):
        result.unlink()
    assert results.read(job, DONE, "").bench == {"bench-rn50": "FAIL"}
    job = _job(tmp_path / "garbled")
    next((job.local / "attempt-1" / "bench" / "bench-rn50").glob("*/result.json")).write_text("[]")
    garbled = results.read(job, DONE, "")
    assert garbled.bench == {"bench-rn50": "FAIL"} and "fix: check the benchmark in the image" in garbled.detail
    stopped = results.read(_job(tmp_path / "stopped", bench_verdict="INTERRUPTED"), DONE, "")
    assert stopped.bench == {"bench-rn50": "NOT RUN"} and stopped.status == "NOT RUN"


def test_a_smoke_run_proves_nothing_and_says_why(tmp_path: Path) -> None:
    smoke = results.read(_job(tmp_path, bench_verdict="SMOKE"), DONE, "")
    assert smoke.bench == {"bench-rn50": "NOT PROVEN"}
    assert "bench-rn50: SMOKE (" in smoke.detail and smoke.detail.endswith("; a --smoke run measures no gate")


def test_the_baseline_a_job_compared_against_is_named_by_its_origin(tmp_path: Path) -> None:
    """inputs/baseline-COMMAND.json is the baseline the job got; its .from file says which run it is."""
    job = _job(tmp_path)
    assert "no baseline" in results.read(job, DONE, "").detail
    (job.local / "inputs").mkdir()
    (job.local / "inputs" / "baseline-bench-rn50.json").write_text("{}")
    assert "baseline baseline-bench-rn50.json)" in results.read(job, DONE, "").detail
    (job.local / "inputs" / "baseline-bench-rn50.from").write_text("26.11-cpu run 3\n")
    assert "baseline 26.11-cpu run 3)" in results.read(job, DONE, "").detail


def test_a_job_that_gave_no_verdict_is_not_run_and_says_what_it_left(tmp_path: Path) -> None:
    """A job Slurm saw fail is NOT RUN even when its outcome says done; a start failure gives its reason; a completed
    job without `done` ended without a verdict; a node without the GPU is N/A. The node's facts stay with each."""
    def reading(state: str, outcome: str | None, name: str) -> results.Reading:
        job = _job(tmp_path / name, outcome=outcome or "done")
        if outcome is None:
            (job.local / "attempt-1" / "outcome").unlink()
        return results.read(job, JobState("7", state, "node1", "", "0:0"), "")

    failed = reading("FAILED", "done", "failed")
    assert (failed.status, failed.ran, failed.detail, failed.facts["hostname"]) == ("NOT RUN", False, "done", "node1")
    start = reading("COMPLETED", "start-failed: docker: image not found", "start")
    assert (start.status, start.ran, start.detail) == ("NOT RUN", False, "docker: image not found")
    ended = reading("COMPLETED", "validate", "ended")
    assert (ended.status, ended.detail) == ("NOT RUN", "the job ended without a verdict (validate)")
    assert reading("COMPLETED", None, "silent").detail == "the job ended without a verdict (no outcome written)"
    assert reading("TIMEOUT", None, "timeout").detail == "no outcome written"
    gpu = reading("COMPLETED", "no-gpu: nvidia-smi found no GPU", "gpu")
    assert (gpu.status, gpu.detail, gpu.facts["hostname"]) == ("N/A", "nvidia-smi found no GPU", "node1")


def test_an_outcome_file_is_its_first_line_and_at_most_4_kib(tmp_path: Path) -> None:
    job = _job(tmp_path / "blank")
    (job.local / "attempt-1" / "outcome").write_text("\n\n")
    assert results.read(job, DONE, "").detail == "the job ended without a verdict (no outcome written)"
    job = _job(tmp_path / "big")
    (job.local / "attempt-1" / "outcome").write_text("done\n" + "x" * 4092)
    with pytest.raises(NgcPaddleError, match="outcome"):
        results.read(job, DONE, "")
    (job.local / "attempt-1" / "outcome").write_text("done\n" + "x" * 4091)
    assert results.read(job, DONE, "").status == "PASS"


def test_a_job_without_a_reference_says_so_only_when_told_why(tmp_path: Path) -> None:
    job = _job(tmp_path)
    assert "absolute gates decide alone" not in results.read(job, DONE, "").detail
    told = results.read(job, DONE, "", no_reference="the first release of this flavor").detail
    assert told.endswith("NOT RUN: the first release of this flavor; the absolute gates decide alone")


def test_a_gpu_job_on_a_node_without_the_gpu_is_na_and_keeps_the_nodes_facts(tmp_path: Path) -> None:
    spec = JobSpec(flavor="gpu", profile="a100", hardware="A100-80GB", image=IMAGE, folder=tmp_path / "job",
                   benches=(("bench-rn50", ()),), gpus=1)
    job = Placed(spec, tmp_path / "job")
    finished(job)
    reading = results.read(job, DONE, "A100")
    assert (reading.status, reading.facts["hostname"]) == ("N/A", "node1")
    assert reading.detail.startswith("node node1 shows no NVIDIA GPU")


def test_a_job_without_validation_or_without_a_reference_has_neither_verdict(tmp_path: Path) -> None:
    """A job that runs no validation suite has no validation verdict (not an empty one); rounds asked for without
    a reference image are no A/B."""
    spec = JobSpec(flavor="cpu", profile="cpu", hardware="cpu", image=IMAGE, folder=tmp_path / "job",
                   benches=(("bench-rn50", ()),), validate=False, ab_rounds=3)
    job = Placed(spec, tmp_path / "job")
    finished(job)
    reading = results.read(job, DONE, "")
    assert (reading.status, reading.validate, reading.ab) == ("PASS", None, None)
    assert not reading.detail.startswith("validate")


def test_a_node_of_another_machine_is_not_run_and_not_requeued(tmp_path: Path) -> None:
    """payload.sh's machine check: nothing ran, so no verdict; the same place would send the job there again."""
    why = ("gh01 is aarch64, the profile's platform linux/amd64 runs on x86_64; fix: send the profile to x86_64 nodes "
           "(partition, constraint or hosts), or set its platform:")
    reading = results.read(_job(tmp_path, outcome=f"wrong-machine: {why}"), DONE, "")
    assert (reading.status, reading.detail, reading.ran) == ("NOT RUN", why, True)
    assert reading.facts["hostname"] == "node1"  # the node's facts, for the notes' cell
