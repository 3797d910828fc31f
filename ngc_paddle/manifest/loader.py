"""Read a manifest file and turn every way it can be wrong into one line.

Why: release engineers edit these files by hand each month; a mistake must point at the file,
the field and the fix, not at a traceback.
"""

from pathlib import Path

from pydantic import ValidationError

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.manifest import consistency
from ngc_paddle.manifest.schema import RELEASE_RE, Manifest

RELEASES_DIR = Path("releases")
MAX_MANIFEST_BYTES = 1024 * 1024  # a manifest is a few kB; also bounds `release new`, which reloads it per proposal
# Values after expanding its aliases: 26.12 (three flavors sharing two anchors) expands to about 1,000; many
# aliases of aliases would make every reload of `release new` validate millions (it hung past 20 s).
MAX_MANIFEST_VALUES = 20_000


def find_manifest(release: str, releases_dir: Path = RELEASES_DIR) -> Path:
    """The manifest file of a release id, with an error that lists the known releases."""
    if not RELEASE_RE.match(release):
        raise ManifestError(f"release {release!r} is not of the form YY.MM (e.g. 26.12)")
    path = releases_dir / f"{release}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in releases_dir.glob("*.yaml"))) or "none"
        raise ManifestError(
            f"{path}: no manifest for release {release} (known releases: {known}); "
            f"fix: create it with 'ngc-paddle release new {release} --from PREV' or pick a known release"
        )
    return path


def latest_release(releases_dir: Path = RELEASES_DIR) -> str:
    """The newest release id that has a manifest: the default for `make image`."""
    releases = sorted(p.stem for p in releases_dir.glob("*.yaml") if RELEASE_RE.match(p.stem))
    if not releases:
        raise ManifestError(f"{releases_dir}: no release manifests found; fix: add releases/YY.MM.yaml")
    return releases[-1]


def load_manifest(path: Path) -> Manifest:
    """Parse, validate and consistency-check one manifest file."""
    data = bounded_read.load_yaml(path, ManifestError, MAX_MANIFEST_BYTES, MAX_MANIFEST_VALUES)
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: (top level): the manifest must be a mapping of keys; fix: see releases/README.md")
    # Top-level `x-*` keys only hold YAML anchors shared by flavors (as in Compose files).
    data = {key: value for key, value in data.items() if not (isinstance(key, str) and key.startswith("x-"))}
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(one_line(path, exc)) from None
    if manifest.release != path.stem:
        raise ManifestError(
            f"{path}: release: {manifest.release!r} does not match the file name; "
            f"fix: name the file {manifest.release}.yaml or set release: '{path.stem}'"
        )
    problems = consistency.check(manifest)
    if problems:
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise ManifestError(f"{path}: {problems[0]}{more}")
    return manifest
