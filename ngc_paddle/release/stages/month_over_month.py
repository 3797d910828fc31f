"""Release stage `month-over-month`: the flavor's packages and size against the previous release's stored results.

Why: the manifest pins the top-level components only; everything they pull in may move between
months unseen. The scan's SBOM lists every pip distribution and Debian package of the image, so the
previous release's stored SBOM of the same flavor gives the full package diff (added, removed, up,
down) for the notes, and a removed or downgraded package, or an image more than 10 % larger, blocks
unless the manifest says why (`month_over_month:` of the flavor, like `hold:` for `release new`).
Version order: PEP 440 (packaging) for pip, dpkg's (python-debian) for Debian packages.

The long form: docs/design-notes.md, section `ngc_paddle/release/stages/month_over_month.py`.
"""

from dataclasses import dataclass
from pathlib import Path

from debian.debian_support import Version as DebVersion
from packageurl import PackageURL
from packaging.version import InvalidVersion
from packaging.version import Version as PipVersion
from pydantic import BaseModel, ConfigDict, ValidationError

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.manifest.schema import MonthOverMonth
from ngc_paddle.release.stages import Built, Outcome, Step, digest, file_digest, release_folder
from ngc_paddle.release.stages import scan as scan_stage
from ngc_paddle.release.state_file import State

MAX_GROWTH = 0.10


class _Component(BaseModel):
    model_config = ConfigDict(extra="allow")  # CycloneDX has many more fields; the diff reads the purl only
    purl: str | None = None


class _Sbom(BaseModel):
    model_config = ConfigDict(extra="allow")  # CycloneDX again: the diff reads the components only
    components: list[_Component] = []


def packages(sbom: Path) -> dict[str, str]:
    """'pypi:NAME' / 'deb:NAME' -> version (several installed copies: their versions joined by ', ')."""
    try:
        data = _Sbom.model_validate(bounded_read.load_json(sbom, NgcPaddleError))
    except ValidationError as exc:
        raise NgcPaddleError(one_line(sbom, exc, "rerun the scan stage to write it again")) from None
    found: dict[str, set[str]] = {}
    for comp in data.components:
        if not comp.purl:
            continue  # the manifest's non-package components (OS, Python): in the notes' contents table
        try:
            purl = PackageURL.from_string(comp.purl)
        except ValueError:
            raise NgcPaddleError(f"{sbom}: components.purl: {comp.purl[:80]!r} is not a package URL; fix: rerun "
                                 "the scan stage") from None
        if purl.type in ("pypi", "deb") and purl.version:
            found.setdefault(f"{purl.type}:{purl.name}", set()).add(purl.version)
    return {key: ", ".join(sorted(versions)) for key, versions in found.items()}


def _newest(ecosystem: str, versions: str):
    parsed = []
    for v in versions.split(", "):
        try:
            parsed.append(PipVersion(v) if ecosystem == "pypi" else DebVersion(v))
        except (InvalidVersion, ValueError):
            return None
    return max(parsed)


@dataclass
class Change:
    package: str  # pypi:NAME or deb:NAME
    kind: str  # added, removed, up, down, changed
    old: str | None
    new: str | None

    def line(self) -> str:
        if self.kind == "added":
            return f"{self.package} {self.new} (added)"
        if self.kind == "removed":
            return f"{self.package} {self.old} (removed)"
        return f"{self.package} {self.old} -> {self.new} ({self.kind})"


def diff(old: dict[str, str], new: dict[str, str]) -> list[Change]:
    changes = []
    for key in sorted(old.keys() | new.keys()):
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        if before is None or after is None:
            changes.append(Change(key, "added" if before is None else "removed", before, after))
            continue
        ecosystem = key.split(":", 1)[0]
        a, b = _newest(ecosystem, before), _newest(ecosystem, after)
        kind = "changed" if a is None or b is None or a == b else "up" if b > a else "down"
        changes.append(Change(key, kind, before, after))
    return changes


@dataclass
class Verdict:
    status: str  # passed, failed, not proven
    detail: str
    changes: list[str]  # every package change, for the notes


def gate(previous_release: str | None, previous_sbom: Path, previous_size: int | None, sbom: Path, size: int,
         reasons: dict[str, str], size_reason: str | None) -> Verdict:
    """`previous_release` None: nothing to compare (first release, or a flavor new in this release)."""
    if previous_release is None:
        return Verdict("passed", "no previous release of this flavor: nothing to compare", [])
    missing = [] if previous_sbom.is_file() else [str(previous_sbom)]
    if previous_size is None:
        missing.append(f"the image size of {previous_release} (its build stage in state.json)")
    if missing or not sbom.is_file():
        return Verdict("not proven", f"no stored results of {previous_release} to compare with: "
                       f"{', '.join(missing) or sbom}; fix: restore build/release/{previous_release}/ from the "
                       "previous release's run", [])
    changes = diff(packages(previous_sbom), packages(sbom))
    blocking, explained = [], []
    for change in changes:
        if change.kind in ("removed", "down"):
            (explained if change.package in reasons else blocking).append(change)
    growth = size / previous_size - 1 if previous_size else 0.0
    accepted = f", accepted: {size_reason}" if growth > MAX_GROWTH and size_reason else ""
    size_note = f"size {previous_size / 1e9:.2f} -> {size / 1e9:.2f} GB ({growth:+.1%}{accepted})"
    problems = [f"{c.line()} without a reason in month_over_month.packages" for c in blocking]
    if growth > MAX_GROWTH and not size_reason:
        problems.append(f"the image grew {growth:.1%} (> {MAX_GROWTH:.0%}) without month_over_month.size_growth")
    counts = {kind: sum(c.kind == kind for c in changes) for kind in ("added", "removed", "up", "down", "changed")}
    detail = (f"against {previous_release}: " + ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
              if changes else f"against {previous_release}: no package changed")
    detail += f"; {size_note}"
    detail += "".join(f"; {c.line()}: {reasons[c.package]}" for c in explained)
    if problems:
        return Verdict("failed", detail + "; blocking: " + "; ".join(problems), [c.line() for c in changes])
    return Verdict("passed", detail, [c.line() for c in changes])


# ---- the stage ----------------------------------------------------------------------------------------

NAME = "month-over-month"


def plan(built: Built) -> Step:
    since, last_sbom, last_size = previous_results(built.release_run, built.flavor)
    allowed = built.spec.month_over_month
    return Step(NAME, digest(built.image_id, since, file_digest(last_sbom), last_size, allowed.model_dump()),
                lambda: run_gate(since, last_sbom, last_size, built, allowed))


def previous_results(release: ResolvedRelease, flavor: str) -> tuple[str | None, Path, int | None]:
    """The release before `release` if it has this flavor (None: nothing to compare), its stored SBOM and image
    size."""
    previous = release.previous_release
    if previous is None or not previous.has_flavor(flavor):
        return None, Path("/nonexistent"), None
    folder = release_folder(previous.root, previous.release)
    build = State(folder / "state.json").data.get(flavor, {}).get("build", {})
    size = build.get("size") if build.get("status") == "passed" else None
    return previous.release, scan_stage.sbom(folder / flavor), size if isinstance(size, int) else None


def run_gate(since: str | None, last_sbom: Path, last_size: int | None, built: Built,
             allowed: MonthOverMonth) -> Outcome:
    verdict = gate(since, last_sbom, last_size, scan_stage.sbom(built.folder), built.size, allowed.packages,
                         allowed.size_growth)
    return Outcome(verdict.status, verdict.detail, {"changes": verdict.changes, "since": since})
