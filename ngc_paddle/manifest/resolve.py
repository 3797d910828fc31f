"""Turn one flavor of a manifest into what the build and the image need.

Why: the build never restates a version; it takes every argument of every layer from here,
and the image carries the same resolved view as JSON for the banner, validation and notes.
"""

import json
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ngc_common.error_line import one_line
from ngc_paddle.distro import from_base_image
from ngc_paddle.driver import image_driver_facts, nvidia_require_cuda
from ngc_paddle.errors import ManifestError
from ngc_paddle.layers import BASE_LAYER, TOP_LAYER
from ngc_paddle.manifest.schema import Component, Flavor, Manifest, Source

if TYPE_CHECKING:
    from ngc_paddle.lock.model import Lock



def apply_source_overrides(manifest: Manifest, overrides: Mapping[str, str]) -> Manifest:
    """Point named sources at a mirror (URL) or a wheel folder (path) for this build only."""
    sources = dict(manifest.sources)
    for name, where in overrides.items():
        if name not in sources:
            raise ManifestError(
                f"--source {name}={where}: release {manifest.release} has no source {name!r}; "
                f"fix: use one of {sorted(sources)}"
            )
        field = "path" if sources[name].kind == "wheel-dir" else "url"
        try:
            sources[name] = Source.model_validate({**sources[name].model_dump(), field: where})
        except ValidationError as exc:
            fix = "give a plain http(s) URL or a relative path"
            raise ManifestError(one_line(f"--source {name}", exc, fix)) from None
    return manifest.model_copy(update={"sources": sources})


def flavor_of(manifest: Manifest, flavor: str) -> Flavor:
    try:
        return manifest.flavors[flavor]
    except KeyError:
        raise ManifestError(
            f"release {manifest.release} has no flavor {flavor!r}; fix: use one of {sorted(manifest.flavors)}"
        ) from None


def source_location(source: Source) -> str:
    """A human-readable place for error messages and the banner."""
    if source.kind == "wheel-dir":
        return f"wheel folder {source.path}"
    if source.kind == "debian":
        return f"{source.url} {source.suite}"
    return str(source.url)


def image_manifest(manifest: Manifest, flavor_name: str) -> dict[str, Any]:
    """The resolved manifest baked into the image at ngc_common.image_paths.MANIFEST."""
    flavor = flavor_of(manifest, flavor_name)
    components = {}
    for name, comp in flavor.components.items():
        source = manifest.sources[comp.source]
        components[name] = {
            "layer": comp.layer,
            "kind": comp.kind,
            "package": comp.package or comp.image,
            "version": comp.version,
            "cuda": comp.cuda,
            "built_against": comp.built_against,
            "license": comp.license,
            "source": {"name": comp.source, "kind": source.kind, "location": source_location(source)},
        }
    os_component = flavor.components["os"]
    distribution = from_base_image(os_component.image, os_component.version)  # Debian 12, Ubuntu 20.04
    cuda = None
    if flavor.cuda is not None:
        cuda = {**flavor.cuda.model_dump(), **image_driver_facts(flavor.cuda)}
    return {
        "schema_version": 1,
        "product": manifest.image,
        "release": manifest.release,
        "flavor": flavor_name,
        "description": flavor.description,
        "layers": list(flavor.layers),
        "distribution": distribution.as_dict() if distribution else None,
        "cuda": cuda,
        "components": components,
    }


def layer_components(flavor: Flavor, layer: str) -> dict[str, Component]:
    return {name: comp for name, comp in flavor.components.items() if comp.layer == layer}


def source_date_epoch(lock: "Lock | None") -> str | None:
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


def layer_args(manifest: Manifest, flavor_name: str, layer: str, base_image: str | None = None,
               lock: "Lock | None" = None, pending: str | None = None) -> dict[str, str]:
    """The build arguments of one layer target, all derived from the manifest and the flavor's lock.

    Without a lock (`pending` says why) the pip layers get no entries and refuse to build, and the
    os layer installs its packages unpinned (only `ngc-paddle lock` builds it that way, to read them).
    """
    flavor = flavor_of(manifest, flavor_name)
    when = source_date_epoch(lock)
    epoch = {"SOURCE_DATE_EPOCH": when} if when is not None else {}  # layers/lib/clamp-mtimes.sh, hash-based .pyc
    if layer == BASE_LAYER:
        return {**_os_args(manifest, flavor, base_image, lock), **epoch}
    spec = _pip_spec(manifest, flavor_name, layer, lock, pending or "no lock")
    args = {"LAYER_SPEC": json.dumps(spec, sort_keys=True)}
    if layer == "cuda" and flavor.cuda is not None:
        args["CUDA_VERSION"] = flavor.cuda.version
        args["NVIDIA_REQUIRE_CUDA"] = nvidia_require_cuda(flavor.cuda)
    if layer == TOP_LAYER:
        args["MANIFEST_FILE"] = f"build/manifests/{manifest.release}-{flavor_name}.json"
    return {**args, **epoch}


def _os_args(manifest: Manifest, flavor: Flavor, base_image: str | None, lock: "Lock | None") -> dict[str, str]:
    os_comp, python = flavor.components["os"], flavor.components["python"]
    debian = manifest.sources[python.source]
    packages = [f"{p.package}={p.version}" for p in lock.debian] if lock is not None else \
        [str(python.package), *python.extra_packages]
    return {
        "BASE_IMAGE": base_image or str(os_comp.image),
        "APT_MIRROR": str(debian.url),
        "APT_SUITE": str(debian.suite),
        "APT_SECURITY": debian.security_url or "",
        "APT_PACKAGES": " ".join(packages),
        "APT_UPGRADE": "0" if lock is not None else "1",  # unlocked: resolve with -updates/-security applied
        "PYTHON_VERSION": python.version,
    }


def _pip_spec(manifest: Manifest, flavor_name: str, layer: str, lock: "Lock | None", pending: str) -> dict[str, Any]:
    """What install_pip_layer.py installs: the lock's entries for this layer and where each source is."""
    entries = lock.layer_entries(layer) if lock is not None else []
    sources = {}  # only those this layer installs from: a mirror for another source must not bust its cache
    for name in sorted({e.source for e in entries}):
        source = manifest.sources[name]
        sources[name] = {"kind": source.kind, "location": source.path if source.kind == "wheel-dir" else source.url}
    return {
        "release": manifest.release,
        "flavor": flavor_name,
        "layer": layer,
        "manifest": f"releases/{manifest.release}.yaml",
        "lock": f"releases/{manifest.release}-{flavor_name}.lock.json",
        "pending": None if lock is not None else pending,
        "sources": sources,
        "packages": [{"name": e.name, "version": e.version, "sha256": e.sha256, "source": e.source,
                      "component": e.component} for e in entries],
    }
