"""A finished job's folder to one verdict of its flavor x profile: PASS, FAIL, NOT RUN, NOT PROVEN or N/A.

Why: what a job leaves (payload.sh: outcome, facts.txt, steps.tsv, validation/validation.json,
bench/<command>/<run>/result.json) is read the way the release reads its local gates, with the same readers,
plus what only a fleet can get wrong: a job that never produced a verdict (a dead node, a time limit, an
image that would not start: NOT RUN, never PASS), a node without the profile's GPU (N/A, with what it has), a
node of another machine than the profile's platform (NOT RUN: nothing ran, and an emulated run would be no verdict), a
node that ran another image than the candidate's digest (NOT RUN). A benchmark NOT PROVEN only because the node's
CPU kind has no floor takes the verdict of its metrics in the job's A/B
(ngc_paddle.release.ab.gate_without_floor, the rule this host's release applies too). The worst verdict of the
steps is the cell's: FAIL, then NOT RUN, N/A, NOT PROVEN; PASS only when every step passed.
"""

from dataclasses import dataclass, field
from pathlib import Path

from ngc_common import bench_result, bounded_read
from ngc_common.exit_codes import ExitCode
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.ab import ab_report, gate_without_floor
from ngc_paddle.release.fleet import hardware_profiles, task_results
from ngc_paddle.release.fleet.runners.interface import STOPPED, JobState, Placed
from ngc_paddle.release.stages import bench as bench_stage
from ngc_paddle.release.stages import validate as validate_stage
from ngc_paddle.release.stages.ab import NOT_RUN

ORDER = ("FAIL", "NOT RUN", "N/A", "NOT PROVEN", "PASS")  # worst first
VERDICT_OF = {ExitCode.PASS: "PASS", ExitCode.FAIL: "FAIL", ExitCode.NOT_PROVEN: "NOT PROVEN"}  # validate's, a bench's
WRONG_MACHINE = "wrong-machine:"  # payload.sh: the node is not of the profile's platform (uname -m)
BENCH_VERDICT = {"PASS": "PASS", "FAIL": "FAIL", "NOT PROVEN": "NOT PROVEN", "SMOKE": "NOT PROVEN"}


@dataclass
class Reading:
    """What one attempt of a job gave. `ran` is False when it produced no verdict at all (requeue it once)."""

    status: str
    detail: str
    ran: bool = True
    facts: dict[str, str] = field(default_factory=dict)
    validate: str | None = None
    bench: dict[str, str] = field(default_factory=dict)
    ab: str | None = None
    tasks: list[str] = field(default_factory=list)  # a multi-task job's tasks and ranks, per benchmark
    scaling: dict[str, float] = field(default_factory=dict)  # "bench-rn50 fp32": the scaling efficiency


def worst(statuses: list[str]) -> str:
    return min(statuses, key=ORDER.index) if statuses else "NOT RUN"


def attempt_folder(job: Placed) -> Path:
    return job.local / f"attempt-{job.attempt}"


def outcome(job: Placed) -> str:
    path = attempt_folder(job) / "outcome"
    if not path.is_file():
        return ""
    return (bounded_read.read_text(path, NgcPaddleError, max_bytes=4096).strip().splitlines() or [""])[0]


def slurm_words(state: JobState) -> str:
    """`FAILED (JobLaunchFailure, exit 0:9)`: the state, Slurm's reason and the exit code, as Slurm gave them."""
    extra = [p for p in (state.reason if state.reason not in ("None", "") else "",
                         f"exit {state.exit_code}" if state.exit_code not in ("", "0", "0:0") else "") if p]
    return state.state + (f" ({', '.join(extra)})" if extra else "")


def read(job: Placed, state: JobState, pattern: str, threshold_pct: float = 5.0, no_reference: str = "") -> Reading:
    """The verdict of the job's current attempt, which ended in `state`; `pattern` is its profile's GPU pattern. A job
    with a reference ran an A/B too: its verdict (against `threshold_pct`) joins the cell's; `no_reference` says why a
    job has none (a first release: the absolute gates decide alone)."""
    folder = attempt_folder(job)
    facts = hardware_profiles.read_facts(folder / "facts.txt")
    said = outcome(job)
    if said.startswith("no-gpu:"):
        return Reading("N/A", said.removeprefix("no-gpu:").strip(), facts=facts)
    if said.startswith(WRONG_MACHINE):  # a verdict of where the job was sent: requeued it would land there again
        return Reading("NOT RUN", said.removeprefix(WRONG_MACHINE).strip(), facts=facts)
    if state.state != "COMPLETED" or said != "done":
        why = said.removeprefix("start-failed: ") if said.startswith("start-failed") else (
            f"the job ended without a verdict ({said or 'no outcome written'})" if state.state == "COMPLETED" else
            said or "no outcome written")
        return Reading("NOT RUN", why, ran=False, facts=facts)
    wrong = hardware_profiles.mismatch(job.spec.hardware, pattern, job.spec.gpus, facts)
    if wrong:
        return Reading("N/A", wrong, facts=facts)
    expected = job.spec.image.partition("@")[2]
    if facts.get("image_digest") != expected:
        return Reading("NOT RUN", f"the node ran {facts.get('image', 'an unknown image')}, not the candidate "
                                  f"{expected[:19]}", facts=facts)
    steps = _steps(folder / "steps.tsv")
    verdicts, details = {}, []
    validate = None
    if job.spec.validate:
        validate, validate_detail = _validate(folder, steps.get("validate"))
        details.append(f"validate {validate} ({validate_detail})")
    summary, no_ab = None, f"{NOT_RUN}: {no_reference or 'this job ran no A/B'}"
    if job.spec.reference and job.spec.ab_rounds:
        summary = ab_report.analyze(folder / "bench-ab", threshold_pct, facts)
        summary["candidate"]["name"], summary["reference"]["name"] = job.spec.image, job.spec.reference
        ab_report.write(folder / "bench-ab", summary, f"A/B of {job.spec.cell} on {facts.get('hostname', '?')}")
    tasks, scaling = [], {}
    for command, _args in job.spec.benches:
        verdicts[command], detail = _bench(folder, command, steps.get(command), job, summary, no_ab)
        if job.spec.tasks > 1:
            verdicts[command], detail, run = _tasks(folder, command, job, verdicts[command], detail)
            tasks += [f"{command} {t}" for t in run.tasks + run.ranks]
            scaling.update({f"{command} {p}": v for p, v in run.scaling.items()})
        details.append(detail)
    ab = summary["verdict"] if summary else None
    if summary:
        details.append(ab_report.headline(summary))
    elif no_reference:
        details.append(f"{no_ab}; the absolute gates decide alone")
    status = worst([v for v in (validate, *verdicts.values(), ab) if v])
    return Reading(status, "; ".join(details), facts=facts, validate=validate, bench=verdicts, ab=ab, tasks=tasks,
                   scaling=scaling)


def _steps(path: Path) -> dict[str, int]:
    found = {}
    if path.is_file():
        for line in bounded_read.read_text(path, NgcPaddleError, max_bytes=64 * 1024).splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[1].lstrip("-").isdigit():
                found[parts[0]] = int(parts[1])
    return found


def _not_run(code: int | None) -> str | None:
    if code is None:
        return "did not run"
    if code in STOPPED:
        return f"interrupted (exit {code})"
    return None


def _validate(folder: Path, code: int | None) -> tuple[str, str]:
    stopped = _not_run(code)
    if stopped:
        return "NOT RUN", stopped
    if code not in VERDICT_OF:
        return "FAIL", f"the validation suite could not run (exit {code})"
    report_path = folder / "validation" / "validation.json"
    try:
        report = bounded_read.load_json(report_path, NgcPaddleError)
        return VERDICT_OF[code], validate_stage.describe(report)
    except (NgcPaddleError, KeyError, TypeError) as exc:
        return "FAIL", f"exit {code} but its report cannot be read: {str(exc)[:200]}"


def _bench(folder: Path, command: str, code: int | None, job: Placed, ab: dict | None = None,
           no_ab: str = "") -> tuple[str, str]:
    """A benchmark's verdict in the job; one NOT PROVEN only because the node's CPU kind has no floor takes its
    metrics' verdict in the job's A/B (`ab`, its summary; None: `no_ab` says why), as on this host's release."""
    stopped = _not_run(code)
    if stopped:
        return "NOT RUN", f"{command}: {stopped}"
    results = (task_results.results_of(folder, command) if job.spec.tasks > 1 else
               sorted((folder / "bench" / command).glob("*/result.json")))
    if code not in VERDICT_OF or not results:
        return "FAIL", f"{command} could not run (exit {code})"
    try:
        result = bench_result.read(results[-1], "check the benchmark in the image", bench_stage.BenchResultError)
    except NgcPaddleError as exc:
        return "FAIL", f"{command} wrote a result.json that cannot be read: {exc}"
    baseline = job.local / "inputs" / f"baseline-{command}.json"
    kind = gate_without_floor.kind_without_floor(result)
    if kind is not None:
        decided = gate_without_floor.decide(command, kind, ab, no_ab)
        return decided[0], bench_stage.describe(command, result, _baseline_name(baseline), decided)
    verdict = BENCH_VERDICT.get(result.verdict, "NOT RUN")
    detail = bench_stage.describe(command, result, _baseline_name(baseline))
    if result.verdict == "SMOKE":
        detail += "; a --smoke run measures no gate"
    return verdict, detail


def _tasks(folder: Path, command: str, job: Placed, verdict: str,
           detail: str) -> tuple[str, str, task_results.TaskRun]:
    """A multi-task benchmark's verdict: its own, unless a task or a rank is missing from what the job left (NOT
    PROVEN: the verdict would rest on missing data; a FAIL or NOT RUN stays)."""
    found = task_results.results_of(folder, command)
    try:
        results = bounded_read.load_json(found[-1], NgcPaddleError).get("results", {}) if found else {}
    except NgcPaddleError:  # an unreadable report: _bench's FAIL says why; the tasks are still listed
        results = {}
    run = task_results.read(folder, command, job.spec.tasks, results if isinstance(results, dict) else {})
    detail = f"{detail}; {run.describe(command)}"
    if run.problem and verdict not in ("FAIL", "NOT RUN"):
        return "NOT PROVEN", f"{detail}; NOT PROVEN: {run.problem}", run
    return verdict, detail, run


def _baseline_name(path: Path) -> str | None:
    origin = path.with_suffix(".from")
    if not path.is_file():
        return None
    return origin.read_text().strip() if origin.is_file() else path.name
