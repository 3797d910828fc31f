"""Generate a release's bake targets and groups from its manifest and locks.

Why: the manifest alone says which flavors exist, which layers each stacks in which order, which
flavor is the default, and what versions and sources each layer installs. docker-bake.hcl keeps only
what the manifest does not say (variables, the tag functions, `_common`/`_final`); this writes every
target (one per layer and flavor, each built FROM the target below through a named `target:` context)
and every group: into docker-bake.override.json for the newest release (buildx reads it beside
docker-bake.hcl by itself, so `docker buildx bake` at the repo root is the build) and into
build/bake/<release>.json for any release, with the labels and cache settings of one `make image` run.
"""

import json
import os
from pathlib import Path
from typing import Any

from ngc_paddle import engine, outputs
from ngc_paddle.flavor import ResolvedFlavor, ResolvedRelease, layer_repository
from ngc_paddle.host_errors import ManifestError, ToolchainError
from ngc_paddle.layers import FOREIGN_PIP_DOCKERFILE, bake_target, dockerfile_for
from ngc_paddle.manifest.schema import Manifest
from ngc_paddle.outputs import ensure_folder

HCL = Path("docker-bake.hcl")
OVERRIDE = Path("docker-bake.override.json")  # read by buildx beside docker-bake.hcl: the newest release
BELOW = "ngc-layer-below"  # the named context each layer is built FROM: the target of the layer below
NATIVE_PYTHON = "ngc-native-python"  # another platform's pip layers install in this one (the build platform's os layer)
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"  # docker-bake.hcl's default; the CA_BUNDLE variable overrides


def _hcl_call(function: str, *params: str) -> str:
    """A bake string that calls a function of docker-bake.hcl, so tag naming stays in one place there."""
    return "${" + function + "(" + ", ".join(json.dumps(p) for p in params) + ")}"


def flavor_targets(flavor: ResolvedFlavor) -> dict[str, dict[str, Any]]:
    """The structure of a flavor's targets, in layer order: one per layer, each built FROM the one below
    (BASE_IMAGE), the top one inheriting `_final` and tagged as the release candidate. On another platform than the
    default one (`cpu-arm64`) each target builds for it (`platforms`), and its pip layers install on the build
    platform in the default platform's os layer (the named context NATIVE_PYTHON: layers/foreign/Dockerfile)."""
    name, layers = flavor.build_name, flavor.layers
    targets: dict[str, dict[str, Any]] = {}
    for index, layer in enumerate(layers):
        top = index == len(layers) - 1
        dockerfile = dockerfile_for(layer, flavor.foreign)
        target: dict[str, Any] = {
            "inherits": ["_final" if top else "_common"],
            "dockerfile": str(dockerfile),
            "tags": [_hcl_call("candidate_tag", name) if top else _hcl_call("layer_tag", name, layer)],
            "labels": {"ngc-paddle.flavor": flavor.name, "ngc-paddle.layer": layer},
            "args": {},
        }
        if index > 0:
            target["args"]["BASE_IMAGE"] = BELOW
            target["contexts"] = {BELOW: f"target:{bake_target(layers[index - 1], name)}"}
        if flavor.foreign:
            target["platforms"] = [flavor.platform]
            target["labels"]["ngc-paddle.platform"] = flavor.platform
            if dockerfile == FOREIGN_PIP_DOCKERFILE:
                target["contexts"][NATIVE_PYTHON] = f"target:{bake_target(layers[0], flavor.name)}"
        targets[bake_target(layer, name)] = target
    return targets


def bake_definition(release: ResolvedRelease, base_images: dict[str, str] | None = None,
                    labels: dict[str, dict[str, str]] | None = None,
                    cache: dict[str, dict[str, list[str]]] | None = None,
                    foreign: ResolvedFlavor | None = None) -> dict[str, Any]:
    """{"variable": ..., "group": {...}, "target": {...}}: every flavor's targets with their args from the resolved
    flavor and its lock (a flavor without a usable lock: its pip layers refuse to build), the labels given per
    target (the inputs digests of the flavor being built) and its cache settings (`cache-from`/`cache-to`), a
    group per flavor (its layers in order) and the default group (the manifest's default flavor); RELEASE
    defaults to this release. `foreign`: a flavor on another platform being built, whose targets and group
    (`cpu-arm64`) are added to this run's file only (base_images, labels and cache are keyed by build name)."""
    manifest = release.manifest
    targets: dict[str, Any] = {}
    groups: dict[str, Any] = {}
    flavors = {**release.flavors(), **({foreign.build_name: foreign} if foreign is not None else {})}
    for flavor_name, flavor in flavors.items():
        base = (base_images or {}).get(flavor_name)
        structure = flavor_targets(flavor)
        for (target_name, target), layer in zip(structure.items(), flavor.layers, strict=True):
            target["args"].update(flavor.layer_args(layer, base))
            target["labels"].update((labels or {}).get(target_name, {}))
            target.update((cache or {}).get(target_name, {}))
            targets[target_name] = target
        groups[flavor_name] = {"targets": list(structure)}
    groups["default"] = {"targets": [manifest.default_flavor]}
    return {"variable": {"RELEASE": {"default": manifest.release}}, "group": groups, "target": targets}


def registry_cache(flavor: ResolvedFlavor, registry: str) -> dict[str, dict[str, list[str]]]:
    """Each target of a flavor reads and writes its BuildKit cache in `registry` (one cache image per target,
    every intermediate step included), so another build host with the same lock rebuilds nothing."""
    manifest, cache = flavor.manifest, {}
    for layer in flavor.layers:
        target = bake_target(layer, flavor.build_name)
        ref = f"{registry}/{manifest.image}-cache:{manifest.release}-{target}"
        cache[target] = {"cache-from": [f"type=registry,ref={ref}"],
                         "cache-to": [f"type=registry,ref={ref},mode=max,ignore-error=true"]}
    return cache


def definition_text(definition: dict[str, Any]) -> str:
    return json.dumps(definition, indent=2, sort_keys=True) + "\n"


def override_text(release: ResolvedRelease) -> str:
    """docker-bake.override.json for `release` (the newest, as committed): what a plain `docker buildx bake`
    builds."""
    header = {"//": "Generated from releases/ by `ngc-paddle bake-file`; do not edit (make image refreshes it)."}
    return definition_text({**header, **bake_definition(release)})


def write_override(release: ResolvedRelease) -> bool:
    """Refresh docker-bake.override.json from the newest release's manifest and locks; True when it changed."""
    text = override_text(release)
    path = release.root / OVERRIDE
    if not path.is_symlink() and path.exists() and path.read_text() == text:
        return False
    with outputs.staged() as stage:
        stage.write_text(path, text)
    return True


def write_build_inputs(release: ResolvedRelease, base_images: dict[str, str] | None = None,
                       labels: dict[str, dict[str, str]] | None = None,
                       cache: dict[str, dict[str, list[str]]] | None = None,
                       foreign: ResolvedFlavor | None = None) -> Path:
    """Write build/bake/<release>.json (this run's bake file: every flavor's targets, the labels and cache settings
    of the flavor being built); return it.

    Every flavor is the release's, resolved once for the run (the one being built among them). Written only when
    all of it was computed; an unchanged file is left alone (its mtime too), and a symlink in build/ is replaced,
    never written through.
    """
    root = release.root
    bake_file = root / "build" / "bake" / f"{release.release}.json"
    text = definition_text(bake_definition(release, base_images, labels, cache, foreign))
    ensure_folder(bake_file.parent, stop=root)
    if bake_file.is_symlink() or not bake_file.is_file() or bake_file.read_text() != text:
        with outputs.staged() as stage:
            stage.write_text(bake_file, text)
    return bake_file


def bake_env(manifest: Manifest, extra: dict[str, str] | None = None) -> dict[str, str]:
    """bake's variables for one `make image` run: the top layer is tagged as a candidate, promoted after a smoke
    test (a plain `docker buildx bake` tags the release itself)."""
    return {**os.environ, "RELEASE": manifest.release, "IMAGE": manifest.image, "CANDIDATE_SUFFIX": "-candidate",
            "LAYER_REPO": layer_repository(manifest), **(extra or {})}


def resolved_group(bake_file: Path, resolved: ResolvedFlavor, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`bake --print` of a flavor's group (the generated targets resolved against docker-bake.hcl)."""
    root, manifest, flavor = resolved.root, resolved.manifest, resolved.build_name
    proc = engine.docker("buildx", "bake", "-f", str(HCL), "-f", str(bake_file.relative_to(root)), "--print", flavor,
                         cwd=root, env=env or bake_env(manifest), check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ToolchainError(f"docker buildx bake --print failed: {last}")
    printed = json.loads(proc.stdout)
    # The group is generated from the manifest; it differs only when docker-bake.hcl defines one of its own.
    expected = [bake_target(layer, flavor) for layer in resolved.layers]
    found = printed.get("group", {}).get(flavor, {}).get("targets", [])
    if found != expected:
        raise ManifestError(
            f"docker-bake.hcl: group {flavor!r} builds {found} but releases/{manifest.release}.yaml lists layers "
            f"{list(resolved.layers)}; fix: remove the group and its targets from docker-bake.hcl "
            f"(they are generated from the manifest into {bake_file.relative_to(root)})"
        )
    return printed


def bake_command(bake_file: Path, target: str, *flags: str) -> list[str]:
    """`docker buildx bake` arguments (after `docker`; run them with ngc_paddle.engine) that build one target of
    this run's bake file into the engine's image store, with the host network and the CA secret granted up front
    (bake would otherwise stop and ask), and `flags` (e.g. --progress plain, --no-cache) added."""
    return ["buildx", "bake", "-f", str(HCL), "-f", str(bake_file), "--allow", "network.host",
            "--allow", f"fs.read={os.environ.get('CA_BUNDLE', CA_BUNDLE)}", "--load", *flags, target]
