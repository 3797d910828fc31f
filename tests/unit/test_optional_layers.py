"""An optional layer (gpu-cu118's TensorRT, from NVIDIA's tar) that the lock leaves pending where its source
cannot be reached: recorded in the lock, built empty with one line, and absent in the image's manifest, banner
and notes; locked and installed like any layer when the source answers."""

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from ngc_paddle.flavor import resolve
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.lock.check import lock_inputs, lock_status, mismatch, without_layers
from ngc_paddle.lock.layer_args import layer_args
from ngc_paddle.lock.lock_file import Lock, lock_path, read_lock
from ngc_paddle.lock.pip_lock import check_reachable, unreachable_optional_layers
from ngc_paddle.lock.subject import ManifestFlavor
from ngc_paddle.manifest import load_manifest
from ngc_paddle.manifest.resolve import image_manifest
from ngc_paddle.manifest.schema import Flavor

REPO = Path(__file__).resolve().parents[2]
FLAVOR = "gpu-cu118"


def manifest():
    return load_manifest(REPO / "releases" / "26.12.yaml")


def down(name, source, package):
    return None if name == "pypi" else f"{source.url} cannot be reached from this host (URLError)"


def test_an_unreachable_optional_layer_is_left_pending_with_the_mirror_fix() -> None:
    m = manifest()
    pending = unreachable_optional_layers(ManifestFlavor(m, FLAVOR), REPO, prober=down)
    assert list(pending) == ["tensorrt"]
    assert "sources.nvidia-developer: https://developer.nvidia.com/" in pending["tensorrt"]
    assert "cannot be reached" in pending["tensorrt"]
    assert 'make lock FLAVOR=gpu-cu118 SOURCES="nvidia-developer=URL"' in pending["tensorrt"]
    assert unreachable_optional_layers(ManifestFlavor(m, FLAVOR), REPO, prober=lambda *a: None) == {}  # a mirror
    narrowed = without_layers(ManifestFlavor(m, FLAVOR), pending)
    assert "tensorrt" not in narrowed.spec.components
    assert narrowed.spec.layers == m.flavors[FLAVOR].layers  # the layer stays, built empty
    check_reachable(narrowed, Path("releases"), down)  # what remains needs PyPI only


def test_the_committed_lock_leaves_tensorrt_pending_and_still_matches() -> None:
    status, lock = lock_status(ManifestFlavor(manifest(), FLAVOR), REPO / "releases")
    assert status == "ok" and list(lock.pending_layers) == ["tensorrt"]
    assert not lock.layer_entries("tensorrt")
    assert "tensorrt" not in lock.inputs.components and "dali" in lock.inputs.components
    assert lock.python_versions()["nvidia-dali-cuda110"] == "1.34.0"


def test_a_lock_may_leave_out_only_the_manifests_optional_layers(tmp_path: Path) -> None:
    m = manifest()
    strict = m.model_copy(update={"flavors": {**m.flavors, FLAVOR: m.flavors[FLAVOR].model_copy(
        update={"optional_layers": {}})}})
    with pytest.raises(ManifestError, match=r"pending_layers: tensorrt left out, but the manifest does not make it "
                                            r"optional \(flavors.gpu-cu118.optional_layers\)"):
        lock_status(ManifestFlavor(strict, FLAVOR), REPO / "releases")
    shutil.copytree(REPO / "releases", tmp_path / "releases")
    path = lock_path(tmp_path / "releases", "26.12", FLAVOR)
    data = json.loads(path.read_text())
    entry = next(e for e in data["pip"] if e["name"] == "six")
    entry["layer"] = "tensorrt"
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError, match="pip entry 'six' is in a layer the lock leaves pending"):
        read_lock(path)


def test_a_complete_lock_must_install_the_optional_layer_once_it_is_no_longer_pending() -> None:
    m = manifest()
    lock = read_lock(lock_path(REPO / "releases", "26.12", FLAVOR))
    complete = Lock.model_validate({**lock.model_dump(), "pending_layers": {}})
    assert "inputs.components.tensorrt" in (mismatch(ManifestFlavor(m, FLAVOR), complete) or "")
    relocked = complete.model_copy(update={"inputs": lock_inputs(ManifestFlavor(m, FLAVOR))})
    assert "archives: component tensorrt (TensorRT-8.6.1.6.Linux.x86_64-gnu.cuda-11.8.tar.gz) is not locked" in (
        mismatch(ManifestFlavor(m, FLAVOR), relocked) or "")


def test_optional_layers_must_be_layers_of_the_flavor() -> None:
    data = manifest().flavors[FLAVOR].model_dump(exclude_none=True)
    data["optional_layers"] = {"dali": "x", "tensorrt": "y"}
    data["layers"] = ["os", "cuda", "dali", "paddle", "suite"]
    with pytest.raises(ValidationError, match=r"optional_layers \['tensorrt'\] are not in this flavor's layers"):
        Flavor.model_validate(data)


def test_the_left_out_layer_installs_nothing_and_the_image_manifest_says_why() -> None:
    m = manifest()
    resolved = resolve(REPO, "26.12", FLAVOR)
    lock = resolved.build_lock()
    spec = json.loads(layer_args(resolved, "tensorrt")["LAYER_SPEC"])
    assert spec["packages"] == [] and spec["left_out"] == lock.pending_layers["tensorrt"]
    carried = resolved.image_manifest
    assert "tensorrt" not in carried["components"] and "tensorrt" in carried["layers"]
    assert carried["left_out"]["tensorrt"]["components"]["tensorrt"]["version"] == "8.6.1.6"
    assert carried["left_out"]["tensorrt"]["reason"] == lock.pending_layers["tensorrt"]
    suite = json.loads(layer_args(resolved, "suite")["MANIFEST_JSON"])
    assert suite == carried  # what the image carries
    assert image_manifest(m, "cpu")["left_out"] == {}


@pytest.fixture
def installer():
    spec = importlib.util.spec_from_file_location("install_pip_layer", REPO / "layers/lib/install_pip_layer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_installer_says_a_left_out_layer_in_one_line_and_runs_no_pip(installer, monkeypatch, capsys) -> None:
    spec = {"release": "26.12", "flavor": FLAVOR, "layer": "tensorrt", "lock": "x", "pending": None,
            "left_out": "TensorRT comes only from NVIDIA's index: sources.nvidia unreachable", "sources": {},
            "packages": []}
    monkeypatch.setenv("LAYER_SPEC", json.dumps(spec))
    monkeypatch.setattr(installer.subprocess, "run", lambda *a, **k: pytest.fail("pip must not run"))
    installer.main()
    out = capsys.readouterr().out.splitlines()
    assert out == ["[tensorrt] left out of this image (lock pending): TensorRT comes only from NVIDIA's index: "
                   "sources.nvidia unreachable"]
    monkeypatch.setattr(installer.sys, "argv", ["install_pip_layer.py", "--left-out"])
    with pytest.raises(SystemExit) as code:
        installer.main()
    assert code.value.code == 0
    monkeypatch.setenv("LAYER_SPEC", json.dumps({**spec, "left_out": None}))
    with pytest.raises(SystemExit) as code:
        installer.main()
    assert code.value.code == 1  # install.sh goes on to install the layer


def test_the_banner_shows_a_left_out_component_as_absent(tmp_path: Path, monkeypatch, capsys) -> None:
    spec = importlib.util.spec_from_file_location("banner", REPO / "image" / "lib" / "banner.py")
    banner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(banner)
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(resolve(REPO, "26.12", FLAVOR).image_manifest))
    monkeypatch.setattr(banner, "MANIFEST", str(path))
    banner.main()
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("TensorRT"))
    assert "absent" in line and "layer tensorrt left out of this image" in line
