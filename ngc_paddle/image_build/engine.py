"""Thin wrappers over the docker CLI for what the build needs to know about images.

Why: the build drives `docker buildx bake` (a CLI-only tool) anyway, so image queries use the same
CLI and the same DOCKER_HOST, with no second client library to configure.
"""

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

from ngc_paddle.errors import ToolchainError

ENSURE_ENGINE = Path(__file__).resolve().parents[2] / "toolchain" / "ensure-engine.sh"
# NGC's recommended flags for GPU containers: every GPU, the host's IPC namespace (NCCL, DataLoader
# workers need more than 64 MB of /dev/shm), unlimited locked memory, a 64 MB stack.
GPU_FLAGS = ("--gpus", "all", "--ipc=host", "--ulimit", "memlock=-1", "--ulimit", "stack=67108864")
CONTAINER_HOSTNAME = "ngc-paddle"


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


def inspect_images(refs: list[str]) -> dict[str, dict]:
    """`docker image inspect` of several references in one call: ref -> its inspect object; missing ones left out."""
    proc = docker("image", "inspect", *refs, check=False)
    try:
        infos = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        return {}
    found: dict[str, dict] = {}
    for info in infos:
        for ref in refs:
            if ref in (info.get("RepoTags") or []) or ref == info.get("Id"):
                found.setdefault(ref, info)
    return found


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


@functools.lru_cache(maxsize=1)
def host_has_nvidia_gpus() -> bool:
    """The engine has the NVIDIA runtime, or nvidia-smi lists a GPU on this host."""
    info = docker("info", "--format", "{{json .Runtimes}}", check=False)
    if info.returncode == 0 and "nvidia" in info.stdout:
        return True
    if shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True, check=False).returncode == 0


def run_flags(network_none: bool = True, writes_mounts: bool = False) -> list[str]:
    """`docker run` flags for the containers the tools start: the GPUs where the host has them, and without a
    network a hostname that resolves (Docker writes none into /etc/hosts then, and Paddle's launcher needs it).
    A container that writes into a mounted host folder runs as the invoking user (the image's default user,
    paddle, could not write a folder owned by someone else; the image works under any uid)."""
    flags = list(GPU_FLAGS) if host_has_nvidia_gpus() else []
    if writes_mounts:
        flags += ["--user", f"{os.getuid()}:{os.getgid()}"]
    if network_none:
        flags += ["--network", "none", "--hostname", CONTAINER_HOSTNAME, "--add-host",
                  f"{CONTAINER_HOSTNAME}:127.0.0.1"]
    return flags
