"""Bad inputs and outputs at the command line: each crash, hang or overwrite once found there now ends in one
line (exit 2) with nothing lost."""

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
import yaml

from ngc_paddle import cli
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.manifest import load_manifest
from ngc_paddle.release.stages.notes import check_record, notes_text
from ngc_paddle.release.state_file import MAX_DETAIL, State, StateError
from ngc_paddle.scan import policy

REPO = Path(__file__).resolve().parents[2]


def run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(list(argv))
    return code, err.getvalue()


def test_an_output_path_that_is_a_folder_or_under_a_file_is_bad_input(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "releases").mkdir(parents=True)
    for name in ("26.12.yaml", "26.12-cpu.lock.json", "26.12-gpu-cu118.lock.json"):
        (root / "releases" / name).write_bytes((REPO / "releases" / name).read_bytes())
    (root / "build" / "bake" / "26.12.json").mkdir(parents=True)  # the bake file's place is a folder
    code, err = run("--root", str(root), "bake-file", "26.12")
    assert code == 2 and "26.12.json: (file): is a folder" in err and err.count("\n") == 1
    (root / "build" / "bake" / "26.12.json").rmdir()
    (root / "build" / "bake").rmdir()
    (root / "build" / "bake").write_text("a file")  # the bake folder's place is a file
    code, err = run("--root", str(root), "bake-file", "26.12")
    assert code == 2 and "is a file, not a folder" in err and (root / "build" / "bake").read_text() == "a file"
    (tmp_path / "report").write_text("keep")
    code, err = run("--root", str(root), "scan", "ngc-paddle:26.12-cpu", "--output", str(tmp_path / "report" / "x"))
    assert code == 2 and "lies under" in err and (tmp_path / "report").read_text() == "keep"


def test_state_json_that_is_a_link_is_refused_and_the_writer_keeps_the_reader_limit(tmp_path: Path) -> None:
    loop = tmp_path / "state.json"
    os.symlink(loop, loop)  # a link to itself: exists() is False, it used to read as "no state"
    with pytest.raises(StateError, match="is a symlink"):
        State(loop)
    path = tmp_path / "ok" / "state.json"
    state = State(path)
    state.record("cpu", "month-over-month", "0123456789abcdef", "failed",
                 "; ".join(f"deb:package-{i} 1.0 (removed) without a reason" for i in range(800)),
                 evidence="x" * 40_000)
    again = State(path)  # what the pipeline wrote, its own reader takes (a resume no longer exits 2)
    entry = again.data["cpu"]["month-over-month"]
    assert len(entry["detail"]) <= MAX_DETAIL and "more characters cut" in entry["detail"]
    assert len(entry["evidence"]) <= MAX_DETAIL


@pytest.mark.parametrize("text, needle", [
    ("block_on: []\n", "block_on"),
    ("vulnerability_waiver: {reason: r, expires: 2030-01-01, ecosystems: []}\n", "ecosystems"),
])
def test_an_empty_list_in_the_policy_is_an_error_not_the_default(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(policy.PolicyError, match=needle):
        policy.load(path)


def test_a_manifest_of_many_aliases_is_refused_fast(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 9)]
    path = tmp_path / "26.12.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(NgcPaddleError, match="expands to more than 20000 values"):
        load_manifest(path)


def _record() -> dict:
    return json.loads((REPO / "release-notes" / "inputs" / "26.12.json").read_text())


def test_notes_record_of_another_release_or_with_wrong_types_is_refused() -> None:
    record = _record()
    with pytest.raises(NgcPaddleError, match=r"the record is of release '26\.11', not 26\.12"):
        check_record({**record, "release": "26.11"}, "release-notes/inputs/26.12.json")
    flavor = next(iter(record["flavors"].values()))
    flavor.setdefault("stages", {})["month-over-month"] = {"status": "failed", "detail": "x", "changes": 5}
    with pytest.raises(NgcPaddleError, match="changes"):
        check_record(record, "release-notes/inputs/26.12.json")


def test_a_detail_with_a_newline_or_a_pipe_stays_in_its_cell() -> None:
    record = check_record(_record(), "release-notes/inputs/26.12.json")
    name = next(iter(record["flavors"]))
    record["flavors"][name]["stages"]["scan"] = {"status": "failed", "detail": "a | b\nc"}
    text = notes_text(ResolvedRelease.load(REPO, "26.12"), record["flavors"], None)
    assert f"| {name} | scan | failed | a \\| b c |" in text.splitlines()


def test_the_notes_say_who_the_images_run_as() -> None:
    text = notes_text(ResolvedRelease.load(REPO, "26.12"), {}, None)
    assert "They run as the non-root user paddle (uid 1000, gid 1000)." in text
    data = yaml.safe_load((REPO / "releases" / "26.12.yaml").read_text())
    assert data["user"] == {"name": "paddle", "uid": 1000, "gid": 1000}
