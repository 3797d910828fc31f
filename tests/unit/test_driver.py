"""Driver requirements: derived from one table, stated the same by the label, notes and entrypoint (no GPU)."""

import json
import os
import re
import subprocess
from pathlib import Path
from types import MappingProxyType

import pytest

from ngc_paddle.driver import LIMITS, driver_sentence, nvidia_require_cuda, requirement
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.manifest import load_manifest
from ngc_paddle.manifest.resolve import image_manifest

REPO = Path(__file__).resolve().parents[2]

ENTRYPOINT_PART = REPO / "image/entrypoint.d/25-driver-version.sh"


@pytest.mark.parametrize("cuda, minimum, full", [
    ("12.6.3", "525.60.13", "560.28.03"),  # any 12.x runs on 525.60.13; PTX JIT of 12.6 needs R560
    ("11.8.0", "450.80.02", "520.61.05"),
    ("12.0.1", "525.60.13", "525.60.13"),
])
def test_minimum_and_full_driver_per_cuda(cuda: str, minimum: str, full: str) -> None:
    req = requirement(cuda)
    assert (req.minimum, req.full) == (minimum, full)
    assert req.limited == (minimum != full)


def test_unknown_cuda_has_no_driver_facts() -> None:
    with pytest.raises(KeyError, match=r"no driver facts for CUDA 12\.9"):
        requirement("12.9.1")


def test_label_admits_only_drivers_that_run_the_image() -> None:
    manifest = load_manifest(REPO / "releases/26.12.yaml")
    for flavor, minimum in (("gpu", "525.60.13"), ("gpu-cu118", "450.80.02")):
        cuda = manifest.flavors[flavor].cuda
        assert nvidia_require_cuda(cuda) == f"driver>={minimum}"
        resolved = ResolvedRelease(REPO, manifest, MappingProxyType({})).flavor(flavor)
        assert resolved.layer_args("cuda")["NVIDIA_REQUIRE_CUDA"] == f"driver>={minimum}"
        baked = image_manifest(manifest, flavor)["cuda"]
        assert (baked["min_driver"], baked["nvidia_require_cuda"]) == (minimum, f"driver>={minimum}")
        assert baked["full_driver"] == requirement(cuda.version).full


def test_sentence_states_limits_and_no_forward_compatibility() -> None:
    text = driver_sentence("26.12", "12.6.3")
    assert "needs NVIDIA driver 525.60.13 or later" in text
    assert "older than 560.28.03" in text and "PTX JIT" in text and "560.28.03 or later for full" in text
    assert "ships no CUDA forward-compatibility package" in text
    assert "R470" not in text and "only supports particular drivers" not in text
    same = driver_sentence("23.01", "12.0.1")  # minimum == full: no limits to tell
    assert "with limits" not in same and "525.60.13 or later (Linux), the driver of CUDA 12.0" in same


def test_committed_notes_state_the_derived_requirements() -> None:
    """The generated notes and support matrix in the repo say what driver.py derives, nothing older."""
    manifest = load_manifest(REPO / "releases/26.12.yaml")
    notes = (REPO / "release-notes/26.12.md").read_text()
    for name, flavor in manifest.flavors.items():
        if flavor.cuda:
            assert f"{name}: {driver_sentence('26.12', flavor.cuda.version)}" in notes.splitlines()
    assert "compatibility package only supports" not in notes
    matrix = (REPO / "release-notes/support-matrix.md").read_text()
    assert "| 26.12 | gpu | 12.6.3 | 525.60.13 / 560.28.03 |" in matrix


def test_manifest_may_not_restate_driver_figures(current_manifest_data, write_manifest) -> None:
    from ngc_paddle.host_errors import ManifestError

    data = json.loads(json.dumps(current_manifest_data))
    data["flavors"]["gpu"]["cuda"]["min_driver"] = "470.57"
    with pytest.raises(ManifestError, match=r"flavors\.gpu\.cuda\.min_driver"):
        load_manifest(write_manifest(data))
    data["flavors"]["gpu"]["cuda"] = {"version": "12.9.1"}
    with pytest.raises(ManifestError, match=r"no driver facts for CUDA 12\.9"):
        load_manifest(write_manifest(data))


def _start(tmp_path: Path, flavor: str, smi: str | None, quiet: bool = False) -> subprocess.CompletedProcess:
    """Source the entrypoint part as the entrypoint does (bash, set -e), a fake nvidia-smi on PATH."""
    manifest = load_manifest(REPO / "releases/26.12.yaml")
    baked = tmp_path / "manifest.json"
    baked.write_text(json.dumps(image_manifest(manifest, flavor)))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if smi is not None:
        fake = bin_dir / "nvidia-smi"
        fake.write_text(f"#!/bin/sh\n{smi}\n")
        fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "NGC_PADDLE_MANIFEST": str(baked),
           "NVIDIA_REQUIRE_CUDA": image_manifest(manifest, flavor)["cuda"]["nvidia_require_cuda"]}
    if quiet:
        env["NGC_PADDLE_QUIET"] = "1"
    script = f'set -e; . {ENTRYPOINT_PART}; echo "cpu_only=${{NGC_PADDLE_CPU_ONLY:-0}}"'
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("flavor, driver, expected", [
    ("gpu", "470.57.02", "error"),  # the data-center branch the old notes promised: cannot run
    ("gpu", "525.60.12", "error"),
    ("gpu", "525.60.13", "warning"),
    ("gpu", "535.104.05", "warning"),
    ("gpu", "560.28.03", "none"),
    ("gpu", "570.86.15", "none"),
    ("gpu-cu118", "450.51.06", "error"),
    ("gpu-cu118", "470.57.02", "warning"),
    ("gpu-cu118", "535.104.05", "none"),
])
def test_entrypoint_judges_the_host_driver(tmp_path: Path, flavor: str, driver: str, expected: str) -> None:
    proc = _start(tmp_path, flavor, f"echo '{driver}'; echo '{driver}'")  # two GPUs: one line each
    assert proc.returncode == 0, proc.stderr
    req = requirement(image_manifest(load_manifest(REPO / "releases/26.12.yaml"), flavor)["cuda"]["version"])
    lines = proc.stderr.strip().splitlines()
    if expected == "error":
        assert len(lines) == 1 and lines[0].startswith(f"ERROR: NVIDIA driver {driver} cannot run CUDA "), lines
        assert f"needs driver {req.minimum} or later" in lines[0] and "no CUDA forward-compatibility" in lines[0]
        assert proc.stdout.strip() == "cpu_only=1"
    elif expected == "warning":
        assert len(lines) == 1 and lines[0].startswith(f"WARNING: NVIDIA driver {driver} is older than {req.full}")
        assert LIMITS in lines[0]
        assert proc.stdout.strip() == "cpu_only=0"
    else:
        assert lines == [] and proc.stdout.strip() == "cpu_only=0"


def test_entrypoint_quiet_keeps_only_the_error(tmp_path: Path) -> None:
    assert _start(tmp_path, "gpu", "echo 535.104.05", quiet=True).stderr == ""
    error = _start(tmp_path, "gpu", "echo 470.57.02", quiet=True)
    assert re.match(r"ERROR: NVIDIA driver 470\.57\.02 ", error.stderr)


@pytest.mark.parametrize("smi", [None, "echo 'Failed to initialize NVML: Driver/library version mismatch'; exit 9",
                                 "exit 0"])
def test_entrypoint_without_a_readable_version_says_nothing_and_starts(tmp_path: Path, smi: str | None) -> None:
    if Path("/proc/driver/nvidia/version").exists():
        pytest.skip("this host has an NVIDIA driver: the fallback would read its real version")
    proc = _start(tmp_path, "gpu", smi)
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout.strip() == "cpu_only=0"
