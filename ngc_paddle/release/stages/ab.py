"""Release stage `ab`: the candidate against the previous release's image of its flavor, side by side on this host.

Inputs (resume key): the image id, the reference (REGISTRY/REPO@DIGEST), the benchmarks and the rounds' size, whether
  this host gives containers a GPU.
Run: the A/B job (ngc_paddle.release.ab: the fleet's job script, its round loop only, started by the local runner):
  the candidate by its digest (the candidate stage pushed it) and the reference by digest (the previous release's
  `push.digest`, from its state.json or its committed notes record; `--reference [FLAVOR=]IMAGE` names another),
  interleaved in rounds; results in <flavor>/ab/ab-<time>/ (ab.json, ab.md, rounds.svg and every round's files).
  On a fleet the same A/B runs inside each profile's job, on its node (stages/gates.py), not here.
Report: `    ab: STATUS: A/B VERDICT against REF (N rounds): METRIC RATIO [LOW, HIGH] ...`; the notes' gate table and
  their "this month vs last month" section (ratio and interval per metric). PASS: passed; FAIL: failed; NOT PROVEN
  (noise too high, with the rounds that would decide) or NOT RUN (the reference could not be pulled): not proven.
  No reference (a first release: no previous release, no such flavor in it, no digest recorded): `not run`, with the
  reason, which does not block: the absolute gates (bench) decide alone, and the notes say so.
"""

import json
from datetime import UTC, datetime
from pathlib import Path

from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.release.ab import compare, report, verdict
from ngc_paddle.release.ab import plan as ab_plan
from ngc_paddle.release.ab.reference import Reference, previous_image
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.stages import Built, Outcome, Step, digest

NAME = "ab"
STATUS = {"PASS": "passed", "FAIL": "failed"}  # NOT PROVEN, NOT RUN: not proven


def reference_for(release: ResolvedRelease, flavor: str, *, references: dict[str, str], registry: str) -> Reference:
    """The reference of a flavor's A/B: the one given (FLAVOR=IMAGE, or IMAGE for every flavor), else the previous
    release's image of the flavor by digest."""
    given = references.get(flavor) or references.get("*")
    if given:
        return Reference(given, "given with --reference")
    return previous_image(release, flavor, registry)


def size(opts: ReleaseOptions) -> ab_plan.Size:
    return ab_plan.Size.of(opts.ab_rounds, opts.ab_smoke, opts.ab_validation_time)


def plan(built: Built) -> Step:
    opts = built.opts
    ref = reference_for(built.release_run, built.flavor, references=opts.references, registry=opts.registry)
    key = digest(built.image_id, ref.image, opts.benchmarks, size(opts), "gpu" if built.gpu_host else "no gpu")
    return Step(NAME, key, lambda: run(built, ref))



def run(built: Built, ref: Reference) -> Outcome:
    if ref.image is None:
        return Outcome("not run", f"A/B NOT RUN: {ref.why}; the absolute gates decide alone")
    n = size(built.opts)
    folder = built.folder / NAME / f"ab-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    spec = ab_plan.compare_job(built.resolved.reference, ref.image, folder, built.opts.benchmarks, n.rounds, n.smoke,
                               1 if built.gpu_host else 0, n.validation_time, pull=True)
    attempt = compare.run_job(spec, lambda line: print(line, flush=True))
    summary = report.analyze(attempt / "bench-ab", verdict.max_regression_pct(built.root))
    summary["candidate"]["name"] = f"{built.image} ({built.release})"
    summary["reference"]["name"] = f"{ref.image} ({ref.release or ref.why})"
    report.write(folder, summary, f"A/B of {built.image}: this release vs {ref.release or 'the reference'}")
    return Outcome(STATUS.get(summary["verdict"], "not proven"), report.headline(summary))


def markdown(root: Path, folder: Path, stages: dict) -> str:
    """The notes' "this month vs last month" section of a flavor: the newest A/B of this host's `ab` stage (in
    `folder`, the flavor's release folder) and of each fleet cell, or why there is none (a first release)."""
    found = sorted((folder / NAME).glob("ab-*/ab.json"))
    parts = [("this host", found[-1])] if found else []
    cells = (stages.get("gates") or {}).get("profiles") or {}
    for profile, cell in cells.items():
        runs = sorted((root / cell["folder"]).glob("attempt-*/bench-ab/ab.json")) if cell.get("folder") else []
        if runs:
            parts.append((f"{profile} ({cell.get('job')}, {cell.get('node')})", runs[-1]))
    lines = []
    for where, path in parts:
        lines += [f"### {where}", "", *report.notes_table(json.loads(path.read_text())), ""]
    if not parts:
        said = [e.get("detail", "") for e in [stages.get(NAME) or {}, *cells.values()]]
        why = next((d[d.index("A/B NOT RUN"):].split(";")[0] for d in said if "A/B NOT RUN" in d), "")
        if why:
            lines.append(f"{why}: the absolute gates decided alone.")
    return "\n".join(lines)
