"""`ngc-paddle bench-compare CANDIDATE [--reference IMAGE]`: an A/B of two images on this host, and its runner.

Why: a release engineer asks "is this image slower than last month's, here?" without a release or a cluster. The
A/B runs as the job a fleet node runs (the round loop of ngc_paddle/release/fleet/payload.sh, started by the
local runner), so this host's verdict and a Slurm node's come from the same steps. The reference defaults to the
previous release's image of the candidate's flavor (its labels name release and flavor), pulled by digest
(ngc_paddle.release.ab.reference). Progress: a line per run of each round, with its time. Output: a new folder per run
(nothing earlier overwritten) holding the job's files and ab.json, ab.md, rounds.svg.
Exit: 0 PASS, 1 FAIL, 3 NOT PROVEN (noise too high: more rounds) or NOT RUN, 2 bad input (no such image...).
"""

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.host_errors import Failed, NgcPaddleError, NotProven
from ngc_paddle.outputs import check_folder
from ngc_paddle.release.ab import ab_report, plan, verdict
from ngc_paddle.release.ab.reference import previous_image
from ngc_paddle.release.fleet import hardware_profiles
from ngc_paddle.release.fleet.payload import JobSpec
from ngc_paddle.release.fleet.runners.interface import Placed
from ngc_paddle.release.fleet.runners.local import LocalRunner
from ngc_paddle.release.options import DEFAULT_REGISTRY

POLL_S = 1.0


class CompareFailed(Failed):
    """The candidate is slower than the reference beyond the threshold (exit 1)."""


class CompareNotProven(NotProven):
    """The interval straddles the threshold, or the A/B could not run (exit 3)."""


def default_reference(root: Path, candidate: str, registry: str) -> str:
    """The previous release's image of the candidate's flavor (by the candidate's labels), by digest."""
    from ngc_paddle.flavor import ResolvedRelease

    labels = engine.image_labels(candidate)
    release, flavor = labels.get("ngc-paddle.release"), labels.get("ngc-paddle.flavor")
    if not release or not flavor:
        raise NgcPaddleError(f"image {candidate}: has no ngc-paddle.release/ngc-paddle.flavor labels, so its previous "
                             "release is unknown; fix: give --reference IMAGE")
    resolved = ResolvedRelease.load(root, release)
    found = previous_image(resolved, flavor, registry)
    if found.image is None:
        raise NgcPaddleError(f"image {candidate}: no reference: {found.why}; fix: give --reference IMAGE")
    return found.image


def ensure_image(ref: str, what: str) -> None:
    """The image is here, or pulled now; one line naming it and the fix otherwise."""
    if engine.image_id(ref) is None and not engine.try_pull(ref):
        raise NgcPaddleError(f"{what} image {ref}: not on this host and cannot be pulled; fix: build it (make image), "
                             "docker login to its registry, or name another image")


def run_job(spec: JobSpec, say: Callable[[str], None], poll_s: float = POLL_S,
            stop_when: Callable[[Path], bool] | None = None) -> Path:
    """Run one job script on this host (the local runner), printing each A/B run as it ends; its attempt folder.
    `stop_when(bench-ab folder)`, asked after each run that ends, may stop the rounds early (the job is cancelled:
    the round under way is lost, the finished ones stay; perf/bench_ab_power.py stops once every metric is decided)."""
    runner = LocalRunner("this-host")
    placed = Placed(spec, spec.folder)
    spec.folder.mkdir(parents=True, exist_ok=True)
    handle = runner.submit([placed])[0]
    tsv = spec.folder / "attempt-1" / "bench-ab" / "rounds.tsv"
    shown, started = 0, time.monotonic()
    total = spec.ab_rounds
    try:
        while True:
            state = runner.states([handle])[handle]
            lines = tsv.read_text().splitlines() if tsv.is_file() else []
            for line in lines[shown:]:
                parts = line.split("\t")
                if len(parts) == 6:
                    number = parts[0].removeprefix("round-")
                    which = "warm-up" if number == "00" else f"round {number}/{total:02d}"
                    say(f"    {which} {parts[1]:<9} {parts[2]}: {int(parts[5]) / 1000:.1f} s (exit {parts[3]}), "
                        f"{(time.monotonic() - started) / 60:.1f} min in")
            ended, shown = len(lines) > shown, len(lines)
            if state.finished:
                return spec.folder / "attempt-1"
            if ended and stop_when is not None and stop_when(tsv.parent):
                runner.cancel([handle])
                return spec.folder / "attempt-1"
            time.sleep(poll_s)
    except BaseException:
        runner.cancel([handle])
        raise


def compare(root: Path, candidate: str, reference: str | None, model: str, rounds_n: int | None, smoke: bool,
            output: Path, registry: str = DEFAULT_REGISTRY, time_validation: bool = False,
            warmup: int = plan.WARMUP_ROUNDS, say: Callable[[str], None] = print) -> dict:
    """Run the A/B, write its reports and return its summary; raises by its verdict (exit 1 or 3)."""
    check_folder(output)  # a file there (or above it) is bad input, found before any image is pulled
    n = plan.measured_rounds(rounds_n, smoke, "--rounds")
    ensure_image(candidate, "candidate")
    reference = reference or default_reference(root, candidate, registry)
    ensure_image(reference, "reference")
    # By image id from here on: a tag rebuilt or moved while the rounds run must not change what they measure.
    names = {"candidate": candidate, "reference": reference}
    candidate_id, reference_id = engine.image_id(candidate), engine.image_id(reference)
    threshold = verdict.max_regression_pct(root)
    folder = output / f"ab-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    if folder.exists():
        raise NgcPaddleError(f"{folder}: exists; fix: wait a second or give another --output")
    gpus = 1 if engine.host_has_nvidia_gpus() else 0
    spec = plan.compare_job(candidate_id, reference_id, folder.resolve(), plan.MODELS[model], n, smoke, gpus,
                            time_validation, warmup)
    say(f"==> A/B on this host: {candidate} vs {reference}: {n} rounds of {', '.join(plan.MODELS[model])}"
        f"{' (smoke)' if smoke else ''}, order alternated, threshold {threshold:g} %")
    attempt = run_job(spec, say)
    summary = ab_report.analyze(attempt / "bench-ab", threshold, hardware_profiles.read_facts(attempt / "facts.txt"))
    for side, name in names.items():
        summary[side]["name"] = name
    if not (attempt / "bench-ab").is_dir():
        summary["reasons"].insert(0, "the job did not reach the A/B: " + _outcome(attempt))
    ab_report.write(folder, summary, f"A/B: {candidate} vs {reference}")
    say(f"==> {ab_report.headline(summary)}")
    say(f"    report: {folder}/ab.md, ab.json, rounds.svg")
    if summary["verdict"] == "FAIL":
        raise CompareFailed(f"{candidate} is slower than {reference}: " + "; ".join(summary["reasons"][:2])[:600]
                            + f"; see {folder}/ab.md")
    if summary["verdict"] != "PASS":
        raise CompareNotProven(f"A/B of {candidate} vs {reference} {summary['verdict']}: "
                               + "; ".join(summary["reasons"][:2])[:600] + f"; fix: more --rounds, or a quieter host "
                               f"(see {folder}/ab.md)")
    return summary


def _outcome(attempt: Path) -> str:
    path = attempt / "outcome"
    return path.read_text().strip()[:300] if path.is_file() else "no outcome written"


