"""The resolved flavor: derived once from the manifest and the lock, frozen, and what each step reads of it."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from ngc_paddle.flavor import ResolvedRelease, resolve
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.manifest.resolve import image_manifest


@pytest.fixture
def releases(tmp_path: Path, repo: Path) -> Path:
    shutil.copytree(repo / "releases", tmp_path / "releases")
    return tmp_path


def test_a_flavor_resolves_its_names_lock_and_image_manifest(releases: Path) -> None:
    flavor = resolve(releases, "26.12", "cpu", {"pypi": "https://mirror.example/simple"})
    assert flavor.release == "26.12" and flavor.name == "cpu" and flavor.root == releases.resolve()
    assert flavor.tags == ("ngc-paddle:26.12-cpu", "ngc-paddle:26.12")  # cpu is the default flavor
    assert flavor.layer_tags == {"os": "ngc-paddle-layers:26.12-cpu-os", "dali": "ngc-paddle-layers:26.12-cpu-dali",
                                 "paddle": "ngc-paddle-layers:26.12-cpu-paddle", "suite": "ngc-paddle:26.12-cpu"}
    assert flavor.manifest.sources["pypi"].url == "https://mirror.example/simple"  # the run's mirror, applied
    assert flavor.image_manifest == json.loads(json.dumps(image_manifest(flavor.manifest, "cpu",
                                                                         flavor.lock.python_versions())))
    assert flavor.image_manifest["locked_python"]["pip"] == next(e.version for e in flavor.lock.pip if e.name == "pip")
    assert flavor.build_lock().flavor == "cpu" and flavor.lock_file.name == "26.12-cpu.lock.json"
    assert not flavor.needs_gpu and resolve(releases, "26.12", "gpu-cu118").needs_gpu


def test_it_is_frozen_and_a_digest_makes_a_copy(releases: Path) -> None:
    flavor = resolve(releases, "26.12", "cpu")
    with pytest.raises(dataclasses.FrozenInstanceError):
        flavor.name = "gpu"  # type: ignore[misc]
    flavor.image_manifest["flavor"] = "changed"  # a copy: the resolved flavor keeps its own
    assert flavor.image_manifest["flavor"] == "cpu"
    pinned = flavor.with_digest("sha256:" + "a" * 64)
    assert pinned.reference == "ngc-paddle@sha256:" + "a" * 64 and flavor.reference == "ngc-paddle:26.12-cpu"
    assert pinned.with_digest("reg:5000/ngc-paddle@sha256:" + "b" * 64).digest.startswith("reg:5000/")


def test_a_flavor_without_a_usable_lock_resolves_and_its_build_refuses_it(releases: Path) -> None:
    pending = resolve(releases, "26.12", "gpu")
    assert pending.lock is None and "NVIDIA's index" in pending.pending
    with pytest.raises(ManifestError, match=r"26\.12-gpu\.lock\.json: \(file\): flavor gpu has no lock yet"):
        pending.build_lock()
    lock = releases / "releases" / "26.12-cpu.lock.json"
    lock.write_text(lock.read_text().replace('"python": "3.11"', '"python": "3.12"', 1))
    stale = resolve(releases, "26.12", "cpu")
    with pytest.raises(ManifestError, match=r"inputs\.python: the manifest says 3\.11, the lock 3\.12"):
        stale.build_lock()


def test_bad_input_is_one_line_before_anything_runs(releases: Path) -> None:
    with pytest.raises(ManifestError, match="has no flavor 'rocm'"):
        resolve(releases, "26.12", "rocm")
    with pytest.raises(ManifestError, match="has no source 'nosuch'"):
        ResolvedRelease.load(releases, "26.12", {"nosuch": "https://m.example/s"})


def test_the_previous_release_is_read_once_and_only_when_asked(releases: Path, monkeypatch) -> None:
    from ngc_paddle import flavor as module

    loaded: list[str] = []
    real = module.load_manifest
    monkeypatch.setattr(module, "load_manifest", lambda path: loaded.append(path.name) or real(path))
    release = ResolvedRelease.load(releases, "26.12")
    release.flavor("cpu")
    assert loaded == ["26.12.yaml"]
    previous = release.previous_release
    assert previous.release == "23.01" and previous is release.previous_release and previous.sources == {}
    assert loaded == ["26.12.yaml", "23.01.yaml"]
    assert previous.has_flavor("gpu") and not previous.has_flavor("cpu")  # cpu is new since 23.01
    assert previous.flavor("gpu").pending and previous.previous_release is None
