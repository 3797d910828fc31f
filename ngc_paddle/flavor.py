"""A release and its flavors resolved once per run: what every step of a build or a release reads.

The long form: docs/design-notes.md, section `ngc_paddle/flavor.py`.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ngc_paddle.cuda import CudaSpec
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.lock.check import apt_packages, lock_status
from ngc_paddle.lock.layer_args import layer_args as build_args
from ngc_paddle.lock.lock_file import Lock, lock_path
from ngc_paddle.lock.subject import ManifestFlavor
from ngc_paddle.manifest.loader import find_manifest, latest_release, load_manifest
from ngc_paddle.manifest.resolve import apply_source_overrides, flavor_of, image_manifest
from ngc_paddle.manifest.schema import Component, Flavor, Manifest
from ngc_paddle.platforms import DEFAULT_PLATFORM, platform_named


def build_name(flavor: str, platform: str = DEFAULT_PLATFORM) -> str:
    """A flavor's name in its tags, bake targets and report folders on one platform: `cpu` on the default platform
    (as before platforms existed), `cpu-arm64` on another, so its images are never taken for the default one's."""
    qualifier = platform_named(platform).qualifier
    return f"{flavor}-{qualifier}" if qualifier else flavor


def release_tags(manifest: Manifest, flavor: str, platform: str = DEFAULT_PLATFORM) -> tuple[str, ...]:
    """Tags the finished image takes: RELEASE-FLAVOR, and RELEASE for the default flavor; on another platform only
    RELEASE-FLAVOR-ARCH (the engine holds one platform per tag here: docs/building.md, "Another platform")."""
    tags = [f"{manifest.image}:{manifest.release}-{build_name(flavor, platform)}"]
    if flavor == manifest.default_flavor and platform == DEFAULT_PLATFORM:
        tags.append(f"{manifest.image}:{manifest.release}")
    return tuple(tags)


def manifest_json(resolved: Mapping[str, Any]) -> str:
    """The image's manifest as the suite layer writes it to /opt/ngc-paddle/manifest.json (its MANIFEST_JSON
    build argument: the build needs no generated file in its context, so a plain `docker buildx bake` works)."""
    return json.dumps(resolved, indent=2, sort_keys=True) + "\n"


def layer_repository(manifest: Manifest) -> str:
    """Where a release's intermediate layer images live: beside its image, so a scratch copy that
    renames the image (tests, benchmarks) never retags or deletes the release's own layers."""
    return f"{manifest.image}-layers"


def manifest_on(manifest: Manifest, flavor: str, platform: str) -> Manifest:
    """The manifest as one platform of a flavor sees it: that flavor's components at their versions there (the
    manifest itself for the flavor's first platform). A platform the flavor does not build is one line with the fix."""
    spec = manifest.flavors[flavor]  # a name the caller checked
    if platform not in spec.platforms:
        pending = spec.platforms_pending.get(platform)
        why = f" ({pending})" if pending else ""
        raise ManifestError(f"release {manifest.release}: flavor {flavor} is not built for {platform}{why}; fix: "
                            f"use one of its platforms ({', '.join(spec.platforms)}) or add it to "
                            f"flavors.{flavor}.platforms")
    if platform == spec.platforms[0]:
        return manifest
    return manifest.model_copy(update={"flavors": {**manifest.flavors, flavor: spec.on(platform)}})


@dataclass(frozen=True)
class ResolvedFlavor:
    """One flavor of one release, resolved for a run. Frozen: a step that needs another view makes a copy."""

    root: Path  # the repository root, resolved
    manifest: Manifest  # with the run's source overrides applied
    name: str
    sources: Mapping[str, str]  # the overrides applied (NAME -> URL or path)
    lock: Lock | None  # matching the manifest; None when there is none that does (`pending`, `lock_problem`)
    pending: str  # why the manifest says the flavor has no lock yet ("" when it does not say so)
    manifest_text: str = field(repr=False)  # what the image carries (/opt/ngc-paddle/manifest.json), as JSON
    tags: tuple[str, ...]  # the release tags the finished image takes; the first is the image's name
    layer_tags: Mapping[str, str]  # layer -> the tag of its image (the top layer: the release image)
    # The image by digest (REPOSITORY@sha256:...) once a registry holds it: what a gate run elsewhere pulls,
    # so that no node runs a moving tag. Set with with_digest (the release's push of a candidate tag).
    digest: str | None = None
    lock_problem: str = ""  # the one line saying why the lock file cannot be used (missing, or not this manifest's)
    # The image's manifest as the release declares it, in its own key order, without the lock's Python pins: what
    # `manifest show` prints and a layer image is checked against.
    declared_text: str = field(default="", repr=False)
    # The run's release, so that a step needing the release's other flavors (the bake file names them all) takes
    # them resolved, once, from it.
    owner: "ResolvedRelease | None" = field(default=None, repr=False, compare=False)
    # The platform resolved (ngc_paddle/platforms.py): `manifest` holds the flavor at its versions there, `lock` is
    # that platform's lock. Default: the flavor's first platform.
    platform: str = DEFAULT_PLATFORM

    @property
    def release(self) -> str:
        return self.manifest.release

    @property
    def build_name(self) -> str:
        """The flavor's name in its tags, bake targets and reports on its platform (`cpu`, `cpu-arm64`)."""
        return build_name(self.name, self.platform)

    @property
    def reports_dir(self) -> Path:
        """Where its builds write their reports (build.json, the provenance, the index record)."""
        return self.root / "build" / "reports" / f"{self.release}-{self.build_name}"

    @property
    def foreign(self) -> bool:
        """Built for another platform than the default one: its pip layers install on the build platform."""
        return self.platform != DEFAULT_PLATFORM

    @property
    def newest(self) -> bool:
        """Whether this is the newest release as committed (no mirrors applied): docker-bake.override.json's."""
        return not self.sources and self.release == latest_release(self.root / "releases")

    @property
    def image_manifest(self) -> dict[str, Any]:
        """The manifest the image carries, as data (a fresh copy: the resolved flavor itself stays as it is)."""
        return json.loads(self.manifest_text)

    @property
    def declared_manifest(self) -> dict[str, Any]:
        """The image's manifest without the lock's Python pins (locked_python: None), as a fresh copy."""
        return json.loads(self.declared_text)

    @property
    def spec(self) -> Flavor:
        """The flavor as the manifest says it."""
        return self.manifest.flavors[self.name]

    @property
    def layers(self) -> tuple[str, ...]:
        """The flavor's layers, bottom first."""
        return tuple(self.spec.layers)

    def components(self, layer: str | None = None) -> dict[str, Component]:
        """The flavor's components (those one layer installs, when `layer` is given), in manifest order."""
        return {name: c for name, c in self.spec.components.items() if layer is None or c.layer == layer}

    @property
    def left_out_layers(self) -> Mapping[str, str]:
        """The optional layers the lock leaves out (built empty, so absent from the image) -> why."""
        return MappingProxyType(dict(self.lock.pending_layers)) if self.lock is not None else MappingProxyType({})

    def installed_components(self) -> dict[str, Component]:
        """The components the image holds: the flavor's, less those of the layers the lock left out."""
        return {name: c for name, c in self.components().items() if c.layer not in self.left_out_layers}

    @property
    def apt_packages(self) -> list[str]:
        """The Debian packages the os layer installs by name (unpinned; the lock pins them)."""
        return apt_packages(self.spec)

    @property
    def source_locations(self) -> dict[str, str]:
        """Each source the flavor's components come from -> where it is (mirrors applied), as the image says it."""
        return {c["source"]["name"]: c["source"]["location"] for c in self.image_manifest["components"].values()}

    @property
    def cuda(self) -> CudaSpec | None:
        return self.spec.cuda

    @property
    def driver_facts(self) -> dict[str, Any] | None:
        """The CUDA version with the driver it needs (minimum, full, NVIDIA_REQUIRE_CUDA); None without CUDA."""
        return self.image_manifest["cuda"]

    @property
    def pending_reason(self) -> str:
        """Why the flavor has no usable lock ("" when it has one): the manifest's reason, or the lock's problem."""
        return "" if self.lock is not None else (self.pending or self.lock_problem or "no lock")

    def layer_args(self, layer: str, base_image: str | None = None) -> dict[str, str]:
        """One layer's build arguments (ngc_paddle/lock/layer_args.py), from the lock the flavor has (or none)."""
        return build_args(self, layer, base_image)

    @property
    def image(self) -> str:
        """The release image's tag (RELEASE-FLAVOR)."""
        return self.tags[0]

    @property
    def reference(self) -> str:
        """What a container of this flavor is started from: the digest when one is known, else the tag."""
        return self.digest or self.image

    @property
    def needs_gpu(self) -> bool:
        """Whether the flavor's gates can prove it only on a GPU (a CUDA flavor)."""
        return self.spec.cuda is not None

    @property
    def lock_file(self) -> Path:
        return lock_path(self.root / "releases", self.release, self.name, self.platform)

    def build_lock(self) -> Lock:
        """The lock a build installs; a flavor without one (or with one that no longer matches the manifest)
        stops the build in one line, as it did before anything was resolved."""
        if self.lock_problem:
            raise ManifestError(self.lock_problem)
        if self.lock is None:
            raise ManifestError(f"{self.lock_file}: (file): flavor {self.name} has no lock yet ({self.pending}); "
                                f"fix: run 'ngc-paddle lock {self.release} --flavor {self.name} [--source NAME=URL]' "
                                "on a host that reaches its sources, commit the lock and drop lock.pending")
        return self.lock

    @property
    def release_run(self) -> "ResolvedRelease":
        """The release this flavor was resolved with (its other flavors resolved once, from it)."""
        if self.owner is None:
            return ResolvedRelease(self.root, self.manifest, self.sources, _flavors={(self.name, self.platform): self})
        return self.owner

    def with_digest(self, digest: str) -> "ResolvedFlavor":
        """This flavor with its image known by digest (`sha256:...` or a full `REPO@sha256:...`)."""
        repository = self.image.rsplit(":", 1)[0]
        return replace(self, digest=digest if "@" in digest else f"{repository}@{digest}")


@dataclass(frozen=True)
class ResolvedRelease:
    """A release's manifest (and the previous release's), loaded once for a run."""

    root: Path
    manifest: Manifest  # with the run's source overrides applied
    sources: Mapping[str, str]
    # The folder of the release's manifest and locks, as the command named it (its error lines name the files
    # so); None: the repository's releases/.
    folder: Path | None = None
    # resolved once, per (flavor, platform)
    _flavors: dict[tuple[str, str], ResolvedFlavor] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(cls, root: Path, release: str | None = None, sources: Mapping[str, str] | None = None,
             folder: Path | None = None) -> "ResolvedRelease":
        """Open a release (a name: FOLDER/RELEASE.yaml, default the newest; or a manifest file, whose folder then
        holds its locks); apply the mirrors given. FOLDER: the releases folder as the command names it (default:
        ROOT/releases, resolved). A mirror for a source the release lacks is bad input here, before anything runs."""
        root = root.resolve()
        release = release or latest_release(folder or root / "releases")
        if Path(release).suffix in (".yaml", ".yml"):
            path = Path(release)
            folder = path.parent
        else:
            path = find_manifest(release, folder or root / "releases")
        manifest = load_manifest(path)
        if sources:
            manifest = apply_source_overrides(manifest, sources)
        return cls(root, manifest, MappingProxyType(dict(sources or {})), folder)

    @property
    def release(self) -> str:
        return self.manifest.release

    @property
    def releases_dir(self) -> Path:
        """Where the release's manifest and its locks are."""
        return self.folder if self.folder is not None else self.root / "releases"

    def with_sources(self, sources: Mapping[str, str]) -> "ResolvedRelease":
        """This release with mirrors given (itself when none are): a bad mirror is one line, as in load()."""
        if not sources:
            return self
        manifest = apply_source_overrides(self.manifest, sources)
        return ResolvedRelease(self.root, manifest, MappingProxyType({**self.sources, **sources}), self.folder)

    @cached_property
    def previous_release(self) -> "ResolvedRelease | None":
        """The release before this one (by name), loaded on first use and then kept (a build alone never reads it),
        without the run's mirrors: month-over-month, the benchmark baselines, the A/B reference and the notes compare
        with it, and ask it for its flavors (`has_flavor`, `flavor`) rather than a name in its raw manifest."""
        older = sorted(p for p in self.releases_dir.glob("*.yaml") if p.stem < self.release)
        if not older:
            return None
        return ResolvedRelease(self.root, load_manifest(older[-1]), MappingProxyType({}), self.folder)

    def has_flavor(self, name: str) -> bool:
        """Whether the release has this flavor (a flavor new in a later release is absent from an earlier one)."""
        return name in self.manifest.flavors

    def flavor_name(self, name: str | None = None) -> str:
        """The flavor's name (default: the manifest's default flavor); an unknown flavor is one line naming the
        flavors there are (exit 2)."""
        name = name or self.manifest.default_flavor
        if not self.has_flavor(name):
            flavor_of(self.manifest, name)  # raises, in one line
        return name

    def tags(self, name: str | None = None) -> tuple[str, ...]:
        """The tags a flavor's release image takes (release_tags), for a command that only names the image."""
        return release_tags(self.manifest, self.flavor_name(name))

    def flavor(self, name: str | None = None, platform: str | None = None) -> ResolvedFlavor:
        """One flavor (default: the manifest's default flavor) on one of its platforms (default: its first), resolved
        once for the run (a second call gives the same object). An unknown flavor, or a platform it is not built for,
        is one line (exit 2); a lock that is pending, missing or no longer matches the manifest is kept as its reason,
        and the build refuses it (ResolvedFlavor.build_lock)."""
        name = self.flavor_name(name)
        platform = platform or self.manifest.flavors[name].platforms[0]
        if (name, platform) not in self._flavors:
            self._flavors[name, platform] = self._resolve(name, platform)
        return self._flavors[name, platform]

    def platforms(self, name: str) -> list[str]:
        """The platforms a flavor is built for, its first (whose versions the manifest's `version:` pins) first."""
        return list(self.manifest.flavors[self.flavor_name(name)].platforms)

    def flavors(self) -> dict[str, ResolvedFlavor]:
        """Every flavor of the release, resolved (the bake file names them all), in manifest order."""
        return {name: self.flavor(name) for name in self.manifest.flavors}

    def _resolve(self, name: str, platform: str) -> ResolvedFlavor:
        manifest = manifest_on(self.manifest, name, platform)  # the flavor at its versions on the platform
        try:
            status, lock = lock_status(ManifestFlavor(manifest, name, platform), self.releases_dir)
            problem = ""
        except ManifestError as exc:
            status, lock, problem = "unusable", None, str(exc)
        # the layers the lock leaves out are absent from the image: `left_out`, with the reason, not `components`
        declared = image_manifest(manifest, name, None, lock.pending_layers if lock is not None else None)
        pending = self.manifest.flavors[name].lock
        locked = dict(sorted(lock.python_versions().items())) if lock is not None else None
        tags = release_tags(self.manifest, name, platform)
        layers = self.manifest.flavors[name].layers
        layer_tags = {layer: f"{layer_repository(self.manifest)}:{self.release}-{build_name(name, platform)}-{layer}"
                      for layer in layers[:-1]}
        layer_tags[layers[-1]] = tags[0]
        return ResolvedFlavor(self.root, manifest, name, self.sources, lock,
                              pending.pending if status == "pending" and pending is not None else "",
                              manifest_json({**declared, "locked_python": locked}), tags, MappingProxyType(layer_tags),
                              lock_problem=problem, declared_text=json.dumps(declared), owner=self, platform=platform)


def resolve(root: Path, release: str | None, flavor: str | None,
            sources: Mapping[str, str] | None = None) -> ResolvedFlavor:
    """One flavor of one release for a run that needs only it (`ngc-paddle build`)."""
    return ResolvedRelease.load(root, release, sources).flavor(flavor)

