"""A layer's checks recorded on its image: a build that gives the same image takes the record, anything the checks'
outcome depends on that changed runs them again, and a failure is never recorded."""

import json
import os
import shutil
from pathlib import Path

import pytest

from ngc_paddle.host_errors import BuildError
from ngc_paddle.image_build import build_flavor, layer_check_record
from ngc_paddle.image_build.build_report import LayerResult
from ngc_paddle.validate_layer import LayerCheckResult

IMAGE_ID = "sha256:" + "ab" * 32
MANIFEST = {"release": "26.12", "components": {"paddle": {"version": "3.3.1"}}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A checkout with the checks' code (validation/, ngc_common/, the module that runs them)."""
    root = tmp_path / "repo"
    for path, text in (("validation/layers/test_linking.py", "def test_a(): pass\n"),
                       ("ngc_common/image_paths.py", "HOME = '/opt/ngc-paddle'\n"),
                       ("ngc_paddle/validate_layer.py", "# runs the checks\n")):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    layer_check_record.checks_code_digest.cache_clear()
    yield root
    layer_check_record.checks_code_digest.cache_clear()


class Checks:
    """check_layer faked: writes the reports a run writes, counts its calls, fails where told."""

    def __init__(self, failed: list[dict] | None = None) -> None:
        self.calls: list[tuple[str, str, str | None]] = []
        self.failed = failed or []

    def __call__(self, root: Path, image: str, manifest: dict, layer: str, output: Path, marker: str = "fast",
                 platform: str | None = None) -> LayerCheckResult:
        self.calls.append((image, marker, platform))
        output.mkdir(parents=True, exist_ok=True)
        for name in layer_check_record.REPORTS:
            (output / name).write_text(f"{name} of run {len(self.calls)}\n")
        return LayerCheckResult(layer, passed=3, skipped=1, failed=self.failed, seconds=54.7,
                                report=output / "validation.json")


def check(root: Path, monkeypatch: pytest.MonkeyPatch, checks: Checks, image_id: str | None = IMAGE_ID,
          manifest: dict = MANIFEST, gpu: bool = False, platform: str = "linux/amd64") -> tuple[LayerResult, list]:
    monkeypatch.setattr(build_flavor, "check_layer", checks)
    result = LayerResult("paddle", "paddle-cpu", "ngc-paddle-layers:26.12-cpu-paddle", image_id=image_id,
                         status="cached")
    said: list[str] = []
    build_flavor._check_layer(root, manifest, result, "[3/4]", root / "build" / "logs", said.append, platform, gpu)
    return result, said


def test_the_same_image_takes_the_record_with_its_reports(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checks = Checks()
    first, said = check(root, monkeypatch, checks)
    assert said == ["    [3/4] paddle: checks 3 passed, 1 skipped in 54.7s"] and len(checks.calls) == 1
    assert first.checks == {"passed": 3, "skipped": 1, "failed": [], "seconds": 54.7,
                            "report": "build/logs/paddle-checks/validation.json", "recorded": False}
    reports = root / "build" / "logs" / "paddle-checks"
    for name in layer_check_record.REPORTS:
        (reports / name).unlink()  # the next build's folder starts empty: the record brings them back
    again, said = check(root, monkeypatch, checks)
    assert len(checks.calls) == 1, "checked again"
    assert said == ["    [3/4] paddle: checks 3 passed, 1 skipped on this image before (abababababab), not run again"]
    assert again.checks == {**first.checks, "recorded": True} and again.status == "cached"
    for name in layer_check_record.REPORTS:
        assert (reports / name).read_text() == f"{name} of run 1\n"


@pytest.mark.parametrize("change", ["image", "manifest", "gpu", "platform", "check code", "runner code"])
def test_whatever_the_outcome_rests_on_changed_runs_the_checks_again(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     change: str) -> None:
    checks = Checks()
    check(root, monkeypatch, checks)
    kwargs: dict = {}
    if change == "image":
        kwargs["image_id"] = "sha256:" + "cd" * 32
    elif change == "manifest":
        kwargs["manifest"] = {**MANIFEST, "release": "27.01"}
    elif change == "gpu":
        kwargs["gpu"] = True
    elif change == "platform":
        kwargs["platform"] = "linux/arm64"
    else:
        changed = root / ("validation/layers/test_linking.py" if change == "check code"
                          else "ngc_paddle/validate_layer.py")
        changed.write_text(changed.read_text() + "# changed\n")
        layer_check_record.checks_code_digest.cache_clear()  # a build is one process: its code does not change
    _, said = check(root, monkeypatch, checks, **kwargs)
    assert len(checks.calls) == 2 and said[0].endswith(" in 54.7s"), said


def test_a_failed_run_is_not_recorded(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checks = Checks(failed=[{"id": "link.paddle", "message": "expected every library to resolve"}])
    for _ in range(2):
        with pytest.raises(BuildError, match=r"check link\.paddle failed"):
            check(root, monkeypatch, checks)
    assert len(checks.calls) == 2 and not list((layer_check_record.default_folder()).glob("*"))


def test_an_image_without_an_id_is_checked_and_not_recorded(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checks = Checks()
    for _ in range(2):
        check(root, monkeypatch, checks, image_id=None)
    assert len(checks.calls) == 2 and not (layer_check_record.default_folder()).exists()


@pytest.mark.parametrize("damage", ["result not json", "result of another layer", "no validation.json",
                                    "counts not numbers", "another format"])
def test_a_record_that_cannot_be_read_runs_the_checks_again(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                            damage: str) -> None:
    checks = Checks()
    check(root, monkeypatch, checks)
    (record,) = (layer_check_record.default_folder()).iterdir()
    result = record / "result.json"
    stored = json.loads(result.read_text())
    if damage == "result not json":
        result.write_text("{")
    elif damage == "result of another layer":
        result.write_text(json.dumps({**stored, "layer": "dali"}))
    elif damage == "no validation.json":
        (record / "validation.json").unlink()
    elif damage == "counts not numbers":
        result.write_text(json.dumps({**stored, "passed": "three"}))
    else:
        result.write_text(json.dumps({**stored, "format": 2}))
    _, said = check(root, monkeypatch, checks)
    assert len(checks.calls) == 2 and said[0].endswith(" in 54.7s"), said


def test_a_record_already_there_stands(root: Path) -> None:
    """Two builds of one image at once: the second to finish keeps the first's record and leaves no staging folder."""
    folder, records = root / "out", layer_check_record.default_folder()
    folder.mkdir()
    (folder / "validation.json").write_text("{}")
    first = LayerCheckResult("os", passed=4, seconds=3.1, report=folder / "validation.json")
    layer_check_record.save(records, "k", "os", first)
    layer_check_record.save(records, "k", "os", LayerCheckResult("os", passed=5, report=folder / "validation.json"))
    assert [p.name for p in records.iterdir()] == ["k"]
    loaded = layer_check_record.load(records, "k", "os", root / "again")
    assert loaded is not None and (loaded.passed, loaded.skipped, loaded.seconds) == (4, 0, 3.1)
    assert loaded.failed == [] and loaded.report == root / "again" / "validation.json"


def test_a_copy_of_the_checkout_finds_the_same_record(root: Path, tmp_path: Path) -> None:
    """The tests' scratch copies (other roots, the same files) share build/cache: their keys must be the same."""
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    same = [layer_check_record.key(r, IMAGE_ID, "linux/amd64", "os", "fast", MANIFEST, False) for r in (root, copy)]
    assert same[0] == same[1]


def test_the_records_beyond_the_limit_go_oldest_used_first(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layer_check_record, "MAX_ENTRIES", 2)
    folder, records = root / "out", layer_check_record.default_folder()
    folder.mkdir()
    (folder / "validation.json").write_text("{}")
    result = LayerCheckResult("os", passed=1, report=folder / "validation.json")
    for n, name in enumerate(("a", "b")):
        layer_check_record.save(records, name, "os", result)
        os.utime(records / name, (1000 + n, 1000 + n))
    assert layer_check_record.load(records, "a", "os", root / "again") is not None  # used: now the newest
    layer_check_record.save(records, "c", "os", result)
    assert sorted(p.name for p in records.iterdir()) == ["a", "c"]


def test_the_records_live_in_the_users_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One for every checkout (the key holds the checks' code), as the scan's layer cache; the variable overrides."""
    monkeypatch.delenv(layer_check_record.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert layer_check_record.default_folder() == tmp_path / "xdg" / "ngc-paddle" / "layer-checks"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert layer_check_record.default_folder() == tmp_path / "home" / ".cache" / "ngc-paddle" / "layer-checks"
