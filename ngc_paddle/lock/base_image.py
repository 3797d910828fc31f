"""Find or make the OS base image a flavor's first layer starts from.

Why: a build host may have no registry at all. We take the manifest's image if it is present or
can be pulled; otherwise we bootstrap the same Debian suite from the manifest's archive with
mmdebstrap and build it into an image (layers/os/base.Dockerfile), under a name that says it was made
locally. With SOURCE_DATE_EPOCH set to the archive snapshot the lock records, mmdebstrap writes the same
tar for the same archive state, and the image gets the same digest on any engine: a second build host
makes the base the first one had, and so the same image digests above it. Here beside the lock's base
facts (lock/base_pin.py): `ngc-paddle lock` resolves the os layer's packages on this base, and the build
starts from it.
"""

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.host_errors import ToolchainError
from ngc_paddle.lock.base_pin import MAKER_LABEL, SNAPSHOT_LABEL, release_date
from ngc_paddle.manifest.schema import Component, Source
from ngc_paddle.platforms import DEFAULT_PLATFORM, PLATFORMS, Platform

DEFAULT = PLATFORMS[DEFAULT_PLATFORM]


def local_base_name(debian: Source, platform: Platform = DEFAULT) -> str:
    """The local base's tag: the suite, and another platform's Debian name (ngc-paddle-base:bookworm-arm64)."""
    return f"ngc-paddle-base:{debian.suite}{'-' + platform.qualifier if platform.qualifier else ''}"


def present_base_image(os_comp: Component, debian: Source, snapshot: str | None = None,
                       platform: Platform = DEFAULT) -> tuple[str, str] | None:
    """The base ensure_base_image would take, with its image id, when it is already here and current (no pull, no
    bootstrap again)."""
    if platform == DEFAULT and (image_id := engine.image_id(str(os_comp.image))):
        return str(os_comp.image), image_id
    local = local_base_name(debian, platform)
    if (image_id := engine.image_id(local)) and _stale_local_base(local, snapshot) is None:
        return local, image_id
    return None


BASE_DOCKERFILE = Path(__file__).resolve().parents[2] / "layers" / "os" / "base.Dockerfile"
# How a local base is made; a base made another way (or by an older version of this module) is made again,
# since only this way gives every build host the same base digest.
BASE_MAKER = "mmdebstrap/minbase/merged-usr/source-date-epoch"


def _stale_local_base(name: str, snapshot: str | None) -> str | None:
    """Why an existing local base must be bootstrapped again (made another way or of another archive date)."""
    labels = (engine.inspect_image(name).get("Config") or {}).get("Labels") or {}
    if labels.get(MAKER_LABEL) != BASE_MAKER:
        return f"it was made by {labels.get(MAKER_LABEL) or 'an older bootstrap'}, not {BASE_MAKER}"
    if snapshot is not None and labels.get(SNAPSHOT_LABEL) != snapshot:
        return f"it holds the archive of {labels.get(SNAPSHOT_LABEL)}, the lock {snapshot}"
    return None


def ensure_base_image(os_comp: Component, debian: Source, say: Callable[[str], None],
                      snapshot: str | None = None, platform: Platform = DEFAULT) -> str:
    """A reference to a usable base image for the os layer; a bootstrap is stamped with `snapshot` (the lock's
    archive date: the same base as the lock's), or with the archive's current Release date for a new lock. Another
    platform than the default one is always bootstrapped (--arch), under its own tag: a tag pulled for one platform
    is not the other's base."""
    wanted = str(os_comp.image)
    if platform == DEFAULT and engine.image_id(wanted):
        return wanted
    local = local_base_name(debian, platform)
    if engine.image_id(local):
        if (stale := _stale_local_base(local, snapshot)) is None:
            say(f"base image: {wanted} is not local; using {local} (bootstrapped earlier)")
            return local
        say(f"base image: bootstrapping {local} again: {stale}")
        bootstrap(debian, local, say, snapshot, platform)
        return local
    if platform == DEFAULT:
        say(f"base image: trying to pull {wanted}")
        if engine.try_pull(wanted):
            return wanted
    say(f"base image: {wanted} cannot be pulled; bootstrapping Debian {debian.suite} ({platform.name}) from "
        f"{debian.url}")
    bootstrap(debian, local, say, snapshot, platform)
    return local


def bootstrap(debian: Source, name: str, say: Callable[[str], None], snapshot: str | None = None,
              platform: Platform = DEFAULT) -> None:
    if shutil.which("mmdebstrap") is None:
        raise ToolchainError(
            f"no base image: cannot pull it and mmdebstrap is not installed; fix: run "
            f"toolchain/ensure-engine.sh as root, or 'docker load' a Debian {debian.suite} image as {name}"
        )
    started = time.monotonic()
    if snapshot is None:
        try:  # the state of the archive we bootstrap from, for the lock (ngc_paddle/lock/base_pin.py)
            snapshot = release_date(debian)
        except Exception as exc:  # any failure: it is the archive that cannot be read
            raise ToolchainError(f"cannot read the Release file of Debian {debian.suite} at {debian.url} ({exc}); "
                                 "fix: check sources.debian.url in the manifest or the network") from exc
    epoch = str(int(parsedate_to_datetime(snapshot).timestamp()))
    with tempfile.TemporaryDirectory(prefix="ngc-paddle-rootfs-") as tmp:
        context = Path(tmp)
        proc = subprocess.run(
            # merged-usr: the /usr merge Debian's own debootstrap does (usr-is-merged), not the usrmerge package,
            # which would pull perl into every image.
            ["mmdebstrap", "--variant=minbase", "--mode=root", "--quiet",
             *([] if platform == DEFAULT else [f"--arch={platform.debian_arch}"]),
             "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr", str(debian.suite),
             str(context / "rootfs.tar"), str(debian.url)],
            capture_output=True, text=True, check=False, env={**os.environ, "SOURCE_DATE_EPOCH": epoch},
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ToolchainError(
                f"mmdebstrap of Debian {debian.suite} from {debian.url} failed ({tail[0]}); "
                f"fix: check sources.debian.url in the manifest or the network"
            )
        shutil.copy(BASE_DOCKERFILE, context / "Dockerfile")
        built = engine.docker("buildx", "build", "--load", "--provenance=false", "--progress", "quiet",
                              *([] if platform == DEFAULT else ["--platform", platform.name]),
                              "--build-arg", f"SOURCE_DATE_EPOCH={epoch}",
                              "--label", f"ngc-paddle.base=debootstrap:{debian.suite}",
                              "--label", f"{SNAPSHOT_LABEL}={snapshot}", "--label", f"{MAKER_LABEL}={BASE_MAKER}",
                              "--tag", name, str(context), check=False)
        if built.returncode != 0:
            raise ToolchainError(f"building the bootstrapped rootfs into {name} failed: "
                                 f"{(built.stderr.strip().splitlines() or ['no output'])[-1]}")
    say(f"base image: {name} bootstrapped in {time.monotonic() - started:.0f}s (archive of {snapshot})")
