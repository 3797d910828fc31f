"""The release's A/B stage: a first release (no previous image) is NOT RUN with the reason and does not block; the
stage's ab.json carries the node's facts; the notes' "this month vs last month" section shows this candidate's A/B
only (found by the stage's stored key; never one stored for an earlier image, nor one this run did not run), and a
fleet cell's from its newest attempt by number."""

import json
from pathlib import Path
from types import SimpleNamespace

from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.release import pipeline
from ngc_paddle.release.ab import ab_report, compare
from ngc_paddle.release.ab.metrics import Metric
from ngc_paddle.release.ab.rounds import Rounds
from ngc_paddle.release.stages import ab

REPO = Path(__file__).resolve().parents[2]
METRIC = Metric("bench-rn50:train.fp32.ips", "bench-rn50 train fp32 img/s", "img/s", "higher")
CANDIDATE = "sha256:" + "ab" * 32
IMAGE_ID = "sha256:" + "11" * 32


def summary(candidate: float = 5.0, digest: str = CANDIDATE) -> dict:
    found = Rounds("done", facts={"candidate_digest": digest},
                   samples={r: {"candidate": {METRIC: candidate + r / 100}, "reference": {METRIC: 10.0}}
                            for r in (1, 2, 3, 4, 5)})  # a FAIL needs 5 rounds
    return ab_report.summarize(found, 5, {})


def stages(**entries: dict) -> dict:
    """A flavor's stored stages: built as IMAGE_ID, the candidate pushed as CANDIDATE, plus `entries`."""
    return {"build": {"key": IMAGE_ID, "status": "passed"}, "candidate": {"digest": CANDIDATE, "status": "passed"},
            **entries}


def stage_input(tmp_path: Path, monkeypatch, job) -> SimpleNamespace:
    """What ab.run reads of a built flavor, with the A/B job faked by `job` (spec, say) -> its attempt folder."""
    monkeypatch.setattr(compare, "run_job", job)
    monkeypatch.setattr(ab.verdict, "max_regression_pct", lambda root: 5.0)
    resolved = SimpleNamespace(reference="reg:5000/ngc-paddle@" + CANDIDATE, release="26.12", image="i:26.12-cpu")
    opts = SimpleNamespace(ab_rounds=None, ab_smoke=True, ab_validation_time=False, benchmarks=("bench-rn50",))
    return SimpleNamespace(resolved=resolved, folder=tmp_path / "cpu", opts=opts, gpu_host=False, root=tmp_path,
                           image="i:26.12-cpu", release="26.12")


def test_a_first_release_is_not_run_with_the_reason_and_does_not_block() -> None:
    outcome = ab.run(None, ab.Reference(None, "release 23.01 has no flavor cpu: 26.12 is its first release"))
    assert outcome.status == "not run" and outcome.status in pipeline.PASSING
    assert outcome.detail == ("A/B NOT RUN: release 23.01 has no flavor cpu: 26.12 is its first release; the absolute "
                              "gates decide alone")
    text = ab.markdown(Path("/nonexistent"), Path("/nonexistent"), {"ab": {"detail": outcome.detail,
                                                                           "status": "not run"}})
    assert text == "A/B NOT RUN: release 23.01 has no flavor cpu: 26.12 is its first release: the absolute gates " \
                   "decided alone."


def test_a_given_reference_wins_over_the_previous_release() -> None:
    found = ab.reference_for(ResolvedRelease.load(REPO, "26.12"), "cpu", references={"*": "r/x@sha256:" + "0" * 64},
                             registry="reg")
    assert found.image == "r/x@sha256:" + "0" * 64


def test_the_notes_show_this_month_against_last_month(tmp_path: Path) -> None:
    ab_report.write(tmp_path / "cpu" / "ab" / "k1" / "ab-20261201T000000Z", summary())
    entry = {"key": "k1", "status": "failed", "image_id": IMAGE_ID, "detail": "A/B FAIL ..."}
    text = ab.markdown(tmp_path, tmp_path / "cpu", stages(ab=entry))
    assert text.startswith("### this host") and "| bench-rn50 train fp32 img/s | 5.03 img/s | 10 img/s | 0.503 |" \
        in text and "| FAIL |" in text


def test_the_notes_never_show_another_run_s_ab_as_this_month(tmp_path: Path) -> None:
    folder = tmp_path / "cpu"
    ab_report.write(folder / "ab" / "old" / "ab-20261201T000000Z", summary(5.0))  # an earlier image's, newest on disk
    ab_report.write(folder / "ab" / "k1" / "ab-20261130T000000Z", summary(10.0))
    current = {"key": "k1", "status": "passed", "image_id": IMAGE_ID, "detail": "A/B PASS ..."}
    text = ab.markdown(tmp_path, folder, stages(ab=current))
    assert "| 1.00" in text and "0.503" not in text  # by the stored key, not the newest folder
    # the stage's entry was stored for an earlier image: its A/B is not this month's
    assert ab.markdown(tmp_path, folder, stages(ab={**current, "image_id": "sha256:" + "22" * 32})) == ""
    # this run's A/B was NOT RUN (a first release): older A/Bs on disk are not shown as this month's
    first = {"key": "k2", "status": "not run", "image_id": IMAGE_ID,
             "detail": "A/B NOT RUN: no release before 26.12 in releases/; the absolute gates decide alone"}
    assert ab.markdown(tmp_path, folder, stages(ab=first)) == \
        "A/B NOT RUN: no release before 26.12 in releases/: the absolute gates decided alone."
    # an ab.json of another candidate digest under the same key: said as the stage said it, not shown as this month's
    ab_report.write(folder / "ab" / "k1" / "ab-20261202T000000Z", summary(10.0, digest="sha256:" + "99" * 32))
    assert ab.markdown(tmp_path, folder, stages(ab=current)) == "### this host\n\npassed: A/B PASS ..."


def test_a_fleet_cell_shows_its_newest_attempt_by_number(tmp_path: Path) -> None:
    job = tmp_path / "build" / "gates" / "cpu" / "run1"
    ab_report.write(job / "attempt-2" / "bench-ab", summary(5.0))
    ab_report.write(job / "attempt-10" / "bench-ab", summary(10.0))  # a text sort puts attempt-10 before attempt-2
    cell = {"status": "PASS", "ab": "PASS", "folder": str(job.relative_to(tmp_path)), "job": "slurm job 7",
            "node": "node1"}
    gates = {"status": "passed", "image_id": IMAGE_ID, "profiles": {"cpu": cell}}
    text = ab.markdown(tmp_path, tmp_path / "cpu", stages(gates=gates))
    assert text.startswith("### cpu (slurm job 7, node1)") and "| 1.00" in text and "0.503" not in text
    # a cell that ran no A/B (a first release) shows none, even with a folder that holds an old one
    assert ab.markdown(tmp_path, tmp_path / "cpu", stages(gates={**gates, "profiles": {"cpu": {**cell, "ab": None}}})) \
        == ""


def test_the_stage_writes_the_node_facts_into_ab_json(tmp_path: Path, monkeypatch) -> None:
    def fake_job(spec, say):
        attempt = spec.folder / "attempt-1"
        (attempt / "bench-ab").mkdir(parents=True)
        (attempt / "facts.txt").write_text("hostname=node1\ncpu_model=AMD EPYC 9B14\ncpus=2\ngpu_count=0\n")
        (attempt / "bench-ab" / "outcome").write_text("done\n")
        return attempt

    built = stage_input(tmp_path, monkeypatch, fake_job)
    ab.run(built, ab.Reference("reg/ngc-paddle@sha256:" + "cd" * 32, "release 26.11's cpu", "26.11"), "k1")
    path = ab.report_of(tmp_path / "cpu", "k1")
    assert path is not None and path.parent.parent.name == "k1"
    written = json.loads(path.read_text())
    assert written["node"] == {"hostname": "node1", "cpu_model": "AMD EPYC 9B14", "cpus": "2", "gpu_count": "0"}
    assert "- node: hostname node1, cpu_model AMD EPYC 9B14, cpus 2, gpu_count 0" in (path.parent / "ab.md").read_text()


def test_a_reference_that_cannot_be_pulled_holds_the_release_unlike_a_first_release(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    """A previous release's image exists but cannot be pulled: nobody compared with it, so NOT PROVEN (the release
    is held, exit 3 unless --accept-unproven), in one line naming the reference and the fix; a first release (no
    previous image at all) is NOT RUN, which does not block."""
    reference = "reg:5000/ngc-paddle@sha256:" + "cd" * 32

    def fake_job(spec, say):
        attempt = spec.folder / "attempt-1"
        (attempt / "bench-ab").mkdir(parents=True)
        (attempt / "bench-ab" / "outcome").write_text(
            f"reference-failed: cannot get {reference}: Error response from daemon: manifest unknown\n")
        return attempt

    built = stage_input(tmp_path, monkeypatch, fake_job)
    outcome = ab.run(built, ab.Reference(reference, "release 26.11's cpu", "26.11"), "k1")
    assert outcome.status == "not proven" and outcome.status not in pipeline.PASSING and "\n" not in outcome.detail
    assert outcome.detail.startswith(f"A/B NOT PROVEN against {reference} (26.11) (0 rounds) (the reference "
                                     f"{reference} cannot be pulled here (Error response from daemon: manifest "
                                     "unknown); fix: make it pullable (docker login reg:5000, or push it there again)")
    first = ab.run(built, ab.Reference(None, "no release before 26.12 in releases/: the first release of cpu"))
    assert first.status == "not run" and first.status in pipeline.PASSING
