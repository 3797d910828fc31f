"""The reference of an A/B by default: the previous release's image of the same flavor, by digest.

Why: "slower than last month" is decided against what shipped last month, and only a digest names that image for
sure (a tag may have moved since). The digest is where the release recorded it when it pushed: the previous
release's state.json (build/release/<release>/state.json, `push.digest`), else its committed notes record
(release-notes/inputs/<release>.json, `flavors.<flavor>.digest`, which a fresh checkout has too). The image is then
REGISTRY/<image name>@DIGEST. No previous release, no such flavor in it or no digest recorded: there is no
reference, and the reason says which (a first release: the A/B part is NOT RUN and the absolute gates decide alone).
"""

import re
from dataclasses import dataclass
from pathlib import Path

from ngc_common import bounded_read
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.stages import release_folder
from ngc_paddle.release.state_file import State

DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Reference:
    image: str | None  # REGISTRY/REPO@sha256:... ; None: no reference (see why)
    why: str  # where it came from, or why there is none
    release: str | None = None


def previous_image(current: ResolvedRelease, flavor: str, registry: str) -> Reference:
    """The image of `flavor` that the release before `release` pushed to `registry`, by digest."""
    root, release, previous = current.root, current.release, current.previous_release
    if previous is None:
        return Reference(None, f"no release before {release} in releases/: the first release of {flavor}")
    if not previous.has_flavor(flavor):
        return Reference(None, f"release {previous.release} has no flavor {flavor}: {release} is its first release")
    found = _digest(root, previous.release, flavor)
    if found is None:
        return Reference(None, f"release {previous.release} recorded no pushed digest of {flavor} (in "
                               f"build/release/{previous.release}/state.json or release-notes/inputs/"
                               f"{previous.release}.json)", previous.release)
    digest, where = found
    return Reference(f"{registry}/{previous.manifest.image}@{digest}",
                     f"release {previous.release}'s {flavor} ({where})", previous.release)


def _digest(root: Path, release: str, flavor: str) -> tuple[str, str] | None:
    state_path = release_folder(root, release) / "state.json"
    if state_path.is_file():
        pushed = State(state_path).data.get(flavor, {}).get("push", {})
        if pushed.get("status") == "passed" and pushed.get("digest"):
            return pushed["digest"], f"{state_path.relative_to(root)}"
    record_path = root / "release-notes" / "inputs" / f"{release}.json"
    if not record_path.is_file():
        return None
    # read here, not through the notes stage (which renders A/B tables: that import would be a loop); bounded, and
    # a damaged record is one line, exit 2
    record = bounded_read.load_json(record_path, NgcPaddleError)
    flavors = record.get("flavors") if isinstance(record, dict) else None
    entry = flavors.get(flavor) if isinstance(flavors, dict) else None
    digest = entry.get("digest") if isinstance(entry, dict) else None
    if digest is not None and not (isinstance(digest, str) and DIGEST_RE.fullmatch(digest)):
        raise NgcPaddleError(f"{record_path}: flavors.{flavor}.digest: {str(digest)[:80]!r} is not sha256:<64 hex>; "
                             "fix: restore the record from the release's notes commit")
    return (digest, f"{record_path.relative_to(root)}") if digest else None
