"""The structure of a release manifest (`releases/YY.MM.yaml`).

Why: a manifest pins every component of every flavor and says where it comes from; the schema
rejects unknown keys, bad versions and dangling references before any build starts. Rules that
relate fields to each other (CUDA majors, layers and their components) live in consistency.py.
"""

import re
from typing import Annotated, Any, Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from pydantic import AfterValidator, Field, field_validator, model_validator

from ngc_common.strict_model import Strict
from ngc_paddle.cuda import CudaSpec
from ngc_paddle.fields import (
    ArchiveFile,
    DebianName,
    DebianSuite,
    ImageName,
    ImageRef,
    RelPath,
    Text,
    Token,
    Url,
    check,
    debian_name,
    pip_name,
)
from ngc_paddle.layers import LAYER_ORDER
from ngc_paddle.platforms import DEFAULT_PLATFORM

# All patterns are ASCII-only ([0-9], not \d, which takes full-width digits) and end in \Z, not $
# (which lets a trailing newline through).
RELEASE_RE = re.compile(r"^[0-9]{2}\.(0[1-9]|1[0-2])\Z")
# Debian package versions: [epoch:]upstream[-revision]; also accepts plain "12" or "3.11".
DEBIAN_VERSION_RE = re.compile(r"^([0-9]+:)?[0-9][A-Za-z0-9.+~-]{0,100}\Z")
PIP_VERSION_RE = re.compile(r"^v?[0-9][A-Za-z0-9.+!_-]{0,100}\Z")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}\Z")
VERSION_PREFIX_RE = re.compile(r"^[0-9]+(\.[0-9]+){0,3}\Z")

Name = Annotated[str, AfterValidator(lambda v: check(v, NAME_RE, "a name of lower-case letters, digits and '-'"))]
VersionPrefix = Annotated[str, AfterValidator(lambda v: check(v, VERSION_PREFIX_RE, "a version prefix (e.g. 10.5)"))]

PACKAGE_KEY_RE = re.compile(r"^(pypi|deb):[a-z0-9][a-z0-9+._-]*$")  # as the SBOM's package URLs name them
LayerName = Literal[LAYER_ORDER]  # the names of ngc_paddle/layers.py, in stacking order


# A folder source (wheel-dir, archive `path`) lies under this one: the pip layers bind-mount it at build time.
BUILD_FOLDER = "wheelhouse"


class Source(Strict):
    """Where packages come from: a pip index, a folder of wheels, a Debian archive, or a vendor's archives (an
    `archive` source: the files at URL/FILE, or in a folder under wheelhouse/, for components of kind `archive`)."""

    kind: Literal["pip-index", "wheel-dir", "debian", "archive"]
    url: Url | None = None
    path: RelPath | None = None
    suite: DebianSuite | None = None
    security_url: Url | None = None  # debian: the security archive, if the image takes its updates
    description: Text = ""

    @model_validator(mode="after")
    def _fields_match_kind(self) -> "Source":
        if self.kind in ("pip-index", "debian") and not self.url:
            raise ValueError(f"a {self.kind} source needs a 'url'")
        if self.kind == "wheel-dir" and not self.path:
            raise ValueError("a wheel-dir source needs a 'path' (relative to the repository root)")
        if self.kind == "archive":
            if bool(self.url) == bool(self.path):
                raise ValueError("an archive source needs a 'url' (the folder the archives are served from) or a "
                                 f"'path' (a folder under {BUILD_FOLDER}/), not both")
            if self.path and self.path.split("/")[0] != BUILD_FOLDER:
                raise ValueError(f"an archive source's path {self.path!r} must lie under {BUILD_FOLDER}/, the folder "
                                 "the layers mount at build time")
        if self.kind == "debian" and not self.suite:
            raise ValueError("a debian source needs a 'suite' (e.g. bookworm)")
        if self.kind != "debian" and (self.suite or self.security_url):
            raise ValueError(f"a {self.kind} source takes no 'suite' or 'security_url'")
        return self


class RunsWith(Strict):
    """A dependency pinned at another version than the one a component was built against, and why: only within the
    major that was built against (the soname major, libnvinfer.so.8, is what the loader asks for)."""

    version: VersionPrefix
    why: Text


class PlatformPin(Strict):
    """A component's version on one platform, where the registries lack the flavor's version for it (PyPI has no
    aarch64 wheel of paddlepaddle 3.3.1), and why: `manifest check` refuses a pin without its reason."""

    version: str
    why: Text | None = None  # required; checked in consistency.py, so that its absence is one line with the fix
    # Shared objects of the component's wheel on this platform that cannot resolve (the upstream wheel's defect), each
    # with why: the image's link check reports them as waived, and the validation's verdict is NOT PROVEN.
    unresolved: dict[Token, Text] = Field(default_factory=dict)


class Component(Strict):
    """One pinned piece of the stack and the layer that installs it.

    kind `archive`: a vendor's archive (TensorRT's tar) from a source of kind `archive`, located by `file`; its
    shared libraries go to /opt/<component>/lib and the Python wheel it carries for the image's Python (the
    distribution named by `package`, in the archive's python/ folder) is installed, both locked by sha256."""

    layer: LayerName
    kind: Literal["pip", "apt", "image", "archive"]
    version: str
    source: Name
    package: Token | None = None  # pip distribution or Debian package; not used by kind=image
    image: ImageRef | None = None  # kind=image: the base image reference
    cuda: Annotated[int, Field(ge=10, le=99)] | None = None  # CUDA major; inferred from the package name if unset
    built_against: dict[Name, VersionPrefix] = Field(default_factory=dict)  # component -> version prefix
    runs_with: dict[Name, RunsWith] = Field(default_factory=dict)  # a built_against dependency pinned otherwise
    file: ArchiveFile | None = None  # kind=archive: the archive's file name at its source
    extra_packages: list[DebianName] = Field(default_factory=list)  # apt: more Debian packages, unpinned
    license: Token | None = None
    hold: Text | None = None  # why `release new` must not propose a newer version
    # platform (linux/arm64) -> another version there, with why; consistency.py checks the platforms and reasons
    on_platform: dict[Token, PlatformPin] = Field(default_factory=dict)
    # Set by on(platform) from its pin's `unresolved` (never written in a manifest): what the image's manifest carries.
    known_unresolved: dict[Token, Text] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _fields_match_kind(self) -> "Component":
        if self.kind == "image" and not self.image:
            raise ValueError("a component of kind 'image' needs 'image' (e.g. debian:bookworm-slim)")
        if self.kind in ("pip", "apt", "archive") and not self.package:
            raise ValueError(f"a component of kind {self.kind!r} needs 'package'")
        if self.kind != "image" and self.image:
            raise ValueError(f"a component of kind {self.kind!r} takes no 'image'")
        if self.kind != "apt" and self.extra_packages:
            raise ValueError("only a component of kind 'apt' takes 'extra_packages'")
        if (self.kind == "archive") != (self.file is not None):
            raise ValueError("a component of kind 'archive' needs 'file' (the archive's file name); no other takes it")
        stray = sorted(set(self.runs_with) - set(self.built_against))
        if stray:
            raise ValueError(f"runs_with names {stray}, which built_against does not")
        if self.kind in ("pip", "archive"):
            pip_name(str(self.package))
        elif self.kind == "apt":
            debian_name(str(self.package))
        if self.kind == "pip":
            if not PIP_VERSION_RE.match(self.version):
                raise ValueError(f"version {self.version!r} is not a PEP 440 version (e.g. 2.4.0)")
            try:
                parsed = Version(self.version)
            except InvalidVersion:
                raise ValueError(f"version {self.version!r} is not a PEP 440 version (e.g. 2.4.0)") from None
            if str(parsed) != self.version and self.version.lstrip("v") != str(parsed):
                raise ValueError(f"version {self.version!r} is not normalised; write {parsed}")
        elif not DEBIAN_VERSION_RE.match(self.version):
            raise ValueError(f"version {self.version!r} is not a Debian-style version (e.g. 12 or 3.11)")
        return self

    @property
    def requirement(self) -> str:
        """The pip requirement string that pins this component."""
        return f"{self.package}=={self.version}"

    def on(self, platform: str) -> "Component":
        """The component as one platform gets it: its version there (the pin's, or its own), without the pins."""
        pin = self.on_platform.get(platform)
        return self.model_copy(update={"version": pin.version if pin else self.version, "on_platform": {},
                                       "known_unresolved": dict(pin.unresolved) if pin else {}})


class LockPolicy(Strict):
    """Why a flavor has no lock yet (e.g. its sources cannot be reached from the host that locks).

    `manifest check` accepts and prints it; `ngc-paddle build` refuses the flavor until a lock exists.
    """

    pending: Text


class MonthOverMonth(Strict):
    """Why a flavor may differ from the previous release's where the month-over-month gates would block."""

    packages: dict[Annotated[str, AfterValidator(lambda v: check(v, PACKAGE_KEY_RE, "pypi:NAME or deb:NAME"))],
                   Text] = Field(default_factory=dict)  # a removed or downgraded package -> why
    size_growth: Text | None = None  # why the image may grow more than 10 %


class Flavor(Strict):
    """One image variant of a release (cpu, gpu, ...): its layers and pinned components."""

    description: Text
    layers: list[LayerName]
    cuda: CudaSpec | None = None
    lock: LockPolicy | None = None
    # Layers the lock leaves out where their source cannot be reached (layer -> why): `ngc-paddle lock` then
    # records them pending in the lock, and the build makes them empty layers and says so (TensorRT from
    # NVIDIA's index in a flavor that otherwise builds from PyPI); with a mirror they are locked and built.
    optional_layers: dict[LayerName, Text] = Field(default_factory=dict)
    components: dict[Name, Component]
    month_over_month: MonthOverMonth = Field(default_factory=MonthOverMonth)
    # The platforms the flavor is built, locked and released for (ngc_paddle/platforms.py), the first the default
    # one that components' `version:` pins; a platform it does not build yet -> why (where its sources are).
    platforms: list[Token] = Field(default_factory=lambda: [DEFAULT_PLATFORM])
    platforms_pending: dict[Token, Text] = Field(default_factory=dict)

    def on(self, platform: str) -> "Flavor":
        """The flavor as one of its platforms builds it: every component at its version there."""
        return self.model_copy(update={"components": {name: comp.on(platform)
                                                      for name, comp in self.components.items()}})

    def platform_versions(self, component: str) -> dict[str, str]:
        """The component's version on each platform of the flavor (platform -> version), in the flavor's order."""
        return {platform: self.components[component].on(platform).version for platform in self.platforms}

    @model_validator(mode="after")
    def _cuda_only_in_cuda_flavors(self) -> "Flavor":
        if self.cuda is None:
            pinned = sorted(name for name, comp in self.components.items() if comp.cuda is not None)
            if pinned:
                raise ValueError(f"components {pinned} set 'cuda:' in a flavor without CUDA (drop it)")
        return self

    @model_validator(mode="after")
    def _one_version_per_pip_package(self) -> "Flavor":
        """Two entries pinning one pip distribution (by its PEP 503 name) at two versions: the lock, the bake file
        and the image would each keep one of them, and not the same one."""
        seen: dict[str, tuple[str, Component]] = {}
        for name, comp in self.components.items():
            if comp.kind != "pip":
                continue
            key = canonicalize_name(str(comp.package))
            first = seen.setdefault(key, (name, comp))
            if first[1].version != comp.version:
                raise ValueError(f"components {first[0]!r} ({first[1].requirement}) and {name!r} ({comp.requirement}) "
                                 f"pin the pip package {key} at two versions; keep one entry")
        return self

    @model_validator(mode="after")
    def _optional_layers_are_layers(self) -> "Flavor":
        stray = sorted(set(self.optional_layers) - set(self.layers))
        if stray:
            raise ValueError(f"optional_layers {stray} are not in this flavor's layers {self.layers}")
        return self

    @field_validator("layers")
    @classmethod
    def _ordered(cls, layers: list[str]) -> list[str]:
        if len(set(layers)) != len(layers):
            raise ValueError(f"layers {layers} lists a layer twice")
        canonical = [name for name in LAYER_ORDER if name in layers]
        if layers != canonical:
            raise ValueError(f"layers must stack in the order {list(LAYER_ORDER)}; write {canonical}")
        return layers


class RuntimeUser(Strict):
    """Who the release's images run as (their USER): the scan gate blocks an image whose USER differs. Root is
    allowed only with the reason, which the release notes print."""

    name: Annotated[str, AfterValidator(lambda v: check(v, re.compile(r"[a-z_][a-z0-9_-]{0,31}"), "a user name"))]
    uid: Annotated[int, Field(ge=0, le=2**31 - 1)]
    gid: Annotated[int, Field(ge=0, le=2**31 - 1)]
    root_reason: Text | None = None  # required with uid 0

    @model_validator(mode="after")
    def _root_says_why(self) -> "RuntimeUser":
        if self.uid == 0 and not self.root_reason:
            raise ValueError("uid 0 (root) needs 'root_reason': why this release's images run as root")
        if self.uid != 0 and self.root_reason:
            raise ValueError(f"root_reason is for uid 0, not uid {self.uid}")
        return self


class Manifest(Strict):
    """A monthly release: its id, package sources and flavors."""

    schema_version: Literal[1]
    release: str
    image: ImageName = "ngc-paddle"
    default_flavor: Name
    dependency_source: Name = "pypi"  # pip index for dependencies the manifest does not pin
    # Who the images run as; None (older manifests): any non-root user, the gate refuses root.
    user: RuntimeUser | None = None
    sources: dict[Name, Source]
    flavors: dict[Name, Flavor]

    @field_validator("schema_version", mode="before")
    @classmethod
    def _plain_int(cls, v: Any) -> Any:
        if type(v) is not int:  # True == 1 and 1.0 == 1, but neither is a schema version
            raise ValueError(f"schema_version must be the integer 1, not {v!r}")
        return v

    @field_validator("release")
    @classmethod
    def _release(cls, v: str) -> str:
        if not RELEASE_RE.match(v):
            raise ValueError(f"release {v!r} must be YY.MM (e.g. 26.12)")
        return v

    @model_validator(mode="after")
    def _default_flavor_exists(self) -> "Manifest":
        if self.default_flavor not in self.flavors:
            raise ValueError(
                f"default_flavor {self.default_flavor!r} is not one of the flavors {sorted(self.flavors)}"
            )
        dep = self.sources.get(self.dependency_source)
        if dep is None or dep.kind != "pip-index":
            raise ValueError(f"dependency_source {self.dependency_source!r} must name a pip-index source")
        return self
