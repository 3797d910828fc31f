"""A finished job's folder read into its cell's verdict (ngc_paddle.release.fleet.results), without a fan-out."""

from pathlib import Path

import pytest

from ngc_paddle.errors import NgcPaddleError
from ngc_paddle.release.fleet import results
from ngc_paddle.release.fleet.payload import JobSpec
from ngc_paddle.release.fleet.runners.base import JobState, Placed
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
    assert other.status == "NOT RUN" and f"not the candidate {DIGEST[:19]}" in other.detail
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
    assert garbled.validate == "FAIL" and "exit 0 but its report cannot be read" in garbled.detail
