"""Read a manifest file and turn every way it can be wrong into one line.

Why: release engineers edit these files by hand each month; a mistake must point at the file,
the field and the fix, not at a traceback.
"""

from pathlib import Path

import yaml
from pydantic import ValidationError

from ngc_paddle.errors import ManifestError
from ngc_paddle.manifest import consistency
from ngc_paddle.manifest.schema import RELEASE_RE, Manifest

RELEASES_DIR = Path("releases")


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
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read the manifest ({exc.strerror}); fix: check the path") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise ManifestError(f"{path}: not valid YAML{at}: {getattr(exc, 'problem', exc)}; fix the syntax") from exc
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: the manifest must be a mapping of keys; fix: see releases/README.md")
    # Top-level `x-*` keys only hold YAML anchors shared by flavors (as in Compose files).
    data = {key: value for key, value in data.items() if not str(key).startswith("x-")}
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(_first_validation_line(path, exc)) from exc
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


def _first_validation_line(path: Path, exc: ValidationError) -> str:
    errors = exc.errors()
    err = errors[0]
    where = ".".join(str(part) for part in err["loc"]) or "(top level)"
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    if err["type"] == "extra_forbidden":
        return f"{path}: {where}: unknown key; fix: remove it or check its spelling{more}"
    if err["type"] == "missing":
        return f"{path}: {where}: required key is missing; fix: add it{more}"
    message = err["msg"].removeprefix("Value error, ")
    return f"{path}: {where}: {message}; fix: correct this field{more}"
