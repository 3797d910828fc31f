"""Generate a release's bake targets and groups from its manifest, as the second bake file.

Why: the manifest alone says which flavors exist, which layers each stacks in which order, which
flavor is the default, and what versions and sources each layer installs. docker-bake.hcl keeps only
what the manifest does not say (variables, the tag functions, `_common`/`_final`); this writes every
target (one per layer and flavor, chained by BASE_IMAGE) and every group of a release to
build/bake/<release>.json, merged on top (`-f docker-bake.hcl -f build/bake/<release>.json`).
"""

import json
import os
from pathlib import Path
from typing import Any

from ngc_paddle import engine, outputs
from ngc_paddle.errors import ManifestError, NgcPaddleError, ToolchainError
from ngc_paddle.flavor import ResolvedFlavor, layer_repository, manifest_json
from ngc_paddle.layers import bake_target, dockerfile_for
from ngc_paddle.lock.check import lock_status
from ngc_paddle.lock.layer_args import layer_args
from ngc_paddle.lock.model import Lock
from ngc_paddle.manifest.resolve import image_manifest
from ngc_paddle.manifest.schema import Manifest
from ngc_paddle.outputs import ensure_folder

HCL = Path("docker-bake.hcl")


def flavor_locks(manifest: Manifest, releases_dir: Path,
                 built: ResolvedFlavor | None = None) -> dict[str, tuple[Lock | None, str]]:
    """Each flavor's lock when it matches the manifest, else None and why (its pip layers then refuse to build);
    the lock of `built`, resolved already, as it has it."""
    locks: dict[str, tuple[Lock | None, str]] = {}
    for flavor_name in manifest.flavors:
        if built is not None and built.name == flavor_name:
            locks[flavor_name] = (built.lock, built.pending)
            continue
        try:
            _status, lock = lock_status(manifest, flavor_name, releases_dir)
        except NgcPaddleError as exc:
            locks[flavor_name] = (None, str(exc))
            continue
        pending = manifest.flavors[flavor_name].lock
        locks[flavor_name] = (lock, pending.pending if lock is None and pending is not None else "")
    return locks


def _hcl_call(function: str, *params: str) -> str:
    """A bake string that calls a function of docker-bake.hcl, so tag naming stays in one place there."""
    return "${" + function + "(" + ", ".join(json.dumps(p) for p in params) + ")}"


def flavor_targets(manifest: Manifest, flavor_name: str) -> dict[str, dict[str, Any]]:
    """The structure of a flavor's targets, in layer order: one per layer, each built FROM the one below
    (BASE_IMAGE), the top one inheriting `_final` and tagged as the release candidate."""
    layers = manifest.flavors[flavor_name].layers
    targets: dict[str, dict[str, Any]] = {}
    for index, layer in enumerate(layers):
        top = index == len(layers) - 1
        target: dict[str, Any] = {
            "inherits": ["_final" if top else "_common"],
            "dockerfile": str(dockerfile_for(layer)),
            "tags": [_hcl_call("candidate_tag", flavor_name) if top else _hcl_call("layer_tag", flavor_name, layer)],
            "labels": {"ngc-paddle.flavor": flavor_name, "ngc-paddle.layer": layer},
            "args": {},
        }
        if index > 0:
            target["args"]["BASE_IMAGE"] = _hcl_call("layer_tag", flavor_name, layers[index - 1])
        targets[bake_target(layer, flavor_name)] = target
    return targets


def bake_definition(manifest: Manifest, base_images: dict[str, str] | None = None,
                    locks: dict[str, tuple[Lock | None, str]] | None = None,
                    labels: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    """{"group": {...}, "target": {...}}: every flavor's targets with their args from the manifest and lock,
    the labels given per target (the inputs digests of the flavor being built), a group per flavor
    (its layers in order) and the default group (the manifest's default flavor)."""
    targets: dict[str, Any] = {}
    groups: dict[str, Any] = {}
    for flavor_name in manifest.flavors:
        base = (base_images or {}).get(flavor_name)
        lock, pending = (locks or {}).get(flavor_name, (None, "no lock"))
        structure = flavor_targets(manifest, flavor_name)
        for (target_name, target), layer in zip(structure.items(), manifest.flavors[flavor_name].layers, strict=True):
            target["args"].update(layer_args(manifest, flavor_name, layer, base, lock, pending))
            target["labels"].update((labels or {}).get(target_name, {}))
            targets[target_name] = target
        groups[flavor_name] = {"targets": list(structure)}
    groups["default"] = {"targets": [manifest.default_flavor]}
    return {"group": groups, "target": targets}


def manifest_file(release: str, flavor_name: str) -> str:
    """Where the resolved manifest the suite layer copies is written, relative to the repository root."""
    return f"build/manifests/{release}-{flavor_name}.json"


def write_build_inputs(root: Path, manifest: Manifest, base_images: dict[str, str] | None = None,
                       labels: dict[str, dict[str, str]] | None = None, built: ResolvedFlavor | None = None) -> Path:
    """Write build/bake/<release>.json and build/manifests/<release>-<flavor>.json; return the bake file.

    `built`: the flavor being built, already resolved (its image manifest and lock are taken from it; the
    release's other flavors are resolved here, for the bake file that names them all).
    Everything is computed first and written only when all of it succeeded; unchanged files are
    left alone (their mtime too), and a symlink in build/ is replaced or refused, never written through.
    """
    texts = {root / manifest_file(manifest.release, flavor_name):
             built.manifest_text if built and built.name == flavor_name else
             manifest_json(image_manifest(manifest, flavor_name)) for flavor_name in manifest.flavors}
    bake_file = root / "build" / "bake" / f"{manifest.release}.json"
    locks = flavor_locks(manifest, root / "releases", built)
    definition = bake_definition(manifest, base_images, locks, labels)
    texts[bake_file] = json.dumps(definition, indent=2, sort_keys=True) + "\n"
    with outputs.staged() as stage:
        for path, text in texts.items():
            ensure_folder(path.parent, stop=root)
            if path.is_symlink() or not path.is_file() or path.read_text() != text:
                stage.write_text(path, text)
    return bake_file


def bake_env(manifest: Manifest, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "RELEASE": manifest.release, "IMAGE": manifest.image,
            "LAYER_REPO": layer_repository(manifest), **(extra or {})}


def resolved_group(root: Path, bake_file: Path, manifest: Manifest, flavor: str,
                   env: dict[str, str] | None = None) -> dict[str, Any]:
    """`bake --print` of a flavor's group (the generated targets resolved against docker-bake.hcl)."""
    proc = engine.docker("buildx", "bake", "-f", str(HCL), "-f", str(bake_file.relative_to(root)), "--print", flavor,
                         cwd=root, env=env or bake_env(manifest), check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ToolchainError(f"docker buildx bake --print failed: {last}")
    printed = json.loads(proc.stdout)
    # The group is generated from the manifest; it differs only when docker-bake.hcl defines one of its own.
    expected = [bake_target(layer, flavor) for layer in manifest.flavors[flavor].layers]
    found = printed.get("group", {}).get(flavor, {}).get("targets", [])
    if found != expected:
        raise ManifestError(
            f"docker-bake.hcl: group {flavor!r} builds {found} but releases/{manifest.release}.yaml lists layers "
            f"{manifest.flavors[flavor].layers}; fix: remove the group and its targets from docker-bake.hcl "
            f"(they are generated from the manifest into {bake_file.relative_to(root)})"
        )
    return printed


# Fields of a printed bake target that build_command translates; anything else is refused so a
# definition never builds differently from what the bake file says.
_TRANSLATED = {"context", "dockerfile", "args", "labels", "tags", "secret", "network", "target", "entitlements"}


def build_command(target_name: str, target: dict[str, Any], flags: tuple[str, ...] = ()) -> list[str]:
    """`docker buildx build` arguments (after `docker`; run them with ngc_paddle.engine) equivalent to one
    resolved bake target, on the host network, with `flags` (e.g. --progress plain) added.

    Written by hand because buildx 0.13 (the newest this kind of build host can install) ignores a
    target's `network` in bake files, and the daemon here has no bridge network; `bake --print`
    still resolves the definition, this only runs it. Newer buildx honours `network` in bake itself.
    """
    unknown = sorted(set(target) - _TRANSLATED)
    if unknown:
        raise ToolchainError(f"bake target {target_name} uses {unknown}, which ngc-paddle cannot pass to buildx build")
    # No attestation manifests on the loaded image: with the containerd image store buildx attaches a
    # provenance attestation by default, which turns the image into an index whose digest changes with
    # every build (timestamps) and breaks the layer-by-layer cache answer and the push's digest read-back.
    cmd = ["buildx", "build", *flags, "--network", target.get("network", "host"), "--load", "--provenance=false"]
    cmd += ["--file", target.get("dockerfile", "Dockerfile")]
    for key, value in sorted(target.get("args", {}).items()):
        cmd += ["--build-arg", f"{key}={value}"]
    for key, value in sorted(target.get("labels", {}).items()):
        cmd += ["--label", f"{key}={value}"]
    for tag in target.get("tags", []):
        cmd += ["--tag", tag]
    for secret in target.get("secret", []):  # buildx 0.14+ prints {"id": ..., "src": ...}, older ones a string
        cmd += ["--secret", secret if isinstance(secret, str) else ",".join(f"{k}={v}" for k, v in secret.items())]
    for entitlement in target.get("entitlements", []):
        cmd += ["--allow", entitlement]
    if "target" in target:
        cmd += ["--target", target["target"]]
    return [*cmd, target.get("context", ".")]
