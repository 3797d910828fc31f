"""The in-image installer names the layer, component and source when pip fails."""

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def installer():
    spec = importlib.util.spec_from_file_location("install_pip_layer", REPO / "layers/lib/install_pip_layer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SPEC = {
    "release": "26.12", "flavor": "gpu", "layer": "tensorrt", "manifest": "releases/26.12.yaml",
    "dependency_index": "https://pypi.org/simple",
    "components": [
        {"name": "tensorrt", "requirement": "tensorrt-cu12-libs==10.5.0", "package": "tensorrt-cu12-libs",
         "source": "nvidia", "source_kind": "pip-index", "location": "https://pypi.nvidia.com"},
        {"name": "tensorrt-python", "requirement": "tensorrt-cu12-bindings==10.5.0",
         "package": "tensorrt-cu12-bindings", "source": "nvidia", "source_kind": "pip-index",
         "location": "https://pypi.nvidia.com"},
    ],
}


def run_with_pip_output(installer, monkeypatch, capsys, output: str, code: int = 1) -> str:
    monkeypatch.setattr(installer.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, code, stdout=output))
    monkeypatch.setenv("LAYER_SPEC", json.dumps(SPEC))
    with pytest.raises(SystemExit) as info:
        installer.main()
    assert info.value.code == 1
    return [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("NGC-PADDLE-ERROR")][-1]


def test_missing_version_names_the_component(installer, monkeypatch, capsys) -> None:
    line = run_with_pip_output(installer, monkeypatch, capsys,
                               "ERROR: No matching distribution found for tensorrt-cu12-bindings==10.5.0\n")
    assert "layer tensorrt: component tensorrt-python (tensorrt-cu12-bindings==10.5.0)" in line
    assert "from source nvidia (https://pypi.nvidia.com): no such version" in line
    assert "flavors.gpu.components.tensorrt-python in releases/26.12.yaml" in line


def test_unreachable_source_says_so(installer, monkeypatch, capsys) -> None:
    out = ("WARNING: Retrying ... NewConnectionError('Failed to establish a new connection')\n"
           "ERROR: No matching distribution found for tensorrt-cu12-libs==10.5.0\n")
    line = run_with_pip_output(installer, monkeypatch, capsys, out)
    assert "component tensorrt (tensorrt-cu12-libs==10.5.0)" in line and "could not be reached" in line


def test_pip_command_pins_wheels_and_uses_the_source_index(installer) -> None:
    cmd = installer.pip_command(SPEC, SPEC["components"])
    assert cmd[cmd.index("--index-url") + 1] == "https://pypi.nvidia.com"
    assert cmd[cmd.index("--extra-index-url") + 1] == "https://pypi.org/simple"
    assert cmd[cmd.index("--only-binary") + 1] == "tensorrt-cu12-libs,tensorrt-cu12-bindings"
    assert cmd[-2:] == ["tensorrt-cu12-libs==10.5.0", "tensorrt-cu12-bindings==10.5.0"]


def test_wheel_dir_source_uses_find_links(installer) -> None:
    comp = dict(SPEC["components"][0], source="wheelhouse", source_kind="wheel-dir", location="wheelhouse/trt")
    cmd = installer.pip_command(SPEC, [comp])
    assert cmd[cmd.index("--find-links") + 1] == "/wheelhouse/trt"
