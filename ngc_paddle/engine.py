"""The one way the host tooling talks to the container engine: the docker CLI, wrapped.

Why: the build drives `docker buildx` (a CLI-only tool) anyway, so every other engine call (image
queries, runs, saves, pushes) uses the same CLI and the same DOCKER_HOST, with no second client
library to configure. Every `docker` call of ngc_paddle and perf/ goes through here (a unit test
refuses any other subprocess call that runs docker), so how the engine is reached, which flags a
container gets and how a failure reads are decided in one place. It sits at the bottom of the
package: it imports nothing of it but its errors.
"""

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ngc_paddle.host_errors import ToolchainError
from ngc_paddle.platforms import DEFAULT_PLATFORM

ENSURE_ENGINE = Path(__file__).resolve().parents[1] / "toolchain" / "ensure-engine.sh"
ENSURE_REGISTRY = ENSURE_ENGINE.with_name("ensure-registry.sh")
ENSURE_QEMU = ENSURE_ENGINE.with_name("ensure-qemu.sh")
# NGC's recommended flags for GPU containers: every GPU, the host's IPC namespace (NCCL, DataLoader
# workers need more than 64 MB of /dev/shm), unlimited locked memory, a 64 MB stack.
GPU_FLAGS = ("--gpus", "all", "--ipc=host", "--ulimit", "memlock=-1", "--ulimit", "stack=67108864")
CONTAINER_HOSTNAME = "ngc-paddle"
CLI = "docker"


def command(*args: str) -> list[str]:
    """The full command line of a docker call (for a log line or a report; run it with `docker`/`stream`)."""
    return [CLI, *args]


def docker(*args: str, check: bool = True, timeout: float | None = None, cwd: Path | None = None,
           env: Mapping[str, str] | None = None, stdin: IO | int | None = None,
           stdout: IO | int | None = None) -> subprocess.CompletedProcess[str]:
    """Run `docker ARGS`; its output captured as text (or stdout to a file), raising on failure when `check`."""
    streams = {"stdout": stdout, "stderr": subprocess.STDOUT} if stdout is not None else {"capture_output": True}
    try:
        return subprocess.run(command(*args), text=True, check=check, timeout=timeout, cwd=cwd,
                              env=dict(env) if env is not None else None, stdin=stdin, **streams)
    except FileNotFoundError as exc:
        raise _no_cli() from exc


def _no_cli() -> ToolchainError:
    """The one line for a host without the docker CLI (every engine call, `verify` reading a registry's index too)."""
    return ToolchainError(f"{CLI}: command not found; fix: bash toolchain/ensure-engine.sh (as root) installs Docker "
                          "Engine and its CLI")


@contextmanager
def stream(*args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """`docker ARGS` with its output (stdout and stderr merged) read line by line as it runs (a long build)."""
    try:
        proc = subprocess.Popen(command(*args), cwd=cwd, env=dict(env) if env is not None else None,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except FileNotFoundError as exc:
        raise _no_cli() from exc
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def ensure_engine() -> None:
    """Install/start dockerd and buildx where needed (idempotent; see toolchain/ensure-engine.sh)."""
    _toolchain(ENSURE_ENGINE)


def ensure_emulation(*machines: str) -> None:
    """Install qemu and register it for these machines (aarch64) where needed (idempotent; toolchain/ensure-qemu.sh):
    what running a foreign platform's programs needs."""
    _toolchain(ENSURE_QEMU, *machines)


def _toolchain(script: Path, *args: str) -> None:
    """Run a toolchain script; its failure is its last `error:` line (which names the fix)."""
    proc = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")] or proc.stderr.splitlines()[-1:]
        raise ToolchainError(lines[-1].removeprefix("error: ") if lines else f"toolchain/{script.name} failed")


# ---- engine instances: a second build host on one machine (toolchain/ensure-engine.sh starts them) ---------

INSTANCE_SOCKETS = Path("/run/ngc-paddle/engines")
INSTANCE_DATA = Path("/var/lib/ngc-paddle/engines")


def instance_host(name: str) -> str:
    """The DOCKER_HOST of the engine instance `name` (its own socket, data root, containerd and cache)."""
    return f"unix://{INSTANCE_SOCKETS / name}.sock"


@contextmanager
def using(host: str | None) -> Iterator[None]:
    """Every docker call inside talks to `host` (a DOCKER_HOST; None: leave it as it is), started if needed."""
    if host is None:
        yield
        return
    before = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = host
    try:
        ensure_engine()
        yield
    finally:
        if before is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = before


def remove_instance(name: str) -> None:
    """Stop the engine instance `name` and delete its data root: its images and cache with it."""
    pidfile = INSTANCE_SOCKETS / name / "dockerd.pid"
    if pidfile.is_file():
        pid = int(pidfile.read_text().strip() or 0)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
            for _ in range(60):
                os.kill(pid, 0)
                time.sleep(0.5)
    shutil.rmtree(INSTANCE_DATA / name, ignore_errors=True)
    shutil.rmtree(INSTANCE_SOCKETS / name, ignore_errors=True)
    (INSTANCE_SOCKETS / f"{name}.sock").unlink(missing_ok=True)


def ensure_registry(registry: str) -> None:
    """Start a local registry when `registry` is one on this host (127.0.0.1:PORT; toolchain/ensure-registry.sh,
    idempotent); a remote one is the caller's to run."""
    host, _, port = registry.split("/", 1)[0].partition(":")  # HOST[:PORT][/PATH]
    if host != "127.0.0.1":
        return
    proc = subprocess.run(["bash", str(ENSURE_REGISTRY)], env={**os.environ, "REGISTRY_PORT": port or "5000"},
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ToolchainError((proc.stderr.strip().splitlines() or ["registry failed"])[-1].removeprefix("error: "))


# ---- images ------------------------------------------------------------------------------------------------

def image_id(ref: str) -> str | None:
    proc = docker("image", "inspect", "--format", "{{.Id}}", ref, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def inspect_image(ref: str) -> dict:
    """`docker image inspect` of one image (raises CalledProcessError when it is not there)."""
    return json.loads(docker("image", "inspect", "--format", "{{json .}}", ref).stdout)


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


def diff_ids(info: dict | None) -> list[str] | None:
    """An image's layer diff ids, bottom first, from its inspect object; None where it shows none (no image, or an
    engine that lists no layers)."""
    layers = ((info or {}).get("RootFS") or {}).get("Layers")
    return [str(d) for d in layers] if isinstance(layers, list) else None


def image_size(ref: str) -> int:
    return int(docker("image", "inspect", "--format", "{{.Size}}", ref).stdout.strip())


def image_size_or_none(ref: str) -> int | None:
    """The image's size in bytes; None when the engine has no such image."""
    proc = docker("image", "inspect", "--format", "{{.Size}}", ref, check=False)
    return int(proc.stdout.strip() or 0) if proc.returncode == 0 else None


def image_labels(ref: str) -> dict[str, str]:
    out = docker("image", "inspect", "--format", "{{json .Config.Labels}}", ref).stdout
    return json.loads(out) or {}


def container_image(container: str) -> str | None:
    """The image a container runs; None when there is no such container."""
    proc = docker("inspect", "--format", "{{.Config.Image}}", container, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def images(repository: str) -> list[str]:
    """The REPOSITORY:TAG names the engine holds in one repository."""
    out = docker("image", "ls", "--format", "{{.Repository}}:{{.Tag}}", repository, check=False).stdout
    return [line for line in out.splitlines() if line and not line.endswith(":<none>")]


def tag(source: str, target: str) -> None:
    docker("tag", source, target)


def untag(ref: str) -> None:
    docker("image", "rm", "--no-prune", ref, check=False)


def remove_images(*refs: str) -> None:
    """Remove images (best effort: a missing one is no error)."""
    if refs:
        docker("image", "rm", *refs, check=False)


def try_pull(ref: str, timeout: float = 300) -> bool:
    try:
        return docker("pull", "--quiet", ref, check=False, timeout=timeout).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def save(image: str, target: Path) -> subprocess.CompletedProcess[str]:
    """`docker save -o TARGET IMAGE` (not checked: the caller words the failure)."""
    return docker("save", "-o", str(target), image, check=False)


def push(ref: str) -> subprocess.CompletedProcess[str]:
    """`docker push REF` (not checked: the caller reads the digest or the refusal from its output)."""
    return docker("push", ref, check=False)


def manifest_inspect(ref: str, insecure: bool = False, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`docker manifest inspect --verbose REF`: what a registry serves for REF (not checked)."""
    return docker("manifest", "inspect", "--verbose", *(["--insecure"] if insecure else []), ref, check=False,
                  timeout=timeout)


def prune_build_cache() -> None:
    docker("builder", "prune", "--all", "--force")


# ---- containers ------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def host_has_nvidia_gpus() -> bool:
    """The engine has the NVIDIA runtime, or nvidia-smi lists a GPU on this host."""
    info = docker("info", "--format", "{{json .Runtimes}}", check=False)
    if info.returncode == 0 and "nvidia" in info.stdout:
        return True
    if shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True, check=False).returncode == 0


def platform_flags(platform: str | None) -> list[str]:
    """`docker run --platform` for an image of another platform than the default one (run under qemu here);
    nothing for the default platform, whose containers start as they always did."""
    return ["--platform", platform] if platform and platform != DEFAULT_PLATFORM else []


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


def run(image: str, *cmd: str, flags: tuple[str, ...] | list[str] = (), check: bool = False,
        timeout: float | None = None, stdout: IO | int | None = None) -> subprocess.CompletedProcess[str]:
    """`docker run --rm FLAGS IMAGE CMD...`: a throwaway container; its output captured (or to `stdout`)."""
    return docker("run", "--rm", *flags, image, *cmd, check=check, timeout=timeout, stdout=stdout)


def start(image: str, *cmd: str, flags: tuple[str, ...] | list[str] = ()) -> subprocess.CompletedProcess[str]:
    """`docker run -d --rm FLAGS IMAGE CMD...`: a container left running (its id on stdout; not checked)."""
    return docker("run", "-d", "--rm", *flags, image, *cmd, check=False)


def remove_container(container: str) -> None:
    """`docker rm -f`: gone, running or not (best effort)."""
    docker("rm", "-f", container, check=False)


def copy(source: str, target: str) -> subprocess.CompletedProcess[str]:
    """`docker cp SOURCE TARGET` (either side may be CONTAINER:PATH; not checked)."""
    return docker("cp", source, target, check=False)
