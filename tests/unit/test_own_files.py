"""Our own files against our build's record of them: in the scan (each planted change in a layer above ours
blocks, naming the file and the layer; the record is read from our layer only), and in the image (the suite and
the benchmarks refuse a verdict, NOT PROVEN, naming the changed file)."""

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

import benchmarks
from ngc_common import image_paths, suite_record
from ngc_common.exit_codes import ExitCode
from ngc_paddle.scan.checks import own_files
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.inventory import record_hash
from tests.unit.layer_tars import Member, facts

REPO = Path(__file__).resolve().parents[2]
HOME = image_paths.HOME
SITE = "/opt/venv/lib/python3.11/site-packages"
OURS = {f"{HOME}/benchmarks/gates.yaml": b"rn50: {min_images_per_s: 100}\n",
        f"{HOME}/validation/checks/test_contract.py": b"def test_contract():\n    assert True\n",
        f"{HOME}/benchmarks/harness/acceptance_gates.py": b"def judge(x):\n    return x > 1\n",
        f"{HOME}/entrypoint.sh": b"#!/bin/bash\nexec \"$@\"\n",
        f"{SITE}/ngc_common/exit_codes.py": b"PASS = 0\n"}


def record(files: dict[str, bytes]) -> bytes:
    return json.dumps({"format": 1, "roots": [HOME, f"{SITE}/ngc_common"],
                       "files": {p: hashlib.sha256(d).hexdigest() for p, d in files.items()}}).encode()


SUITE = [Member(p, d, 0o755 if p.endswith(".sh") else 0o644) for p, d in OURS.items()] + \
    [Member(image_paths.SUITE_RECORD, record(OURS))]


def judge(*above: list[Member], suite: list[Member] = SUITE) -> own_files.OwnFiles:
    """A base, our suite layer, then `above` (a derived image's layers), judged with the bottom two ours."""
    stack = [facts(0, [Member("/etc/hostname", b"x\n")], "base"), facts(1, suite, "suite")]
    stack += [facts(i + 2, members, f"RUN step {i}") for i, members in enumerate(above)]
    return own_files.check([at for at, _ in stack], [f for _, f in stack], 2)


def test_our_files_as_built_have_no_finding() -> None:
    result = judge([Member("/srv/app.py", b"x = 1\n")], [Member(f"{HOME}/benchmarks/__pycache__/x.pyc", b"pyc")])
    assert (result.status, result.findings) == ("checked", []) and "5 files" in result.detail


# (a derived layer's members, the file named, the finding's id): one planted change each.
PLANTED = [
    ([Member(f"{HOME}/benchmarks/gates.yaml", b"rn50: {min_images_per_s: 0}\n")],
     f"{HOME}/benchmarks/gates.yaml", "own-file-changed"),
    ([Member(f"{HOME}/validation/checks/test_contract.py", b"def test_contract():\n    pass\n")],
     f"{HOME}/validation/checks/test_contract.py", "own-file-changed"),
    ([Member(f"{HOME}/benchmarks/harness/acceptance_gates.py", b"def judge(x):\n    return True\n")],
     f"{HOME}/benchmarks/harness/acceptance_gates.py", "own-file-changed"),
    ([Member(f"{SITE}/ngc_common/exit_codes.py", b"PASS = 1\n")], f"{SITE}/ngc_common/exit_codes.py",
     "own-file-changed"),
    ([Member(f"{HOME}/entrypoint.sh", link="/srv/start.sh")], f"{HOME}/entrypoint.sh", "own-file-changed"),
    ([Member(f"{HOME}/benchmarks/.wh.gates.yaml", b"")], f"{HOME}/benchmarks/gates.yaml", "own-file-removed"),
    ([Member(f"{HOME}/validation/checks/.wh..wh..opq", b"")], f"{HOME}/validation/checks/test_contract.py",
     "own-file-removed"),
    ([Member(f"{HOME}/validation/checks/conftest.py", b"collect_ignore = ['.']\n")],
     f"{HOME}/validation/checks/conftest.py", "own-file-added"),
]


RECORDED = (f"(recorded in {image_paths.SUITE_RECORD} of layer 1 (suite)); decides trust: the project's own suite "
            "and gates")
WHAT = {"own-file-removed": ("removed from the image ",),
        "own-file-added": ("a file our build did not install among ours ",),
        "own-file-changed": ("differs from our build's (sha256 ",
                             "a symlink to /srv/start.sh where our build installed a file ")}


@pytest.mark.parametrize(("members", "path", "rule"), PLANTED, ids=[f"{r}:{p}" for _m, p, r in PLANTED])
def test_each_planted_change_to_our_files_blocks_naming_the_file_and_the_layer(members, path, rule) -> None:
    result = judge([Member("/srv/app.py", b"x = 1\n")], members)
    assert [(f.kind, f.id, f.package, f.location) for f in result.findings] == \
        [("integrity", rule, path, "layer 3 (RUN step 1)")]
    found = result.findings[0]
    assert (found.severity, found.installed, found.source) == ("CRITICAL", "ngc-paddle suite", "integrity")
    assert found.title.endswith(f" {RECORDED}") and found.title.startswith(WHAT[rule])


def test_a_file_put_back_as_built_is_no_change_and_a_record_rewritten_above_ours_is_not_trusted() -> None:
    gates = f"{HOME}/benchmarks/gates.yaml"
    put_back = judge([Member(f"{HOME}/benchmarks/.wh.gates.yaml", b"")], [Member(gates, OURS[gates])])
    assert put_back.findings == []
    tampered = {**OURS, gates: b"rn50: {}\n"}
    found = judge([Member(gates, tampered[gates]), Member(image_paths.SUITE_RECORD, record(tampered))])
    assert {(f.id, f.package) for f in found.findings} == {("own-file-changed", gates),
                                                           ("own-file-changed", image_paths.SUITE_RECORD)}
    rewritten = [f for f in found.findings if f.package == image_paths.SUITE_RECORD]
    assert [(f.title, f.location) for f in rewritten] == [(
        f"the record of our files, rewritten (the suite and the benchmarks would read this copy) {RECORDED}",
        "layer 2 (RUN step 0)")]


def test_facts_of_fewer_layers_than_the_image_are_refused_not_judged_in_part() -> None:
    stack = [facts(0, [Member("/etc/hostname", b"x\n")], "base"), facts(1, SUITE, "suite"),
             facts(2, [Member("/srv/app.py", b"x = 1\n")], "RUN step 0")]
    with pytest.raises(ValueError):
        own_files.check([at for at, _ in stack], [f for _, f in stack[:2]], 2)


def test_without_a_record_in_our_layers_the_check_is_not_run_and_without_our_suite_layer_it_is_none() -> None:
    missing = judge(suite=SUITE[:-1])
    assert missing.status == "NOT RUN" and image_paths.SUITE_RECORD in missing.detail
    assert missing.as_dict() == {"status": "NOT RUN", "detail": missing.detail}  # as scan.json has it
    broken = judge(suite=[*SUITE[:-1], Member(image_paths.SUITE_RECORD, b"{not json")])
    assert broken.status == "NOT RUN" and "unreadable" in broken.detail
    stack = [facts(0, [Member("/etc/hostname", b"x\n")], "base"), facts(1, SUITE, "paddle")]
    none = own_files.check([a for a, _ in stack], [f for _, f in stack], 2)
    assert (none.status, none.detail) == ("none", "the image holds no suite layer of ours")


# ---- in the image: the suite and the benchmarks refuse a verdict ---------------------------------------------

@pytest.fixture
def image_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This checkout's validation/ and benchmarks/ as the image's suite: recorded as built, at their real paths."""
    monkeypatch.setattr(image_paths, "HOME", str(REPO))
    monkeypatch.setattr(image_paths, "SUITE_RECORD", str(tmp_path / "suite-record.json"))
    suite_record.write(roots=[str(REPO / "benchmarks"), str(REPO / "validation")])
    return tmp_path / "suite-record.json"


def plant(record_path: Path, path: Path) -> None:
    """The image's file no longer as its record says (the record is changed instead: the checkout stays)."""
    data = json.loads(record_path.read_text())
    data["files"][str(path)] = "0" * 64
    record_path.write_text(json.dumps(data))


def test_the_in_image_check_names_a_changed_removed_or_added_file_and_ignores_the_hosts_checkout(
        image_home: Path) -> None:
    code = str(REPO / "validation" / "run.py")
    assert suite_record.refusal(code) is None
    gates = REPO / "benchmarks" / "gates.yaml"
    plant(image_home, gates)
    line = suite_record.refusal(code)
    assert line is not None and line.startswith(f"NOT PROVEN: {gates}: changed") and "fix: " in line
    assert suite_record.refusal("/somewhere/else/run.py") is None  # not the image's suite
    data = json.loads(image_home.read_text())
    del data["files"][str(gates)]
    data["files"]["/nowhere/gone.py"] = "0" * 64
    image_home.write_text(json.dumps(data))
    found = suite_record.differences(data, suite_record.walk(data["roots"]))
    assert {(d.path, d.what) for d in found} == {(str(gates), "added"), ("/nowhere/gone.py", "removed")}
    image_home.write_text("{")
    assert "unreadable" in (suite_record.refusal(code) or "")


def test_the_benchmarks_refuse_a_verdict_naming_their_changed_gates_before_any_of_their_code_runs(
        image_home: Path, capsys) -> None:
    plant(image_home, REPO / "benchmarks" / "gates.yaml")
    with pytest.raises(SystemExit) as stopped:
        importlib.reload(benchmarks)  # the package every benchmark module is imported through
    assert stopped.value.code == ExitCode.NOT_PROVEN
    assert f"NOT PROVEN: {REPO / 'benchmarks' / 'gates.yaml'}: changed" in capsys.readouterr().err


def test_the_validation_suite_refuses_a_verdict_naming_its_changed_check(image_home: Path, capsys,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    check = next((REPO / "validation" / "checks").glob("test_*.py"))
    plant(image_home, check)
    spec = importlib.util.spec_from_file_location("validation_run", REPO / "validation" / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    monkeypatch.setattr(sys, "argv", ["run.py", "--smoke"])
    assert run.main() == ExitCode.NOT_PROVEN
    assert f"NOT PROVEN: {check}: changed" in capsys.readouterr().err


def test_a_hard_link_above_ours_is_judged_by_the_bytes_of_its_target() -> None:
    """The target as a later layer wrote it, else as our record has it, else no bytes; a link written with or
    without its leading slash names the same file; kind `file` is no symlink."""
    above = object()  # the layer: _what reads only the entry
    written = {"/Xopt/new": (["file", "NEW", ""], above)}
    expected = {"/Xopt/new": "OLD", "/Xopt/kept": "KEPT"}
    assert own_files._what("NEW", ["hardlink", "", "/Xopt/new"], written, expected) is None
    assert own_files._what("NEW", ["hardlink", "", "Xopt/new"], written, expected) is None
    assert own_files._what("KEPT", ["hardlink", "", "/Xopt/kept"], written, expected) is None
    assert own_files._what("OLD", ["hardlink", "", "/Xopt/new"], written, expected) == \
        "differs from our build's (sha256 NEW, recorded OLD)"
    assert own_files._what("GONE", ["hardlink", "", "/Xopt/gone"], written, expected) == \
        "differs from our build's (sha256 , recorded GONE)"
    assert own_files._what("link:/Xopt/new", ["hardlink", "", "/Xopt/new"], written, expected) == \
        "not the symlink to /Xopt/new our build made"
    assert own_files._what("link:/opt/a", ["symlink", "", "/opt/a"], written, expected) is None
    assert own_files._what("link:/opt/a", ["symlink", "", "/opt/b"], written, expected) == \
        "not the symlink to /opt/a our build made"
    assert own_files._what("KEPT", ["symlink", "", "/opt/b"], written, expected) == \
        "a symlink to /opt/b where our build installed a file"


def test_a_file_changed_then_removed_above_ours_is_one_whole_removed_finding_and_links_keep_their_target() -> None:
    gates = f"{HOME}/benchmarks/gates.yaml"
    found = judge([Member(gates, b"rn50: {}\n")], [Member(f"{HOME}/benchmarks/.wh.gates.yaml", b"")]).findings
    assert found == [Finding("integrity", "own-file-removed", "CRITICAL", f"removed from the image (recorded in "
                             f"{image_paths.SUITE_RECORD} of layer 1 (suite)); decides trust: the project's own suite "
                             "and gates", package=gates, installed="ngc-paddle suite", location="layer 3 (RUN step 1)",
                             source="integrity")]
    assert own_files._expected({"/a": "link:/b", "/c": "00ff"}) == {"/a": "link:/b", "/c": record_hash(b"\0\xff")}
