"""Find or make the OS base image a flavor's first layer starts from.

Why: a build host may have no registry at all. We take the manifest's image if it is present or
can be pulled; otherwise we bootstrap the same Debian suite from the manifest's archive with
debootstrap and import it, under a name that says it was made locally. Here beside the lock's base
facts (lock/base.py): `ngc-paddle lock` resolves the os layer's packages on this base, and the build
starts from it.
"""

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.errors import ToolchainError
from ngc_paddle.lock.base import SNAPSHOT_LABEL, release_date
from ngc_paddle.manifest.schema import Component, Source


def local_base_name(debian: Source) -> str:
    return f"ngc-paddle-base:{debian.suite}"


def present_base_image(os_comp: Component, debian: Source) -> tuple[str, str] | None:
    """The base ensure_base_image would take, with its image id, when it is already here (no pull, no bootstrap)."""
    for ref in (str(os_comp.image), local_base_name(debian)):
        if image_id := engine.image_id(ref):
            return ref, image_id
    return None


def ensure_base_image(os_comp: Component, debian: Source, say: Callable[[str], None]) -> str:
    """A reference to a usable base image for the os layer."""
    wanted = str(os_comp.image)
    if engine.image_id(wanted):
        return wanted
    local = local_base_name(debian)
    if engine.image_id(local):
        say(f"base image: {wanted} is not local; using {local} (bootstrapped earlier)")
        return local
    say(f"base image: trying to pull {wanted}")
    if engine.try_pull(wanted):
        return wanted
    say(f"base image: {wanted} cannot be pulled; bootstrapping Debian {debian.suite} from {debian.url}")
    bootstrap(debian, local, say)
    return local


def bootstrap(debian: Source, name: str, say: Callable[[str], None]) -> None:
    if shutil.which("debootstrap") is None:
        raise ToolchainError(
            f"no base image: cannot pull it and debootstrap is not installed; fix: run "
            f"toolchain/ensure-engine.sh as root, or 'docker load' a Debian {debian.suite} image as {name}"
        )
    started = time.monotonic()
    try:  # the state of the archive we bootstrap from, for the lock (ngc_paddle/lock/base.py)
        snapshot = release_date(debian)
    except Exception:  # any failure: debootstrap below names the archive problem
        snapshot = "unknown"
    with tempfile.TemporaryDirectory(prefix="ngc-paddle-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        proc = subprocess.run(
            ["debootstrap", "--variant=minbase", str(debian.suite), str(rootfs), str(debian.url)],
            capture_output=True, text=True, check=False,
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ToolchainError(
                f"debootstrap of Debian {debian.suite} from {debian.url} failed ({tail[0]}); "
                f"fix: check sources.debian.url in the manifest or the network"
            )
        # No package lists or downloaded .debs in the base image.
        for junk in ("var/lib/apt/lists", "var/cache/apt/archives"):
            for entry in (rootfs / junk).glob("*"):
                if entry.is_file():
                    entry.unlink()
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imported = engine.import_rootfs(tar.stdout, name, ['CMD ["/bin/bash"]',
                                                           f"LABEL ngc-paddle.base=debootstrap:{debian.suite}",
                                                           f'LABEL {SNAPSHOT_LABEL}="{snapshot}"'])
        tar.wait()
        if imported.returncode != 0:
            raise ToolchainError(f"docker import of the bootstrapped rootfs failed: {imported.stderr.strip()}")
    say(f"base image: {name} bootstrapped in {time.monotonic() - started:.0f}s")
