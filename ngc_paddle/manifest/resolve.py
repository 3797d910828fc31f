"""Turn one flavor of a manifest into what the image carries, and apply a build's source mirrors.

Why: the build never restates a version: the image carries the flavor's resolved view as JSON for
the banner, validation and notes (image_manifest); each layer's build arguments come from the
manifest and the flavor's lock together (ngc_paddle/lock/layer_args.py). A run enters here once per
flavor, from ngc_paddle/flavor.py (ResolvedRelease), which hands everything below the resolved flavor.
"""

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from ngc_common.error_line import one_line
from ngc_common.image_paths import ARCHIVE_LIBS
from ngc_paddle.distro import from_base_image
from ngc_paddle.driver import image_driver_facts
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.manifest.schema import Flavor, Manifest, Source


def apply_source_overrides(manifest: Manifest, overrides: Mapping[str, str]) -> Manifest:
    """Point named sources at a mirror (URL) or a wheel folder (path) for this build only; an archive source takes
    either (a URL, or a folder under wheelhouse/)."""
    sources = dict(manifest.sources)
    for name, where in overrides.items():
        if name not in sources:
            raise ManifestError(
                f"--source {name}={where}: release {manifest.release} has no source {name!r}; "
                f"fix: use one of {sorted(sources)}"
            )
        kind = sources[name].kind
        field = "path" if kind == "wheel-dir" or (kind == "archive" and "://" not in where) else "url"
        other = {"url": None, "path": None} if kind == "archive" else {}
        try:
            sources[name] = Source.model_validate({**sources[name].model_dump(), **other, field: where})
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


def platform_differences(manifest: Manifest, flavor: str) -> list[str]:
    """Where a flavor's platforms get another version of a component, one line each with the reason: what `manifest
    show` and the release notes say beside one platform's view."""
    spec = flavor_of(manifest, flavor)
    first = spec.platforms[0]
    return [f"{platform}: {name} {pin.version} (not {comp.version} as on {first}): "
            f"{pin.why}" for name, comp in spec.components.items() for platform, pin in comp.on_platform.items()]


def source_location(source: Source) -> str:
    """A human-readable place for error messages and the banner."""
    if source.kind == "wheel-dir":
        return f"wheel folder {source.path}"
    if source.kind == "archive" and source.path:
        return f"archive folder {source.path}"
    if source.kind == "debian":
        return f"{source.url} {source.suite}"
    return str(source.url)


def image_manifest(manifest: Manifest, flavor_name: str, locked_python: Mapping[str, str] | None = None,
                   pending_layers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The resolved manifest baked into the image at ngc_common.image_paths.MANIFEST; `locked_python`: every Python
    distribution the flavor's lock installs (name -> version), which the image's validation holds it to;
    `pending_layers`: the lock's left-out layers (layer -> why), whose components go to `left_out`, not
    `components`, so that the banner, the notes and the checks see them absent, with the reason."""
    flavor = flavor_of(manifest, flavor_name)
    pending = dict(pending_layers or {})
    components: dict[str, Any] = {}
    left_out: dict[str, Any] = {layer: {"reason": why, "components": {}} for layer, why in sorted(pending.items())}
    for name, comp in flavor.components.items():
        source = manifest.sources[comp.source]
        into = left_out[comp.layer]["components"] if comp.layer in pending else components
        into[name] = {
            "layer": comp.layer,
            "kind": comp.kind,
            "package": comp.package or comp.image,
            "version": comp.version,
            "cuda": comp.cuda,
            "built_against": comp.built_against,
            "license": comp.license,
            "source": {"name": comp.source, "kind": source.kind, "location": source_location(source)},
        }
        if comp.kind == "archive":  # where its libraries go (layers/lib/install_archive_layer.py)
            into[name].update(file=comp.file, libraries=ARCHIVE_LIBS.format(component=name))
        if comp.known_unresolved:  # another platform's wheel with libraries that cannot resolve, and why
            into[name]["known_unresolved"] = dict(comp.known_unresolved)
        if comp.runs_with:  # a dependency pinned at another version than it was built against, and why
            into[name]["runs_with"] = {dep: r.model_dump() for dep, r in comp.runs_with.items()}
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
        "left_out": left_out,
        "locked_python": dict(sorted(locked_python.items())) if locked_python is not None else None,
    }
