"""Each layer's build arguments, from the manifest and the flavor's lock: what a layer installs, pinned.

Why: the build never restates a version; it takes every argument of every layer from here (the bake
file's targets, the inputs digests of the no-change answer), and `ngc-paddle lock` runs the os layer's
install with the same arguments, unpinned, to resolve its packages. Here in lock/, since every pin
comes from the lock; the manifest says what to install and where from.
"""

import json
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

from ngc_common.image_paths import ARCHIVE_LIBS, ARCHIVE_RECORD
from ngc_paddle.layers import BASE_LAYER, TOP_LAYER
from ngc_paddle.lock.lock_file import ArchiveEntry, Lock
from ngc_paddle.lock.pip_lock import platform_tags
from ngc_paddle.lock.subject import LockSubject
from ngc_paddle.manifest.schema import Flavor, Manifest
from ngc_paddle.platforms import DEFAULT_PLATFORM


def source_date_epoch(lock: Lock | None) -> str | None:
    """The time every file a layer writes is clamped to (SOURCE_DATE_EPOCH): the lock's Debian snapshot.

    Why: a layer tar records each file's mtime, so two builds of one lock differ in every file they
    write; the install scripts clamp what they wrote to this (layers/lib/clamp-mtimes.sh) and Python
    writes hash-based .pyc under it. The Release date of the archive the lock was made against is
    fixed by the lock (a pulled base has none: then 0, still the same for every build).
    """
    if lock is None:
        return None
    if lock.base.snapshot:
        return str(int(parsedate_to_datetime(lock.base.snapshot).timestamp()))
    return "0"


class Resolved(LockSubject, Protocol):
    """What the build arguments are made of: a flavor resolved once for the run (ngc_paddle.flavor.ResolvedFlavor,
    which sits above lock/ and is handed down), never the raw manifest and a flavor name resolved again."""

    lock: Lock | None
    manifest_text: str  # the image's manifest as JSON (MANIFEST_JSON)

    @property
    def apt_packages(self) -> list[str]: ...

    @property
    def driver_facts(self) -> dict[str, Any] | None: ...

    @property
    def pending_reason(self) -> str: ...


def layer_args(flavor: Resolved, layer: str, base_image: str | None = None) -> dict[str, str]:
    """The build arguments of one layer target, all derived from the resolved flavor and its lock.

    Without a lock (`pending_reason` says why) the pip layers get no entries and refuse to build, and the
    os layer installs its packages unpinned (only `ngc-paddle lock` builds it that way, to read them).
    """
    lock = flavor.lock
    when = source_date_epoch(lock)
    epoch = {"SOURCE_DATE_EPOCH": when} if when is not None else {}  # layers/lib/clamp-mtimes.sh, hash-based .pyc
    if layer == BASE_LAYER:
        return {**os_args(flavor.manifest, flavor.spec, base_image, lock, flavor.apt_packages), **epoch}
    spec = _pip_spec(flavor.manifest, flavor.name, layer, lock, flavor.pending_reason)
    args = {"LAYER_SPEC": json.dumps(spec, sort_keys=True)}
    cuda = flavor.driver_facts
    if layer == "cuda" and cuda is not None:
        args["CUDA_VERSION"] = cuda["version"]
        args["NVIDIA_REQUIRE_CUDA"] = cuda["nvidia_require_cuda"]
    if layer == TOP_LAYER:  # the image's /opt/ngc-paddle/manifest.json
        args["MANIFEST_JSON"] = flavor.manifest_text
    elif getattr(flavor, "platform", DEFAULT_PLATFORM) != DEFAULT_PLATFORM and lock is not None:  # layers/foreign
        args["PIP_PLATFORMS"] = " ".join(platform_tags(str(lock.inputs.platform)))
        args["PYTHON_VERSION"] = flavor.spec.components["python"].version
    return {**args, **epoch}


def os_args(manifest: Manifest, flavor: Flavor, base_image: str | None, lock: Lock | None,
            packages: list[str]) -> dict[str, str]:
    """The os layer's arguments; `packages`: the apt packages by name (used without a lock: `ngc-paddle lock`)."""
    os_comp, python = flavor.components["os"], flavor.components["python"]
    debian = manifest.sources[python.source]
    packages = [f"{p.package}={p.version}" for p in lock.debian] if lock is not None else packages
    return {
        # The base the lock was made on (a pulled image by digest, or the local debootstrap's name).
        "BASE_IMAGE": base_image or (str(lock.base.image) if lock is not None else str(os_comp.image)),
        "APT_MIRROR": str(debian.url),
        "APT_SUITE": str(debian.suite),
        "APT_SECURITY": debian.security_url or "",
        "APT_PACKAGES": " ".join(packages),
        "APT_UPGRADE": "0" if lock is not None else "1",  # unlocked: resolve with -updates/-security applied
        "PYTHON_VERSION": python.version,
    }


def _archive_spec(manifest: Manifest, entries: list[ArchiveEntry]) -> list[dict[str, Any]]:
    """What install_archive_layer.py installs: each archive by file and sha256, where its source serves it, the
    folder of libraries it extracts to, and its wheel (member, name, version, sha256)."""
    specs = []
    for e in entries:
        source = manifest.sources[e.source]
        specs.append({"component": e.component, "version": e.version, "file": e.file, "sha256": e.sha256,
                      "source": e.source, "location": source.path or source.url, "libraries": e.libraries,
                      "into": ARCHIVE_LIBS.format(component=e.component),
                      "record": ARCHIVE_RECORD.format(component=e.component), "wheel": e.wheel.model_dump()})
    return specs


def _pip_spec(manifest: Manifest, flavor_name: str, layer: str, lock: Lock | None, pending: str) -> dict[str, Any]:
    """What install_pip_layer.py (and install_archive_layer.py) install: the lock's entries for this layer and where
    each source is."""
    entries = lock.layer_entries(layer) if lock is not None else []
    archives = [e for e in lock.archives if e.layer == layer] if lock is not None else []
    sources = {}  # only those this layer installs from: a mirror for another source must not bust its cache
    for name in sorted({e.source for e in entries}):
        source = manifest.sources[name]
        sources[name] = {"kind": source.kind, "location": source.path if source.kind == "wheel-dir" else source.url}
    extra = {"archives": _archive_spec(manifest, archives)} if archives else {}  # absent where none: same spec
    return {**extra,
        "release": manifest.release,
        "flavor": flavor_name,
        "layer": layer,
        "manifest": f"releases/{manifest.release}.yaml",
        "lock": f"releases/{manifest.release}-{flavor_name}.lock.json",
        "pending": None if lock is not None else pending,
        # An optional layer the lock leaves out: install_pip_layer.py installs nothing and says why in one line.
        "left_out": lock.pending_layers.get(layer) if lock is not None else None,
        "sources": sources,
        "packages": [{"name": e.name, "version": e.version, "sha256": e.sha256, "source": e.source,
                      "component": e.component} for e in entries],
    }
