"""The in-image installer installs exactly the lock's entries, each source from itself only, hashes required."""

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHA_A, SHA_B, SHA_C = "a" * 64, "b" * 64, "c" * 64


@pytest.fixture
def installer():
    spec = importlib.util.spec_from_file_location("install_pip_layer", REPO / "layers/lib/install_pip_layer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SPEC = {
    "release": "26.12", "flavor": "gpu", "layer": "tensorrt", "manifest": "releases/26.12.yaml",
    "lock": "releases/26.12-gpu.lock.json", "pending": None,
    "sources": {"nvidia": {"kind": "pip-index", "location": "https://pypi.nvidia.com"},
                "pypi": {"kind": "pip-index", "location": "https://pypi.org/simple"}},
    "packages": [
        {"name": "tensorrt-cu12-libs", "version": "10.5.0", "sha256": SHA_A, "source": "nvidia",
         "component": "tensorrt"},
        {"name": "tensorrt-cu12-bindings", "version": "10.5.0", "sha256": SHA_B, "source": "nvidia",
         "component": "tensorrt-python"},
        {"name": "numpy", "version": "2.4.6", "sha256": SHA_C, "source": "pypi", "component": None},
    ],
}


def run_main(installer, monkeypatch, capsys, output: str = "", code: int = 1, spec: dict = SPEC):
    """Run main() with pip faked; returns (pip commands with their requirement files, error line or None)."""
    calls = []

    def fake_run(cmd, **kw):
        if "-r" in cmd:
            calls.append((cmd, Path(cmd[cmd.index("-r") + 1]).read_text()))
            return subprocess.CompletedProcess(cmd, code, stdout=output)
        return subprocess.CompletedProcess(cmd, 0, stdout="No broken requirements found.\n")  # pip check

    monkeypatch.setattr(installer.subprocess, "run", fake_run)
    monkeypatch.setenv("LAYER_SPEC", json.dumps(spec))
    error = None
    try:
        installer.main()
    except SystemExit as exc:
        assert exc.code == 1
        lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("NGC-PADDLE-ERROR")]
        assert len(lines) == 1
        error = lines[0]
    return calls, error


def test_requirements_pin_version_and_hash(installer) -> None:
    text = installer.requirements_text(SPEC["packages"][:2])
    assert text == (f"tensorrt-cu12-libs==10.5.0 --hash=sha256:{SHA_A}\n"
                    f"tensorrt-cu12-bindings==10.5.0 --hash=sha256:{SHA_B}\n")


def test_each_source_installs_from_itself_only(installer, monkeypatch, capsys) -> None:
    """A component pinned to nvidia never gets another index; the dependency index is never an extra index."""
    calls, error = run_main(installer, monkeypatch, capsys, code=0)
    assert error is None and len(calls) == 2
    for cmd, requirements in calls:
        assert "--extra-index-url" not in cmd and "--find-links" not in cmd
        assert cmd.count("--index-url") == 1
        assert {"--require-hashes", "--no-deps", "--only-binary=:all:"} <= set(cmd)
        index = cmd[cmd.index("--index-url") + 1]
        names = {line.split("==")[0] for line in requirements.splitlines()}
        wanted = {p["name"] for p in SPEC["packages"] if SPEC["sources"][p["source"]]["location"] == index}
        assert names == wanted
    assert {cmd[cmd.index("--index-url") + 1] for cmd, _ in calls} == {"https://pypi.nvidia.com",
                                                                        "https://pypi.org/simple"}


def test_hash_mismatch_names_the_distribution_and_both_hashes(installer, monkeypatch, capsys) -> None:
    got = "d" * 64
    out = ("ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE. If you have updated the "
           "package versions, please update the hashes. Otherwise, examine the package contents carefully; "
           "someone may have tampered with them.\n"
           "    tensorrt-cu12-bindings==10.5.0 from https://pypi.nvidia.com/x/tensorrt_cu12_bindings-10.5.0.whl "
           "(from -r /tmp/ngc-lock-x/requirements.txt (line 2)):\n"
           f"        Expected sha256 {SHA_B}\n"
           f"             Got        {got}\n")
    _, line = run_main(installer, monkeypatch, capsys, out)
    assert "layer tensorrt: tensorrt-cu12-bindings 10.5.0 (component tensorrt-python" in line
    assert f"expected {SHA_B}, got {got}" in line and "from source nvidia (https://pypi.nvidia.com)" in line


def test_missing_version_names_the_distribution(installer, monkeypatch, capsys) -> None:
    _, line = run_main(installer, monkeypatch, capsys,
                       "ERROR: No matching distribution found for tensorrt-cu12-bindings==10.5.0\n")
    assert "layer tensorrt: tensorrt-cu12-bindings 10.5.0 (component tensorrt-python, locked in " \
           "releases/26.12-gpu.lock.json) from source nvidia" in line
    assert "no longer has this version" in line


def test_unreachable_source_says_so(installer, monkeypatch, capsys) -> None:
    out = ("WARNING: Retrying ... NewConnectionError('Failed to establish a new connection')\n"
           "ERROR: No matching distribution found for tensorrt-cu12-libs==10.5.0\n")
    _, line = run_main(installer, monkeypatch, capsys, out)
    assert "tensorrt-cu12-libs 10.5.0 (component tensorrt" in line and "could not be reached" in line
    assert "SOURCES=nvidia=URL" in line


def test_a_flavor_without_a_lock_refuses_to_build(installer, monkeypatch, capsys) -> None:
    spec = {**SPEC, "pending": "needs NVIDIA's index", "packages": []}
    calls, line = run_main(installer, monkeypatch, capsys, spec=spec)
    assert calls == [] and "flavor gpu has no lock yet (needs NVIDIA's index)" in line


def test_wheel_dir_source_uses_its_folder_and_no_index(installer) -> None:
    spec = {**SPEC, "sources": {"wheelhouse": {"kind": "wheel-dir", "location": "wheelhouse/trt"}}}
    cmd = installer.pip_command(spec, "wheelhouse", "/tmp/r.txt")
    assert cmd[cmd.index("--find-links") + 1] == "/tmp/ngc/wheelhouse/trt"
    assert "--no-index" in cmd and "--index-url" not in cmd and "--extra-index-url" not in cmd
