"""Which release and flavor an image was built from, resolved (sources overridden).

Why here: the whole-image checks (the image against its lock) and freshness (the archive the image came
from) both start from the image's own labels or its baked manifest, before any check runs.
"""

from collections.abc import Mapping
from pathlib import Path

from ngc_paddle.errors import ManifestError
from ngc_paddle.flavor import ResolvedFlavor, ResolvedRelease
from ngc_paddle.scan.source.inventory import IMAGE_MANIFEST

RELEASE_LABEL, FLAVOR_LABEL = "ngc-paddle.release", "ngc-paddle.flavor"


class UnknownRelease(Exception):
    """The image names no release we have (no labels, or a release or flavor not in releases/); str() says why."""


def image_flavor(labels: Mapping[str, str], image_manifest: dict | None, root: Path,
                 overrides: Mapping[str, str]) -> ResolvedFlavor:
    """The flavor the image was built from, resolved: its release and flavor from its labels (every layer has
    them) or from the manifest baked into it; the sources from releases/<release>.yaml with any --source."""
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
    if flavor not in resolved.manifest.flavors:
        raise UnknownRelease(f"release {resolved.release} has no flavor {flavor!r} (named by the image)")
    return resolved.with_sources(overrides).flavor(flavor)
