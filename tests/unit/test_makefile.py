"""Every documented make target parses (a dry run), so a broken Makefile fails in seconds, not in CI."""

import subprocess
from pathlib import Path

import pytest

TARGETS = ["image", "test", "unit", "integration", "lint", "toolchain", "validate", "scan", "release", "bake-print",
           "bench-build", "bench-validate", "bench-input", "bench-overhead", "bench-threads", "clean", "distclean",
           "help"]


@pytest.mark.parametrize("target", TARGETS)
def test_make_target_dry_runs(repo: Path, target: str) -> None:
    proc = subprocess.run(["make", "-n", target], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


NEWEST = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "releases").glob("*.yaml"))[-1]


@pytest.mark.parametrize(("variables", "expected"), [
    ([], "ngc-paddle validate \n"),
    (["FLAVOR=gpu-cu118"], f"ngc-paddle validate ngc-paddle:{NEWEST}-gpu-cu118\n"),
    (["RELEASE=23.01", "FLAVOR=gpu"], "ngc-paddle validate ngc-paddle:23.01-gpu\n"),
    (["IMAGE=mine:1"], "ngc-paddle validate mine:1\n"),
])
def test_validate_honours_flavor_without_release(repo: Path, variables: list[str], expected: str) -> None:
    command = ["make", "--no-print-directory", "-n", "-W", ".venv/bin/.installed", "validate", *variables]
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.endswith(expected), proc.stdout


def test_release_passes_the_unproven_waiver(repo: Path) -> None:
    command = ["make", "--no-print-directory", "-n", "release", "ACCEPT_UNPROVEN=no GPU in CI"]
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert '--accept-unproven "no GPU in CI"' in proc.stdout, proc.stdout


def test_scan_passes_the_vulnerability_sources(repo: Path) -> None:
    command = ["make", "--no-print-directory", "-n", "-W", ".venv/bin/.installed", "scan", "IMAGE=mine:1",
               "OSV_DIR=/mirror/osv", "DB_REPOSITORY=mirror.example/trivy-db:2", "POLICY=p.yaml"]
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert ("ngc-paddle scan mine:1 --osv-dir /mirror/osv --db-repository mirror.example/trivy-db:2 --policy p.yaml"
            in " ".join(proc.stdout.split())), proc.stdout
