"""Which release and flavor an image was built from, resolved (sources overridden), once per scan.

Why here: the whole-image checks (the image against its lock) and freshness (the archive the image came
from) both start from the image's own labels or its baked manifest, before any check runs. The scan's entry
(scan/gate.py) resolves it once, with the scan's mirrors (`--source`), and hands the one ImageRelease to both:
two resolutions (one with the mirrors, one without) could disagree.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ngc_paddle.flavor import ResolvedFlavor, ResolvedRelease
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.scan.source.inventory import IMAGE_MANIFEST

RELEASE_LABEL, FLAVOR_LABEL = "ngc-paddle.release", "ngc-paddle.flavor"


class UnknownRelease(Exception):
    """The image names no release we have (no labels, or a release or flavor not in releases/); str() says why."""


def image_platform(config: dict) -> str | None:
    """The image's platform (linux/arm64) from its config (`os`/`architecture` as `docker save` writes them,
    `Os`/`Architecture` as `docker image inspect` does); None where it says none."""
    os_name = config.get("os") or config.get("Os")
    arch = config.get("architecture") or config.get("Architecture")
    return f"{os_name}/{arch}" if os_name and arch else None


def image_flavor(labels: Mapping[str, str], image_manifest: dict | None, root: Path,
                 overrides: Mapping[str, str], platform: str | None = None) -> ResolvedFlavor:
    """The flavor the image was built from, resolved: its release and flavor from its labels (every layer has
    them) or from the manifest baked into it, on the image's platform (its own lock: linux/arm64's for an arm64
    image; the flavor's first where the image names none); the sources from releases/<release>.yaml with any
    --source."""
    baked = image_manifest or {}
    release = labels.get(RELEASE_LABEL) or baked.get("release")
    flavor = labels.get(FLAVOR_LABEL) or baked.get("flavor")
    if not release or not flavor:
        raise UnknownRelease(f"the image has neither {RELEASE_LABEL}/{FLAVOR_LABEL} labels nor {IMAGE_MANIFEST}, so "
                             "the sources it was built from are unknown; fix: scan an image made by 'ngc-paddle build'")
    try:
        resolved = ResolvedRelease.load(root, str(release))
    except ManifestError as exc:
        raise UnknownRelease(str(exc)) from None
    flavor = str(flavor)
    if not resolved.has_flavor(flavor):
        raise UnknownRelease(f"release {resolved.release} has no flavor {flavor!r} (named by the image)")
    built_for = resolved.platforms(flavor)
    if platform is not None and platform not in built_for:
        raise UnknownRelease(f"flavor {flavor} of release {resolved.release} is not built for {platform}, the "
                             f"image's platform (its platforms: {', '.join(built_for)})")
    return resolved.with_sources(overrides).flavor(flavor, platform)


@dataclass(frozen=True)
class ImageRelease:
    """What a scanned image was built from, resolved once for the scan: its flavor (the scan's mirrors applied), or
    why it is unknown; and whether the release run handed the flavor in (a release image it built) rather than the
    image's labels naming it (a standalone scan, which may be of a layer image)."""

    flavor: ResolvedFlavor | None
    unknown: str = ""  # why there is no flavor: no labels, or a release or flavor not in releases/
    from_run: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)


def of_image(config: dict, image_manifest: dict | None, root: Path, overrides: Mapping[str, str],
             resolved: ResolvedFlavor | None = None) -> ImageRelease:
    """The image's release, resolved once: `resolved` when the release run gives it, else from the image's labels
    (its config as `docker save` or `docker image inspect` give it) or its baked manifest. A mirror naming a source
    the release lacks is bad input (ManifestError), not an unknown release."""
    labels = (config.get("config") or config.get("Config") or {}).get("Labels") or {}
    if resolved is not None:
        return ImageRelease(resolved, from_run=True, labels=labels)
    try:
        return ImageRelease(image_flavor(labels, image_manifest, root, overrides, image_platform(config)),
                            labels=labels)
    except UnknownRelease as exc:
        return ImageRelease(None, str(exc), labels=labels)


def with_baked_manifest(labelled: ImageRelease, config: dict, image_manifest: dict | None, root: Path,
                        overrides: Mapping[str, str]) -> ImageRelease:
    """The image's release once its baked manifest has been read: `labelled` (of_image without it, read before the
    layers) where it found a flavor or the labels name both release and flavor (the manifest cannot change those);
    else resolved again with the manifest filling what the labels lack."""
    named = all(labelled.labels.get(label) for label in (RELEASE_LABEL, FLAVOR_LABEL))
    if labelled.flavor is not None or named:
        return labelled
    return of_image(config, image_manifest, root, overrides)
