"""Which release and flavor an image was built from, and that release's manifest (sources overridden).

Why here: the whole-image checks (the image against its lock) and freshness (the archive the image came
from) both start from the image's own labels or its baked manifest, before any check runs.
"""

from collections.abc import Mapping
from pathlib import Path

from ngc_paddle.errors import ManifestError
from ngc_paddle.manifest.loader import find_manifest, load_manifest
from ngc_paddle.manifest.resolve import apply_source_overrides
from ngc_paddle.manifest.schema import Manifest
from ngc_paddle.scan.source.inventory import IMAGE_MANIFEST

RELEASE_LABEL, FLAVOR_LABEL = "ngc-paddle.release", "ngc-paddle.flavor"


class UnknownRelease(Exception):
    """The image names no release we have (no labels, or a release or flavor not in releases/); str() says why."""


def release_manifest(labels: Mapping[str, str], image_manifest: dict | None, root: Path,
                     overrides: Mapping[str, str]) -> tuple[Manifest, str]:
    """The manifest the image was built from: its release and flavor from its labels (every layer has them)
    or from the manifest baked into it; the sources from releases/<release>.yaml with any --source."""
    baked = image_manifest or {}
    release = labels.get(RELEASE_LABEL) or baked.get("release")
    flavor = labels.get(FLAVOR_LABEL) or baked.get("flavor")
    if not release or not flavor:
        raise UnknownRelease(f"the image has neither {RELEASE_LABEL}/{FLAVOR_LABEL} labels nor {IMAGE_MANIFEST}, so "
                             "the sources it was built from are unknown; fix: scan an image made by 'ngc-paddle build'")
    try:
        manifest = load_manifest(find_manifest(str(release), root / "releases"))
    except ManifestError as exc:
        raise UnknownRelease(str(exc)) from None
    flavor = str(flavor)
    if flavor not in manifest.flavors:
        raise UnknownRelease(f"release {manifest.release} has no flavor {flavor!r} (named by the image)")
    return apply_source_overrides(manifest, overrides), flavor
