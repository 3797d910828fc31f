"""Release stage `ab`: the candidate against the previous release's image of its flavor, side by side on this host.

The long form: docs/design-notes.md, section `ngc_paddle/release/stages/ab.py`.
"""

import json
from datetime import UTC, datetime
from pathlib import Path

from ngc_common.errors import shown
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.ab import ab_report, compare, verdict
from ngc_paddle.release.ab import plan as ab_plan
from ngc_paddle.release.ab.reference import Reference, previous_image
from ngc_paddle.release.fleet import hardware_profiles
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.stages import Built, Outcome, Step, digest

NAME = "ab"
STATUS = {"PASS": "passed", "FAIL": "failed"}  # NOT PROVEN, NOT RUN: not proven
NOT_RUN = "A/B NOT RUN"  # a first release's A/B: no reference, the absolute gates decide alone


def reference_for(release: ResolvedRelease, flavor: str, *, references: dict[str, str], registry: str) -> Reference:
    """The reference of a flavor's A/B: the one given (FLAVOR=IMAGE, or IMAGE for every flavor), else the previous
    release's image of the flavor by digest."""
    given = references.get(flavor) or references.get("*")
    if given:
        return Reference(given, "given with --reference")
    return previous_image(release, flavor, registry)


def check_references(release: ResolvedRelease, references: dict[str, str]) -> None:
    """A FLAVOR=IMAGE reference names a flavor of the release: one it lacks would otherwise be ignored and the
    default reference used without a word."""
    flavors = list(release.manifest.flavors)
    for flavor, image in references.items():
        if flavor != "*" and flavor not in flavors:
            raise NgcPaddleError(f"--reference {shown(f'{flavor}={image}')}: (argument): {shown(flavor)} is not a "
                                 f"flavor of release {release.release} ({', '.join(flavors)}); fix: name one of "
                                 "them, or give IMAGE alone for every flavor")


def size(opts: ReleaseOptions) -> ab_plan.Size:
    return ab_plan.Size.of(opts.ab_rounds, opts.ab_smoke, opts.ab_validation_time)


def reference(built: Built) -> Reference:
    opts = built.opts
    return reference_for(built.release_run, built.flavor, references=opts.references, registry=opts.registry)


def key(built: Built, ref: Reference) -> str:
    return digest(built.image_id, ref.image, built.opts.benchmarks, size(built.opts),
                  "gpu" if built.gpu_host else "no gpu")


def plan(built: Built) -> Step:
    ref = reference(built)
    this = key(built, ref)
    return Step(NAME, this, lambda: run(built, ref, this))


def run(built: Built, ref: Reference, this: str = "") -> Outcome:
    if ref.image is None:
        return Outcome("not run", f"{NOT_RUN}: {ref.why}; the absolute gates decide alone")
    n = size(built.opts)
    folder = built.folder / NAME / this / f"ab-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    spec = ab_plan.compare_job(built.resolved.reference, ref.image, folder, built.opts.benchmarks, n.rounds, n.smoke,
                               1 if built.gpu_host else 0, n.validation_time, pull=True)
    attempt = compare.run_job(spec, lambda line: print(line, flush=True))
    summary = ab_report.analyze(attempt / "bench-ab", verdict.max_regression_pct(built.root),
                             hardware_profiles.read_facts(attempt / "facts.txt"))
    summary["candidate"]["name"] = f"{built.image} ({built.release})"
    summary["reference"]["name"] = f"{ref.image} ({ref.release or ref.why})"
    ab_report.write(folder, summary, f"A/B of {built.image}: this release vs {ref.release or 'the reference'}")
    return Outcome(STATUS.get(summary["verdict"], "not proven"), ab_report.headline(summary))


def report_of(folder: Path, this: str) -> Path | None:
    """The ab.json of the newest A/B with the key `this` in a flavor's release folder (None: it left none)."""
    found = sorted((folder / NAME / this).glob("ab-*/ab.json")) if this else []
    return found[-1] if found else None


def this_run(built: Built) -> tuple[dict | None, str]:
    """The A/B of this candidate against its reference, as this run's `ab` stage left it (it runs before `bench`),
    or None and why there is none: for the benchmarks that no CPU floor decides
    (ngc_paddle.release.ab.gate_without_floor)."""
    ref = reference(built)
    if ref.image is None:
        return None, f"{NOT_RUN}: {ref.why}"
    path = report_of(built.folder, key(built, ref))
    if path is None:
        return None, f"the A/B against {ref.image} left no ab.json in {built.folder / NAME}"
    return json.loads(path.read_text()), ""


def attempt_number(path: Path) -> int:
    """N of an attempt-N folder (a job's starts: attempt-10 comes after attempt-9, not after attempt-1)."""
    number = path.name.removeprefix("attempt-")
    return int(number) if number.isdigit() else -1


def _current(entry: dict | None, build: dict) -> bool:
    """Whether a stored stage entry (ab, gates) ran on the image the build stage made last."""
    return bool(entry) and entry.get("image_id", build.get("key")) == build.get("key")


def _of_candidate(summary: dict, candidate: dict) -> bool:
    """An A/B of this candidate: the digest it ran is the one the candidate stage pushed (when both are known)."""
    ran, pushed = summary.get("candidate", {}).get("digest"), candidate.get("digest")
    return not (ran and pushed) or ran == pushed


def markdown(root: Path, folder: Path, stages: dict) -> str:
    """The notes' "this month vs last month" section of a flavor: the A/B of this candidate only (this host's `ab`
    stage, found by its stored key; each fleet cell's, in its job's folder), or why there is none. An A/B stored
    for an earlier image, or one this run did not run (a first release), is never shown as this month's."""
    build, candidate = stages.get("build") or {}, stages.get("candidate") or {}
    entry = stages.get(NAME) if _current(stages.get(NAME), build) else None
    lines: list[str] = []
    if entry and entry["status"] != "not run":
        path = report_of(folder, entry.get("key", ""))
        summary = json.loads(path.read_text()) if path else None
        lines += ["### this host", ""]
        if summary is not None and _of_candidate(summary, candidate):
            lines += [*ab_report.notes_table(summary), ""]
        else:
            lines += [f"{entry['status']}: {entry.get('detail', '')}", ""]
    gates = stages.get("gates")
    cells = (gates or {}).get("profiles") or {} if _current(gates, build) else {}
    for profile, cell in cells.items():
        runs = sorted((root / cell["folder"]).glob("attempt-*/bench-ab/ab.json"),
                      key=lambda p: attempt_number(p.parents[1])) if cell.get("ab") and cell.get("folder") else []
        summary = json.loads(runs[-1].read_text()) if runs else None
        if summary is not None and _of_candidate(summary, candidate):
            lines += [f"### {profile} ({cell.get('job')}, {cell.get('node')})", "", *ab_report.notes_table(summary), ""]
    if not lines:
        said = [e.get("detail", "") for e in [entry or {}, *cells.values()]]
        why = next((d[d.index(NOT_RUN):].split(";")[0] for d in said if NOT_RUN in d), "")
        if why:
            lines.append(f"{why}: the absolute gates decided alone.")
    return "\n".join(lines).strip()
