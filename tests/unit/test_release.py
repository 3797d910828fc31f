"""Release notes, driver requirements and `release new`, on the host (no engine, no network)."""

import shutil
from pathlib import Path

import pytest

from ngc_paddle.manifest import load_manifest
from ngc_paddle.release.new import create
from ngc_paddle.release.notes import changes, render, support_matrix


def test_changes_since_the_previous_release(repo: Path) -> None:
    old, new = load_manifest(repo / "releases/23.01.yaml"), load_manifest(repo / "releases/26.12.yaml")
    lines = changes(old.flavors["gpu"], new.flavors["gpu"])
    assert lines[0] == f"Based on CUDA {new.flavors['gpu'].cuda.version} (was 12.0.1)"
    assert f"cudnn: 8.7.0.84 -> {new.flavors['gpu'].components['cudnn'].version} (up)" in lines
    assert "os: ubuntu:20.04 20.04 -> debian:bookworm-slim 12 (changed)" in lines
    assert f"New: cufft {new.flavors['gpu'].components['cufft'].version}" in lines
    assert changes(None, new.flavors["cpu"]) == ["New flavor in this release."]
    assert changes(new.flavors["cpu"], new.flavors["cpu"]) == ["No component changed."]


def fake_index(newest: dict[str, str]):
    return lambda package, index, python: newest.get(package)


@pytest.fixture
def tree(tmp_path: Path, repo: Path) -> Path:
    shutil.copytree(repo / "releases", tmp_path / "releases")
    return tmp_path


def test_release_new_proposes_newest_versions_within_the_rules(tree: Path) -> None:
    newest = {"paddlepaddle": "3.4.0", "nvidia-dali-cuda120": "2.5.0", "pytest": "9.1.0",
              "nvidia-cuda-runtime-cu12": "12.9.79",
              "tensorrt-cu12-libs": "10.8.0", "numpy": "2.5.5", "paddle2onnx": "2.2.0"}
    path, diff, proposals = create("27.01", "26.12", tree, lookup=fake_index(newest), say=lambda _l: None)
    new = load_manifest(path)  # the result is a valid manifest
    assert new.release == "27.01"
    cpu, cu118 = new.flavors["cpu"].components, new.flavors["gpu-cu118"].components
    assert cpu["paddle"].version == "3.4.0" and cpu["dali"].version == "2.5.0" and cpu["pytest"].version == "9.1.0"
    assert cu118["numpy"].version == "1.26.4" and cu118["paddle2onnx"].version == "1.3.1"  # held
    # Paddle is built against TensorRT 10.5: TensorRT 10.8 is proposed, breaks the rule, and is taken back.
    assert new.flavors["gpu"].components["tensorrt"].version == "10.5.0"
    # The CUDA 12.9 runtime does not belong to the flavor's CUDA 12.6: taken back too.
    assert new.flavors["gpu"].components["cuda-runtime"].version == "12.6.77"
    notes = {(p.package, p.old): p.note for p in proposals}
    assert notes[("tensorrt-cu12-libs", "10.5.0")].startswith("kept: 10.8.0 breaks a rule")
    assert notes[("numpy", "1.26.4")].startswith("held: Paddle 2.6")
    assert notes[("paddlepaddle-gpu", "3.3.1")].startswith("kept: https://www.paddlepaddle.org.cn")  # no answer
    assert '-release: "26.12"' in diff and '+release: "27.01"' in diff
    assert "-      paddle: {layer: paddle, kind: pip, package: paddlepaddle, version: 3.3.1" in diff
    assert "# " in path.read_text().splitlines()[0]  # comments survive


def test_release_new_refuses_to_overwrite(tree: Path) -> None:
    from ngc_paddle.errors import ManifestError

    create("27.01", "26.12", tree, lookup=fake_index({}), say=lambda _l: None)
    with pytest.raises(ManifestError, match="exists already"):
        create("27.01", "26.12", tree, lookup=fake_index({}), say=lambda _l: None)


def test_notes_of_two_consecutive_manifests(tree: Path) -> None:
    path, _diff, _ = create("27.01", "26.12", tree, lookup=fake_index({"paddlepaddle": "3.4.0"}),
                            say=lambda _l: None)
    previous, current = load_manifest(tree / "releases/26.12.yaml"), load_manifest(path)
    text = render(current, previous, {"cpu": {"image": "ngc-paddle:27.01-cpu", "stages": {}}}, "Known: none.")
    section = text.split("Changes since 26.12 (cpu):", 1)[1].split("Changes since", 1)[0]
    assert [line for line in section.splitlines() if line.startswith("- ")] == ["- paddle: 3.3.1 -> 3.4.0 (up)"]
    assert text.startswith("# PaddlePaddle Release 27.01") and "## Driver Requirements" in text
    matrix = support_matrix([previous, current])
    assert "| 27.01 | cpu |" in matrix and "| 26.12 | gpu |" in matrix
