"""The A/B's default reference (the previous release's image of the flavor, by digest) and bench-compare's one-line
errors for what it cannot compare."""

import json
import shutil
from pathlib import Path
from types import MappingProxyType

import pytest

from ngc_paddle import cli
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.manifest import load_manifest
from ngc_paddle.release.ab import compare, reference
from ngc_paddle.release.ab.reference import previous_image
from ngc_paddle.release.state_file import State

REPO = Path(__file__).resolve().parents[2]
OLD = load_manifest(REPO / "releases" / "23.01.yaml")  # flavors: gpu only
DIGEST = "sha256:" + "12" * 32


def release_26_12(root: Path, *older: str) -> ResolvedRelease:
    """26.12 as a run at `root` resolves it, with the committed manifests of `older` releases beside it."""
    (root / "releases").mkdir(exist_ok=True)
    for name in older:
        shutil.copy(REPO / "releases" / f"{name}.yaml", root / "releases")
    return ResolvedRelease(root, load_manifest(REPO / "releases" / "26.12.yaml"), MappingProxyType({}))


def test_no_previous_release_or_flavor_is_a_first_release(tmp_path: Path) -> None:
    first = previous_image(release_26_12(tmp_path), "cpu", "reg:5000")
    assert first.image is None and first.why == "no release before 26.12 in releases/: the first release of cpu"
    new_flavor = previous_image(release_26_12(tmp_path, "23.01"), "cpu", "reg:5000")
    assert new_flavor.image is None and new_flavor.why == "release 23.01 has no flavor cpu: 26.12 is its first release"


def test_the_digest_comes_from_the_state_then_the_committed_record(tmp_path: Path) -> None:
    release = release_26_12(tmp_path, "23.01")
    none = previous_image(release, "gpu", "reg:5000")
    assert none.image is None and "recorded no pushed digest of gpu" in none.why and none.release == "23.01"
    record = tmp_path / "release-notes" / "inputs" / "23.01.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"release": "23.01", "flavors": {"gpu": {"digest": DIGEST}}}))
    found = previous_image(release, "gpu", "reg:5000")
    assert found.image == f"reg:5000/{OLD.image}@{DIGEST}" and "release-notes/inputs/23.01.json" in found.why
    assert found.release == "23.01"  # the notes name last month's release beside its digest
    pushed = "sha256:" + "34" * 32
    State(tmp_path / "build" / "release" / "23.01" / "state.json").record("gpu", "push", "k", "passed", "x",
                                                                           digest=pushed)
    found = previous_image(release, "gpu", "reg:5000")
    assert found.image == f"reg:5000/{OLD.image}@{pushed}" and "state.json" in found.why


def test_bench_compare_names_a_missing_image_and_the_fix(monkeypatch, capsys) -> None:
    monkeypatch.setattr(compare.engine, "image_id", lambda ref: None)
    monkeypatch.setattr(compare.engine, "try_pull", lambda ref: False)
    code = cli.main(["--root", str(REPO), "bench-compare", "no-such:1", "--reference", "ngc-paddle:26.12-cpu"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: candidate image no-such:1: not on this host and cannot be pulled; fix: ")


def test_bench_compare_without_a_previous_release_asks_for_a_reference(monkeypatch, capsys) -> None:
    monkeypatch.setattr(compare.engine, "image_id", lambda ref: "sha256:" + "ab" * 32)
    monkeypatch.setattr(compare.engine, "image_labels",
                        lambda ref: {"ngc-paddle.release": "26.12", "ngc-paddle.flavor": "cpu"})
    code = cli.main(["--root", str(REPO), "bench-compare", "ngc-paddle:26.12-cpu"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "no reference: release 23.01 has no flavor cpu: 26.12 is its first release; fix: give --reference IMAGE" \
        in err


@pytest.mark.parametrize("labels", [{}, {"ngc-paddle.release": "26.12"}])
def test_an_image_without_release_labels_needs_a_reference(monkeypatch, labels: dict) -> None:
    monkeypatch.setattr(compare.engine, "image_labels", lambda ref: labels)
    with pytest.raises(compare.NgcPaddleError, match="give --reference IMAGE"):
        compare.default_reference(REPO, "other:1", "reg:5000")


def compare_with_a_job_that_stops(tmp_path: Path, monkeypatch, outcome: str | None) -> int:
    """bench-compare whose job stopped before its rounds, leaving `outcome` (None: no outcome file)."""
    def job(spec, say):
        attempt = Path(spec.folder) / "attempt-1"
        attempt.mkdir(parents=True)
        if outcome is not None:
            (attempt / "outcome").write_text(outcome)
        return attempt

    monkeypatch.setattr(compare.engine, "image_id", lambda ref: "sha256:" + "ab" * 32)
    monkeypatch.setattr(compare.engine, "host_has_nvidia_gpus", lambda: False)
    monkeypatch.setattr(compare, "run_job", job)
    return cli.main(["--root", str(REPO), "bench-compare", "ngc-paddle:26.12-cpu", "--reference",
                     "ngc-paddle:26.11-cpu", "--smoke", "--output", str(tmp_path)])


def test_bench_compare_whose_job_never_reached_the_ab_is_not_proven_saying_why(tmp_path: Path, monkeypatch,
                                                                                capsys) -> None:
    """The job stopped before its rounds (the image would not start): no figures, so exit 3 (NOT PROVEN, never a
    PASS) with the job's own outcome as the first reason, and the report still written."""
    code = compare_with_a_job_that_stops(tmp_path, monkeypatch, "start-failed: docker: image would not start\n")
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1
    assert "the job did not reach the A/B: start-failed: docker: image would not start" in err
    (report,) = tmp_path.glob("ab-*/ab.json")
    assert json.loads(report.read_text())["reasons"][0] == \
        "the job did not reach the A/B: start-failed: docker: image would not start"


def test_a_long_outcome_is_cut_to_300_characters_in_the_reason(tmp_path: Path, monkeypatch, capsys) -> None:
    said = "start-failed: " + "x" * 400
    assert compare_with_a_job_that_stops(tmp_path, monkeypatch, said + "\n") == 3
    (report,) = tmp_path.glob("ab-*/ab.json")
    assert json.loads(report.read_text())["reasons"][0] == f"the job did not reach the A/B: {said[:300]}"


def test_bench_compare_whose_job_left_no_outcome_says_so(tmp_path: Path, monkeypatch, capsys) -> None:
    code = compare_with_a_job_that_stops(tmp_path, monkeypatch, None)
    assert code == 3 and "the job did not reach the A/B: no outcome written" in capsys.readouterr().err


def test_only_a_passed_push_of_the_flavor_in_the_state_gives_the_digest(tmp_path: Path) -> None:
    state = State(tmp_path / "build" / "release" / "23.01" / "state.json")
    state.record("gpu", "push", "k", "failed", "x", digest=DIGEST)
    assert reference._digest(tmp_path, "23.01", "gpu") is None  # a failed push's digest is no release's
    assert reference._digest(tmp_path, "23.01", "cpu") is None  # a flavor the state lacks


@pytest.mark.parametrize(("record", "found"), [
    ({"flavors": {"cpu": {"digest": DIGEST}}}, DIGEST),
    ({"flavors": {"cpu": {"digest": None}}}, None),  # not pushed that month
    ({"flavors": {"cpu": {}}}, None),
    ({"flavors": {"gpu": {"digest": DIGEST}}}, None),  # another flavor's
    ({"flavors": ["cpu"]}, None), ({"flavors": {"cpu": "x"}}, None), ([], None),  # shapes that hold no digest
])
def test_the_committed_notes_record_gives_the_digest_a_fresh_checkout_has(tmp_path: Path, record, found) -> None:
    path = tmp_path / "release-notes" / "inputs" / "23.01.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))
    assert reference._digest(tmp_path, "23.01", "cpu") == (
        (found, "release-notes/inputs/23.01.json") if found else None)


@pytest.mark.parametrize("digest", ["sha256:short", 7, "", ["sha256:" + "a" * 64]])
def test_a_damaged_digest_in_the_record_is_one_line_naming_it(tmp_path: Path, digest) -> None:
    path = tmp_path / "release-notes" / "inputs" / "23.01.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"flavors": {"cpu": {"digest": digest}}}))
    with pytest.raises(NgcPaddleError) as err:
        reference._digest(tmp_path, "23.01", "cpu")
    assert str(err.value).startswith(f"{path}: flavors.cpu.digest: ") and "\n" not in str(err.value)
    path.write_text("{not json")
    with pytest.raises(NgcPaddleError):  # a damaged file, one line too (exit 2)
        reference._digest(tmp_path, "23.01", "cpu")


def test_the_default_reference_is_the_release_before_the_candidates_own(monkeypatch) -> None:
    monkeypatch.setattr(compare.engine, "image_labels",
                        lambda ref: {"ngc-paddle.release": "23.01", "ngc-paddle.flavor": "gpu"})
    with pytest.raises(compare.NgcPaddleError,
                       match=r"no release before 23\.01 in releases/: the first release of gpu;"):
        compare.default_reference(REPO, "old:1", "reg:5000")
