"""The structure of a lock file (`releases/<release>-<flavor>.lock.json`) and its one-line reader.

Why: the manifest pins the components; the lock pins everything that ends up in the image (every
Python distribution with the sha256 of its wheel and the source it must come from, every Debian
package the os layer installs, the base). Builds install only what it says. It is written by
`ngc-paddle lock` and read here through ngc_common.bounded_read and a strict model, so a hand-edited or corrupt
lock ends in one line naming the file and the field. JSON rather than YAML: it is machine-written,
diffs line by line (one entry per distribution) and needs no anchors.
"""

import re
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Annotated, Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_common.strict_model import Strict
from ngc_paddle.fields import ArchiveFile, DebianName, DebianSuite, ImageRef, PipName, Text, Token, Url, check
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.manifest.schema import DEBIAN_VERSION_RE, NAME_RE, RELEASE_RE, LayerName
from ngc_paddle.platforms import DEFAULT_PLATFORM, PLATFORMS

LOCK_VERSION = 2
MAX_LOCK_BYTES = 2 * 1024 * 1024  # a lock is ~30 kB for 60 distributions and 100 Debian packages

SHA256_RE = re.compile(r"[0-9a-f]{64}")
WHEEL_RE = re.compile(r"[A-Za-z0-9_.+!-]{1,250}\.whl")
DATE_RE = re.compile(r"[A-Za-z0-9 ,:+-]{1,60}")  # an RFC 2822 date as in a Debian Release file


def _pep440(value: str) -> str:
    try:
        Version(value)
    except InvalidVersion:
        raise ValueError(f"{value!r} is not a PEP 440 version") from None
    return check(value, re.compile(r"[0-9A-Za-z.+!_-]{1,100}"), "a PEP 440 version")


Sha256 = Annotated[str, AfterValidator(lambda v: check(v, SHA256_RE, "a sha256 of 64 lower-case hex digits"))]
Pep440 = Annotated[str, AfterValidator(_pep440)]
DebianVersion = Annotated[str, AfterValidator(lambda v: check(v, DEBIAN_VERSION_RE, "a Debian version"))]
Name = Annotated[str, AfterValidator(lambda v: check(v, NAME_RE, "a name of lower-case letters, digits and '-'"))]
WheelFile = Annotated[str, AfterValidator(lambda v: check(v, WHEEL_RE, "a wheel file name"))]
def _release_date(value: str) -> str:
    check(value, DATE_RE, "a Release file date")
    try:
        parsedate_to_datetime(value)  # what layer_args reads it with (SOURCE_DATE_EPOCH)
    except (TypeError, ValueError, IndexError):
        raise ValueError(f"{value[:60]!r} is not an RFC 2822 date (e.g. Sat, 11 Jul 2026 10:16:37 UTC)") from None
    return value


def _lock_version(value: object) -> object:
    if type(value) is not int:  # True == 1 and 1.0 == 1, but neither is a lock version
        raise ValueError(f"lock_version must be the integer {LOCK_VERSION}, not {value!r}")
    return value


ReleaseDate = Annotated[str, AfterValidator(_release_date)]



class PipEntry(Strict):
    """One Python distribution: what, which wheel (by hash), from which source, in which layer."""

    name: PipName  # canonical (PEP 503) name
    version: Pep440
    layer: LayerName  # the lowest layer whose components need it
    source: Name  # the manifest source it must be installed from, and only from
    component: Name | None = None  # the manifest component it is, or None for a dependency
    file: WheelFile
    sha256: Sha256
    url: Url  # where `ngc-paddle lock` found the file (for people; the build asks the source again)

    @model_validator(mode="after")
    def _canonical(self) -> "PipEntry":
        if canonicalize_name(self.name) != self.name:
            raise ValueError(f"name {self.name!r} is not canonical; write {canonicalize_name(self.name)}")
        return self


MEMBER_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+/-]{0,500}")


def _member(value: str) -> str:
    check(value, MEMBER_RE, "a relative path inside an archive")
    if ".." in value.split("/"):
        raise ValueError(f"{value[:60]!r} leaves the archive ('..')")
    return value


Member = Annotated[str, AfterValidator(_member)]


class ArchiveWheel(Strict):
    """The Python wheel an archive carries for the image's Python, as the archive holds it (installed with
    `pip install --require-hashes`, like every other wheel)."""

    name: PipName  # canonical
    version: Pep440
    member: Member  # its path inside the archive (TensorRT-8.6.1.6/python/tensorrt-8.6.1-cp311-none-...whl)
    sha256: Sha256


class ArchiveEntry(Strict):
    """One vendor archive (a component of kind `archive`): which file, by hash, from which source, into which layer;
    the folder of shared libraries it extracts and the wheel it installs."""

    component: Name
    version: Token  # the component's version, as the manifest pins it
    layer: LayerName
    source: Name
    file: ArchiveFile
    sha256: Sha256
    url: Url  # where `ngc-paddle lock` found it (for people; the build asks the source again)
    libraries: Member  # the archive's folder of shared libraries (TensorRT-8.6.1.6/lib)
    wheel: ArchiveWheel


class DebianEntry(Strict):
    package: DebianName
    version: DebianVersion
    architecture: Token


class Base(Strict):
    """The base image the os layer starts from: a pulled image by digest, or a debootstrapped suite."""

    kind: Literal["image", "debootstrap"]
    image: ImageRef  # the reference the build uses (manifest image, or ngc-paddle-base:<suite>)
    digest: Annotated[str, AfterValidator(lambda v: check(v, re.compile(r"sha256:[0-9a-f]{64}"),
                                                            "a sha256:... digest"))] | None = None
    suite: DebianSuite | None = None
    mirror: Url | None = None
    snapshot: ReleaseDate | None = None  # the archive Release file's Date: when the lock was made
    rootfs_sha256: Sha256 | None = None  # sha256 of the rootfs tar (the image's single layer diff id)
    packages: list[DebianEntry] = Field(default_factory=list)  # what the base holds (dpkg status)

    @model_validator(mode="after")
    def _fields_match_kind(self) -> "Base":
        if self.kind == "image" and not self.digest:
            raise ValueError("a base of kind 'image' needs its 'digest'")
        if self.kind == "debootstrap" and not (self.suite and self.snapshot and self.rootfs_sha256):
            raise ValueError("a debootstrapped base needs 'suite', 'snapshot' and 'rootfs_sha256'")
        return self


class LockedComponent(Strict):
    package: Token
    version: Token
    source: Name
    layer: LayerName


class Inputs(Strict):
    """What of the manifest the lock was made from; a lock that no longer matches is refused."""

    python: Token
    platform: Token  # the newest manylinux tag the image's glibc accepts, e.g. manylinux_2_36_x86_64
    suite: DebianSuite
    base_image: ImageRef
    dependency_source: Name
    apt_packages: list[DebianName]
    components: dict[Name, LockedComponent]


class Lock(Strict):
    # 2: pip, setuptools and wheel are locked entries (no venv seeds from Debian)
    lock_version: Annotated[Literal[2], BeforeValidator(_lock_version)]
    release: str
    flavor: Name
    generated_by: Text  # the command that wrote it
    inputs: Inputs
    base: Base
    debian: list[DebianEntry]  # every package the os layer installs, pinned pkg=version
    pip: list[PipEntry]
    archives: list[ArchiveEntry] = Field(default_factory=list)  # vendor archives (kind `archive` components)
    # Optional layers of the flavor left out of this lock, and why (their source could not be reached when
    # it was made): the build makes them empty layers, and the image's manifest lists them as left out.
    pending_layers: dict[LayerName, Text] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> "Lock":
        if not RELEASE_RE.match(self.release):
            raise ValueError(f"release {self.release!r} must be YY.MM")
        names = [entry.name for entry in self.pip]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate:
            raise ValueError(f"pip lists {duplicate!r} twice")
        for field, entries in (("debian", self.debian), ("base.packages", self.base.packages)):
            seen: dict[tuple[str, str], str] = {}
            for entry in entries:  # one version per package and architecture: apt would install only one
                key = (entry.package, entry.architecture)
                if key in seen:
                    raise ValueError(f"{field} lists {entry.package}:{entry.architecture} twice "
                                     f"({seen[key]} and {entry.version})")
                seen[key] = entry.version
        stray = next((e.name for e in self.pip if e.layer in self.pending_layers), None)
        if stray:
            raise ValueError(f"pip entry {stray!r} is in a layer the lock leaves pending")
        stray = next((e.component for e in self.archives if e.layer in self.pending_layers), None)
        if stray:
            raise ValueError(f"archive entry {stray!r} is in a layer the lock leaves pending")
        twice = next((e.wheel.name for e in self.archives if e.wheel.name in names), None)
        if twice:
            raise ValueError(f"archives install {twice!r}, which pip lists too")
        return self

    def python_versions(self) -> dict[str, str]:
        """Every Python distribution the image gets (name -> version): what its validation holds it to (the pip
        entries, and the wheels the archives carry)."""
        return {**{entry.name: entry.version for entry in self.pip},
                **{entry.wheel.name: entry.wheel.version for entry in self.archives}}

    def layer_entries(self, layer: str) -> list[PipEntry]:
        return [entry for entry in self.pip if entry.layer == layer]


def lock_path(releases_dir: Path, release: str, flavor: str, platform: str = DEFAULT_PLATFORM) -> Path:
    """Where a flavor's lock for one platform lives: beside its manifest (RELEASE-FLAVOR.lock.json for the default
    platform, RELEASE-FLAVOR.arm64.lock.json for linux/arm64: flavor names hold no '.')."""
    qualifier = PLATFORMS[platform].qualifier
    return releases_dir / f"{release}-{flavor}{'.' + qualifier if qualifier else ''}.lock.json"


def read_lock(path: Path) -> Lock:
    """Parse and validate one lock file; every problem is one line naming the file and the field."""
    data = bounded_read.load_json(path, ManifestError, MAX_LOCK_BYTES)
    try:
        return Lock.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(one_line(path, exc, "regenerate it with 'ngc-paddle lock'")) from None
