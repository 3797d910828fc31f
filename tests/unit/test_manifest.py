"""A manifest that is wrong in any way fails with one line naming the file, the field and the fix."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest

from ngc_paddle.host_errors import ManifestError
from ngc_paddle.manifest import find_manifest, load_manifest
from ngc_paddle.manifest.consistency import cuda_major_of


def test_every_committed_manifest_loads(repo: Path) -> None:
    paths = sorted((repo / "releases").glob("*.yaml"))
    assert paths, "no manifests in releases/"
    for path in paths:
        manifest = load_manifest(path)
        assert manifest.release == path.stem
        assert manifest.default_flavor in manifest.flavors


def test_current_release_has_cpu_and_gpu_flavors(current_manifest_data: dict, write_manifest) -> None:
    manifest = load_manifest(write_manifest(current_manifest_data))
    assert {"cpu", "gpu"} <= set(manifest.flavors)
    gpu = manifest.flavors["gpu"]
    assert gpu.cuda is not None and gpu.layers == ["os", "cuda", "dali", "tensorrt", "paddle", "suite"]
    assert manifest.flavors["cpu"].cuda is None


def _broken(data: dict, edit) -> dict:
    data = copy.deepcopy(data)
    edit(data)
    return data


def _error(write_manifest, data: dict, name: str | None = None) -> str:
    path = write_manifest(data, name)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    message = str(info.value)
    assert "\n" not in message, "errors must be one line"
    assert message.startswith(str(path)), "errors must name the file"
    return message


def test_unknown_key_is_named(current_manifest_data, write_manifest) -> None:
    def edit(d):
        d["flavors"]["cpu"]["components"]["paddle"]["verison"] = "3.3.1"

    msg = _error(write_manifest, _broken(current_manifest_data, edit))
    assert "flavors.cpu.components.paddle.verison: unknown key" in msg
    assert "fix:" in msg


def test_bad_pip_version(current_manifest_data, write_manifest) -> None:
    def edit(d):
        d["flavors"]["cpu"]["components"]["paddle"]["version"] = "3.3.x"

    msg = _error(write_manifest, _broken(current_manifest_data, edit))
    assert "flavors.cpu.components.paddle" in msg and "'3.3.x' is not a PEP 440 version" in msg


def test_cuda12_dali_in_cuda11_flavor(current_manifest_data, write_manifest) -> None:
    def edit(d):
        gpu = d["flavors"]["gpu"]
        gpu["cuda"] = {"version": "11.8.0"}
        for comp in gpu["components"].values():  # make everything else CUDA 11 so DALI is the culprit
            if comp.get("package", "").endswith("-cu12"):
                comp["package"] = comp["package"].replace("-cu12", "-cu11")
            if "cu12-" in comp.get("package", ""):
                comp["package"] = comp["package"].replace("cu12-", "cu11-")
            if comp.get("cuda") == 12:
                comp["cuda"] = 11
        for name in ("cuda-runtime", "cuda-nvrtc"):
            gpu["components"][name]["version"] = "11.8.89"
        del gpu["components"]["nvjitlink"]

    msg = _error(write_manifest, _broken(current_manifest_data, edit))
    assert "flavors.gpu.components.dali" in msg
    assert "nvidia-dali-cuda120 is built for CUDA 12 but flavor 'gpu' declares CUDA 11.8.0" in msg
    assert "fix: pin a CUDA 11 build" in msg


def test_missing_component_a_layer_needs(current_manifest_data, write_manifest) -> None:
    def edit(d):
        del d["flavors"]["cpu"]["components"]["dali"]

    msg = _error(write_manifest, _broken(current_manifest_data, edit))
    assert "layer 'dali' needs component(s) ['dali']" in msg and "flavors.cpu.components" in msg


def test_paddle_built_for_another_tensorrt(current_manifest_data, write_manifest) -> None:
    def edit(d):
        d["flavors"]["gpu"]["components"]["tensorrt"]["version"] = "8.6.1"
        d["flavors"]["gpu"]["components"]["tensorrt-python"]["version"] = "8.6.1"

    msg = _error(write_manifest, _broken(current_manifest_data, edit))
    assert "built against tensorrt 10.5 but the flavor pins tensorrt 8.6.1" in msg


def test_cuda_layer_in_cpu_flavor(current_manifest_data, write_manifest) -> None:
    def edit(d):
        d["flavors"]["cpu"]["layers"] = ["os", "cuda", "dali", "paddle", "suite"]

    msg = _error(write_manifest, _broken(current_manifest_data, edit))
    assert "flavors.cpu.layers" in msg and "need a CUDA flavor" in msg


def test_layers_out_of_order(current_manifest_data, write_manifest) -> None:
    def edit(d):
        d["flavors"]["cpu"]["layers"] = ["os", "paddle", "dali", "suite"]

    msg = _error(write_manifest, _broken(current_manifest_data, edit))
    assert "layers must stack in the order" in msg and "write ['os', 'dali', 'paddle', 'suite']" in msg


def test_undefined_source(current_manifest_data, write_manifest) -> None:
    def edit(d):
        d["flavors"]["cpu"]["components"]["paddle"]["source"] = "internal-mirror"

    msg = _error(write_manifest, _broken(current_manifest_data, edit))
    assert "source 'internal-mirror' is not defined" in msg


def test_gpu_wheel_in_cpu_flavor(current_manifest_data, write_manifest) -> None:
    def edit(d):
        d["flavors"]["cpu"]["components"]["paddle"]["package"] = "paddlepaddle-gpu"

    msg = _error(write_manifest, _broken(current_manifest_data, edit))
    assert "a CPU flavor cannot ship paddlepaddle-gpu" in msg


def test_release_must_match_file_name(current_manifest_data, write_manifest) -> None:
    msg = _error(write_manifest, current_manifest_data | {"release": "26.11"}, name="26.12")
    assert "does not match the file name" in msg


def test_bad_release_id(current_manifest_data, write_manifest) -> None:
    msg = _error(write_manifest, current_manifest_data | {"release": "2026-12"})
    assert "must be YY.MM" in msg


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "26.12.yaml"
    path.write_text("release: '26.12'\nflavors: [\n  cpu: {\n")
    with pytest.raises(ManifestError, match=r"26\.12\.yaml: \(file\): not valid YAML at line \d+"):
        load_manifest(path)


def test_unknown_release_lists_known_ones(repo: Path) -> None:
    with pytest.raises(ManifestError) as info:
        find_manifest("99.01", repo / "releases")
    assert "no manifest for release 99.01" in str(info.value) and "known releases:" in str(info.value)


def test_cuda_major_read_from_package_names(current_manifest_data, write_manifest) -> None:
    gpu = load_manifest(write_manifest(current_manifest_data)).flavors["gpu"].components
    assert cuda_major_of(gpu["dali"]) == 12
    assert cuda_major_of(gpu["cublas"]) == 12
    assert cuda_major_of(gpu["tensorrt"]) == 12
    assert cuda_major_of(gpu["paddle"]) == 12  # explicit: the package name does not say
    assert cuda_major_of(gpu["python"]) is None


def test_cli_check_exits_2_with_one_line(current_manifest_data, write_manifest, repo: Path) -> None:
    bad = _broken(current_manifest_data, lambda d: d["flavors"]["cpu"]["components"]["dali"].update(version="two"))
    path = write_manifest(bad)
    proc = subprocess.run([sys.executable, "-m", "ngc_paddle.cli", "manifest", "check", str(path)],
                          capture_output=True, text=True, cwd=repo)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: flavors.cpu.components.dali")


def test_toolkit_libraries_follow_the_flavor_cuda_version(current_manifest_data, write_manifest) -> None:
    def edit(d):
        d["flavors"]["gpu"]["components"]["cuda-runtime"]["version"] = "12.9.79"

    msg = _error(write_manifest, _broken(current_manifest_data, edit))
    assert "flavors.gpu.components.cuda-runtime: nvidia-cuda-runtime-cu12 12.9.79 belongs to CUDA 12.9" in msg
