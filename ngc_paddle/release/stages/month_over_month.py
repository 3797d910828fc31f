"""Release stage `month-over-month`: the flavor's packages and size against the previous release's stored results.

Inputs (resume key): the image id, the previous release that has this flavor, its stored SBOM's content
  and image size, and the manifest's `month_over_month` reasons of this flavor.
Run: ngc_paddle.release.month.gate on this run's SBOM (from the scan stage) and image size; a removed
  or downgraded package, or growth over 10 %, fails unless the manifest says why.
Report: `    month-over-month: STATUS: DETAIL`, the same in state.json and the notes' gate table;
  state.json also keeps `changes` (every package change, one line each) and `since` (the release
  compared with), which the notes list under "Package changes since RELEASE (FLAVOR)".
"""

from pathlib import Path

from ngc_paddle.manifest.schema import MonthOverMonth
from ngc_paddle.release import month
from ngc_paddle.release.stages import Built, Outcome, Step, digest, file_digest, previous_manifest, release_folder
from ngc_paddle.release.stages import scan as scan_stage
from ngc_paddle.release.state_file import State

NAME = "month-over-month"


def plan(built: Built) -> Step:
    since, last_sbom, last_size = previous_results(built.root, built.release, built.flavor)
    allowed = built.spec.month_over_month
    return Step(NAME, digest(built.image_id, since, file_digest(last_sbom), last_size, allowed.model_dump()),
                lambda: run_gate(since, last_sbom, last_size, built, allowed))


def previous_results(root: Path, release: str, flavor: str) -> tuple[str | None, Path, int | None]:
    """The previous release that has this flavor (None: nothing to compare), its stored SBOM and image size."""
    previous = previous_manifest(root, release)
    if previous is None or flavor not in previous.flavors:
        return None, Path("/nonexistent"), None
    folder = release_folder(root, previous.release)
    build = State(folder / "state.json").data.get(flavor, {}).get("build", {})
    size = build.get("size") if build.get("status") == "passed" else None
    return previous.release, scan_stage.sbom(folder / flavor), size if isinstance(size, int) else None


def run_gate(since: str | None, last_sbom: Path, last_size: int | None, built: Built,
             allowed: MonthOverMonth) -> Outcome:
    verdict = month.gate(since, last_sbom, last_size, scan_stage.sbom(built.folder), built.size, allowed.packages,
                         allowed.size_growth)
    return Outcome(verdict.status, verdict.detail, {"changes": verdict.changes, "since": since})
