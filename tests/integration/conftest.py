"""Integration fixtures: a running engine, the default flavor built once, and scratch copies of the repo.

These tests build and run real images. `make test` (and .ci/run) start the engine first; a
missing engine is a failure with the fix, not a skip.
"""

import json
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from ngc_paddle.image_build.scratch import scratch_copy
from ngc_paddle.manifest import load_manifest
from ngc_paddle.manifest.loader import latest_release

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "ngc_paddle.cli"]


@dataclass
class Built:
    image: str
    release: str
    flavor: str
    manifest: object
    report: dict
    output: str


def run_cli(*args: str, root: Path = REPO, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "--root", str(root), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)


def docker(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=timeout)


@pytest.fixture(scope="session", autouse=True)
def engine() -> None:
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        pytest.fail("no Docker engine answers; fix: run `make toolchain` (or `make test`, which starts it)")


@pytest.fixture(scope="session")
def built() -> Built:
    """The newest release's default flavor, built with `ngc-paddle build` as `make image` does."""
    release = latest_release(REPO / "releases")
    manifest = load_manifest(REPO / "releases" / f"{release}.yaml")
    proc = run_cli("build")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    flavor = manifest.default_flavor
    report = json.loads((REPO / "build" / "reports" / f"{release}-{flavor}" / "build.json").read_text())
    return Built(f"{manifest.image}:{release}-{flavor}", release, flavor, manifest, report, proc.stdout)


@pytest.fixture(scope="session")
def built_cu118() -> str:
    """The GPU flavor that builds from PyPI alone (CUDA 11.8), built as `make image FLAVOR=gpu-cu118` does."""
    proc = run_cli("build", "--flavor", "gpu-cu118", timeout=3600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    return next(line.split()[2].rstrip(",") for line in proc.stdout.splitlines()
                if line.startswith(("==> tagged", "==> unchanged")))


def _sigint_as_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# Start a command that a test interrupts (os.killpg(pid, SIGINT)): a session of its own, and SIGINT at its default
# disposition. A test run started in the background by a non-interactive shell inherits SIGINT ignored, and Python
# then installs no KeyboardInterrupt handler: the Ctrl-C a test sends would be lost.
INTERRUPTIBLE = {"start_new_session": True, "preexec_fn": _sigint_as_default}


EXIT_OF_VERDICT = {"PASS": 0, "FAIL": 1, "NOT PROVEN": 3, "SMOKE": 0}


@pytest.fixture
def scratch_repo(tmp_path: Path) -> Path:
    """A copy of the repository whose images are named ngc-paddle-itest, so tests can break it freely."""
    return scratch_copy(REPO, tmp_path / "repo", "ngc-paddle-itest")
