"""The reference of an A/B by default: the previous release's image of the same flavor, by digest.

Why: "slower than last month" is decided against what shipped last month, and only a digest names that image for
sure (a tag may have moved since). The digest is where the release recorded it when it pushed: the previous
release's state.json (build/release/<release>/state.json, `push.digest`), else its committed notes record
(release-notes/inputs/<release>.json, `flavors.<flavor>.digest`, which a fresh checkout has too). The image is then
REGISTRY/<image name>@DIGEST. No previous release, no such flavor in it or no digest recorded: there is no
reference, and the reason says which (a first release: the A/B part is NOT RUN and the absolute gates decide alone).
"""

from dataclasses import dataclass
from pathlib import Path

from ngc_paddle.manifest.schema import Manifest
from ngc_paddle.release.stages import release_folder
from ngc_paddle.release.state_file import State


@dataclass(frozen=True)
class Reference:
    image: str | None  # REGISTRY/REPO@sha256:... ; None: no reference (see why)
    why: str  # where it came from, or why there is none
    release: str | None = None


def previous_image(root: Path, release: str, previous: Manifest | None, flavor: str, registry: str) -> Reference:
    """The image of `flavor` that the release before `release` pushed to `registry`, by digest."""
    if previous is None:
        return Reference(None, f"no release before {release} in releases/: the first release of {flavor}")
    if flavor not in previous.flavors:
        return Reference(None, f"release {previous.release} has no flavor {flavor}: {release} is its first release")
    found = _digest(root, previous.release, flavor)
    if found is None:
        return Reference(None, f"release {previous.release} recorded no pushed digest of {flavor} (in "
                               f"build/release/{previous.release}/state.json or release-notes/inputs/"
                               f"{previous.release}.json)", previous.release)
    digest, where = found
    return Reference(f"{registry}/{previous.image}@{digest}", f"release {previous.release}'s {flavor} ({where})",
                     previous.release)


def _digest(root: Path, release: str, flavor: str) -> tuple[str, str] | None:
    state_path = release_folder(root, release) / "state.json"
    if state_path.is_file():
        pushed = State(state_path).data.get(flavor, {}).get("push", {})
        if pushed.get("status") == "passed" and pushed.get("digest"):
            return pushed["digest"], f"{state_path.relative_to(root)}"
    from ngc_paddle.release.stages import notes  # the notes render A/B tables: imported here, no import cycle

    record_path = root / "release-notes" / "inputs" / f"{release}.json"
    record = notes.load_record(record_path)  # a damaged record: one line, exit 2
    digest = record.get("flavors", {}).get(flavor, {}).get("digest")
    return (digest, f"{record_path.relative_to(root)}") if digest else None
