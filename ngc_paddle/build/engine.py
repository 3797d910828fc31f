"""Thin wrappers over the docker CLI for what the build needs to know about images.

Why: the build drives `docker buildx bake` (a CLI-only tool) anyway, so image queries use the same
CLI and the same DOCKER_HOST, with no second client library to configure.
"""

import json
import subprocess
from pathlib import Path

from ngc_paddle.errors import ToolchainError

ENSURE_ENGINE = Path(__file__).resolve().parents[2] / "toolchain" / "ensure-engine.sh"


def docker(*args: str, check: bool = True, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=timeout)


def ensure_engine() -> None:
    """Install/start dockerd and buildx where needed (idempotent; see toolchain/ensure-engine.sh)."""
    proc = subprocess.run(["bash", str(ENSURE_ENGINE)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")] or proc.stderr.splitlines()[-1:]
        raise ToolchainError(lines[-1].removeprefix("error: ") if lines else "toolchain/ensure-engine.sh failed")


def image_id(ref: str) -> str | None:
    proc = docker("image", "inspect", "--format", "{{.Id}}", ref, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def image_size(ref: str) -> int:
    return int(docker("image", "inspect", "--format", "{{.Size}}", ref).stdout.strip())


def image_labels(ref: str) -> dict[str, str]:
    out = docker("image", "inspect", "--format", "{{json .Config.Labels}}", ref).stdout
    return json.loads(out) or {}


def tag(source: str, target: str) -> None:
    docker("tag", source, target)


def untag(ref: str) -> None:
    docker("image", "rm", "--no-prune", ref, check=False)


def try_pull(ref: str, timeout: float = 300) -> bool:
    try:
        return docker("pull", "--quiet", ref, check=False, timeout=timeout).returncode == 0
    except subprocess.TimeoutExpired:
        return False
