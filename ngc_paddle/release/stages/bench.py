"""Release stage `bench`: each benchmark in the image, gated against the previous release's results on this host.

The long form: docs/design-notes.md, section `ngc_paddle/release/stages/bench.py`.
"""

import os
from collections.abc import Callable
from pathlib import Path

from ngc_common import bench_result
from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.ab import gate_without_floor
from ngc_paddle.release.options import BENCHMARKS
from ngc_paddle.release.stages import Built, Outcome, Step, ab, digest, release_folder

NAME = "bench"
# The benchmark's exit code, as a stage status (any other: the benchmark could not run).
BENCH_STATUS = {ExitCode.PASS: "passed", ExitCode.FAIL: "failed", ExitCode.NOT_PROVEN: "not proven"}
STATUS_OF = {"PASS": "passed", "FAIL": "failed"}  # a verdict the A/B decided; anything else: not proven
AbOfThisRun = Callable[[], tuple[dict | None, str]]  # this run's A/B summary, or None and why there is none


class BenchResultError(NgcPaddleError):
    """A stored or new result.json that cannot be used (exit 2)."""


def plan(built: Built) -> Step:
    commands = built.opts.benchmarks
    baselines = previous_bench_results(built.release_run, built.flavor, commands)
    ab_key = ab.key(built, ab.reference(built))  # a new A/B may decide a benchmark that no floor decides
    return Step(NAME, digest(built.image_id, commands, "gpu" if built.gpu_host else "no gpu",
                                sorted(map(str, baselines.values())), ab_key),
                lambda: run_benchmarks(built.image, built.folder / "bench", commands, baselines,
                                       lambda: ab.this_run(built)))


def plan_platform(built: Built) -> Step:
    """The benchmarks of a further platform of a flavor (cpu-arm64): gated by their own floors alone, since the
    previous release's results and the A/B are the first platform's (an emulated run is NOT PROVEN, `emulated`)."""
    commands = built.opts.benchmarks
    return Step(NAME, digest(built.image_id, commands, "gpu" if built.gpu_host else "no gpu"),
                lambda: run_benchmarks(built.image, built.folder / "bench", commands, {}))


def previous_bench_results(release: ResolvedRelease, flavor: str, commands: tuple[str, ...]) -> dict[str, Path]:
    """The newest stored result.json of each benchmark in the run of this flavor of the release before `release`, on
    this host: the baseline its regressions are gated against (the benchmark refuses other hardware itself)."""
    previous = release.previous_release
    found = {}
    for command in commands if previous else ():
        folder = release_folder(previous.root, previous.release) / flavor / "bench" / command
        # every run's result.json, a dangling link or a folder in its place included: each is read, none skipped
        stored = [run / "result.json" for run in sorted(folder.iterdir())
                  if os.path.lexists(run / "result.json")] if folder.is_dir() else []
        passed = [path for path in stored if stored_verdict(path) == "PASS"]
        if passed:  # a failed or unproven run is no baseline; the newest passed one is, if the benchmark takes it
            bench_result.read_baseline(passed[-1], command.removeprefix("bench-"), _fix(passed[-1]),
                                       BenchResultError)
            found[command] = passed[-1]
    return found


def _fix(result: Path) -> str:
    return f"delete {result.parent} (the previous release's run of it then gives no baseline) or restore the file"


def stored_verdict(result: Path) -> str:
    """The verdict of a stored result; one that cannot be read is bad input (exit 2), not a silently lost baseline."""
    return bench_result.read(result, _fix(result), BenchResultError).verdict


def run_benchmarks(image: str, out: Path, commands: tuple[str, ...], baselines: dict[str, Path],
                   ab_of_this_run: AbOfThisRun | None = None) -> Outcome:
    out.mkdir(parents=True, exist_ok=True)
    details, statuses = [], []
    for command in commands:
        folder = out / command
        before = set(folder.glob("*/result.json"))
        mounts, extra = ["-v", f"{out}:/workspace/out"], []
        if command in baselines:
            mounts += ["-v", f"{baselines[command]}:/workspace/baseline.json:ro"]
            extra = ["--baseline", "/workspace/baseline.json"]
        name = f"ngc-release-bench-{os.getpid()}-{command}"
        try:
            proc = engine.run(image, command, "--output", f"/workspace/out/{command}", *extra,
                              flags=["--name", name, *engine.run_flags(writes_mounts=True), "-e", "NGC_PADDLE_QUIET=1",
                                     *mounts])
        except BaseException:  # interrupted: the container must not run on and write into the next attempt
            engine.remove_container(name)
            raise
        results = sorted(set(folder.glob("*/result.json")) - before)
        if proc.returncode not in BENCH_STATUS or not results:
            return Outcome("failed", f"{command} could not run (exit {proc.returncode}): {proc.stderr.strip()[-200:]}")
        try:  # written by the image's benchmark just now: one it cannot have written fails the stage
            result = bench_result.read(results[-1], "check the benchmark in the image", BenchResultError)
        except NgcPaddleError as exc:
            return Outcome("failed", f"{command} wrote a result.json that cannot be read: {exc}")
        baseline = baselines[command].parent.name if command in baselines else None
        kind = gate_without_floor.kind_without_floor(result)
        if kind is not None and ab_of_this_run is not None:
            decided, why = gate_without_floor.decide(command, kind, *ab_of_this_run())
            details.append(describe(command, result, baseline, (decided, why)))
            statuses.append(STATUS_OF.get(decided, "not proven"))
            continue
        details.append(describe(command, result, baseline))
        statuses.append(BENCH_STATUS[proc.returncode])
    status = "failed" if "failed" in statuses else "not proven" if "not proven" in statuses else "passed"
    return Outcome(status, "; ".join(details))


def describe(command: str, result: bench_result.ResultFile, baseline: str | None,
             decided: tuple[str, str] | None = None) -> str:
    """`COMMAND: VERDICT (N pass, N fail, N not run, N n/a, baseline RUN|no baseline) [(failed: gates)][; reasons]`;
    a verdict the A/B `decided` (ngc_paddle.release.ab.gate_without_floor): `COMMAND: VERDICT: WHY; absolute: (...)`."""
    gates = result.gates
    counts = {s: sum(g.status == s for g in gates) for s in ("PASS", "FAIL", "NOT RUN", "N/A")}
    failed = [g.gate for g in gates if g.status == "FAIL"]
    figures = (f"({counts['PASS']} pass, {counts['FAIL']} fail, {counts['NOT RUN']} not run, {counts['N/A']} n/a, "
               f"{f'baseline {baseline}' if baseline else 'no baseline'})")
    if decided is not None:
        return f"{command}: {decided[0]}: {decided[1]}; absolute gates: {result.verdict} {figures}"
    return (f"{command}: {result.verdict} {figures}"
            + (f" (failed: {', '.join(failed)})" if failed else "")
            + "".join(f"; {r}" for r in result.verdict_reasons if result.verdict != "FAIL"))


def markdown(folder: Path) -> str:
    """The notes' benchmark section of a flavor: each benchmark's newest stored result.md, in a fixed order."""
    parts = []
    for command in BENCHMARKS:
        results = sorted((folder / command).glob("*/result.md"))
        if results:
            text = results[-1].read_text().split("\n", 1)[1]
            parts.append(f"### {command}\n{text}")
    return "\n".join(parts)
