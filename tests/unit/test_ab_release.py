"""The release's A/B stage: a first release (no previous image) is NOT RUN with the reason and does not block, and
the notes' "this month vs last month" section shows a stored A/B's ratio and interval per metric."""

import json
from pathlib import Path

from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.release import pipeline
from ngc_paddle.release.ab import report
from ngc_paddle.release.ab.rounds import Rounds
from ngc_paddle.release.stages import ab

REPO = Path(__file__).resolve().parents[2]


def test_a_first_release_is_not_run_with_the_reason_and_does_not_block() -> None:
    outcome = ab.run(None, ab.Reference(None, "release 23.01 has no flavor cpu: 26.12 is its first release"))
    assert outcome.status == "not run" and outcome.status in pipeline.PASSING
    assert outcome.detail == ("A/B NOT RUN: release 23.01 has no flavor cpu: 26.12 is its first release; the absolute "
                              "gates decide alone")
    text = ab.markdown(Path("/nonexistent"), Path("/nonexistent"), {"ab": {"detail": outcome.detail}})
    assert text == "A/B NOT RUN: release 23.01 has no flavor cpu: 26.12 is its first release: the absolute gates " \
                   "decided alone."


def test_a_given_reference_wins_over_the_previous_release() -> None:
    found = ab.reference_for(ResolvedRelease.load(REPO, "26.12"), "cpu", references={"*": "r/x@sha256:" + "0" * 64},
                             registry="reg")
    assert found.image == "r/x@sha256:" + "0" * 64


def test_the_notes_show_this_month_against_last_month(tmp_path: Path) -> None:
    from ngc_paddle.release.ab.metrics import Metric

    metric = Metric("bench-rn50:train.fp32.ips", "bench-rn50 train fp32 img/s", "img/s", "higher")
    found = Rounds("done", samples={r: {"candidate": {metric: 5.0 + r / 100}, "reference": {metric: 10.0}}
                                    for r in (1, 2, 3, 4, 5)})  # a FAIL needs 5 rounds
    summary = report.summarize(found, 5, {})
    folder = tmp_path / "cpu" / "ab" / "ab-1"
    report.write(folder, summary)
    text = ab.markdown(tmp_path, tmp_path / "cpu", {})
    assert text.startswith("### this host") and "| bench-rn50 train fp32 img/s | 5.03 img/s | 10 img/s | 0.503 |" \
        in text and "| FAIL |" in text
    assert json.loads((folder / "ab.json").read_text())["verdict"] == "FAIL"
