"""Pin the base image in the lock, and compare the base a build starts from with it.

Why: the os layer starts from a tag (`debian:bookworm-slim`) or, where nothing can be pulled, from an
mmdebstrap of the suite (lock/base_image.py). The lock records what it was: a pulled image by its registry
digest, or a bootstrapped one by suite, the archive's Release `Date:` (the snapshot) and the sha256 of its
rootfs tar (the image's one layer diff id). The bootstrap is reproducible for one state of the archive;
once the suite's mirror has moved on (a point release), a base bootstrapped again differs: the build then
says so; the os layer's packages stay pinned by the lock either way.
"""

import urllib.request
from collections.abc import Callable

from debian.deb822 import Release

from ngc_paddle import engine
from ngc_paddle.lock.lock_file import Base, DebianEntry
from ngc_paddle.manifest.schema import Source

SNAPSHOT_LABEL = "ngc-paddle.base.snapshot"
MAKER_LABEL = "ngc-paddle.base.maker"


def release_date(debian: Source, timeout: float = 30) -> str:
    """The `Date:` of the suite's Release file: which state of the archive we saw."""
    url = f"{str(debian.url).rstrip('/')}/dists/{debian.suite}/Release"
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return str(Release(resp.read().decode("utf-8", "replace"))["Date"])


def base_facts(ref: str, debian: Source, packages: list[DebianEntry]) -> Base:
    """What the base image `ref` is, for the lock."""
    info = engine.inspect_image(ref)
    labels = (info.get("Config") or {}).get("Labels") or {}
    layers = engine.diff_ids(info) or []
    if str(labels.get("ngc-paddle.base", "")).startswith("debootstrap:"):
        snapshot = labels.get(SNAPSHOT_LABEL) or release_date(debian)
        return Base(kind="debootstrap", image=ref, suite=debian.suite, mirror=debian.url, snapshot=snapshot,
                    rootfs_sha256=layers[0].removeprefix("sha256:"), packages=packages)
    digests = info.get("RepoDigests") or []
    digest = digests[0].split("@", 1)[1] if digests else info["Id"]
    return Base(kind="image", image=ref, digest=digest, packages=packages)


def compare_base(ref: str, locked: Base, say: Callable[[str], None]) -> bool:
    """Say whether the base the build starts from is the locked one; True when it is."""
    info = engine.inspect_image(ref)
    if locked.kind == "image":
        digests = [d.split("@", 1)[1] for d in info.get("RepoDigests") or []] + [info["Id"]]
        same = locked.digest in digests
        say(f"base image: {ref} {'matches' if same else 'differs from'} the lock (digest {locked.digest})")
        return same
    layers = engine.diff_ids(info) or []
    current = layers[0].removeprefix("sha256:") if layers else "none"
    if current == locked.rootfs_sha256:
        say(f"base image: {ref} matches the lock (Debian {locked.suite} of {locked.snapshot}, rootfs sha256 "
            f"{current[:12]})")
        return True
    snapshot = ((info.get("Config") or {}).get("Labels") or {}).get(SNAPSHOT_LABEL, "an unrecorded date")
    say(f"base image: {ref} differs from the lock: bootstrapped from Debian {locked.suite} of {snapshot}, rootfs "
        f"sha256 {current[:12]}; the lock has {locked.snapshot}, {str(locked.rootfs_sha256)[:12]} "
        f"(the archive has moved on since the lock; the os layer's packages stay pinned by the lock)")
    return False
