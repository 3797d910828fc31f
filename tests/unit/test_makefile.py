"""Every documented make target parses (a dry run), so a broken Makefile fails in seconds, not in CI."""

import subprocess
from pathlib import Path

import pytest

TARGETS = ["image", "test", "unit", "integration", "lint", "toolchain", "validate", "scan", "release", "bake-print",
           "bench-build", "bench-validate", "bench-input", "bench-overhead", "clean", "distclean", "help"]


@pytest.mark.parametrize("target", TARGETS)
def test_make_target_dry_runs(repo: Path, target: str) -> None:
    proc = subprocess.run(["make", "-n", target], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
