"""The fan-out: one job per flavor x hardware profile, all submitted at once, watched, requeued once, collected.

The long form: docs/design-notes.md, section `ngc_paddle/release/fleet/fanout.py`.
"""

import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.platforms import DEFAULT_PLATFORM
from ngc_paddle.release.ab import plan as ab_plan
from ngc_paddle.release.ab import verdict as ab_verdict
from ngc_paddle.release.ab.reference import Reference
from ngc_paddle.release.fleet import hardware_profiles, results
from ngc_paddle.release.fleet.cells import Attempt, Cell
from ngc_paddle.release.fleet.fleet_schema import Fleet, Profile
from ngc_paddle.release.fleet.payload import JobSpec
from ngc_paddle.release.fleet.runners import for_profile
from ngc_paddle.release.fleet.runners.interface import JobState, NoPlace, Placed, Runner, SubmitFailed
from ngc_paddle.release.fleet.runners.slurm_commands import HOPELESS
from ngc_paddle.release.stages import digest, file_digest

POLL_S = 2.0
HEARTBEAT_S = 60.0
MAX_ATTEMPTS = 2  # the first start and one requeue
UNANSWERED_S = 300.0  # how long a place may not answer before the run stops (its jobs then cancelled)


@dataclass(frozen=True)
class Target:
    """A flavor to gate: its candidate by digest and where its gate results are kept on this host."""

    flavor: str
    gpu_flavor: bool  # the flavor carries CUDA: GPU profiles apply to it, the cpu profile does not
    image: str  # REGISTRY/REPO@sha256:HEX
    folder: Path  # build/release/<release>/<flavor>/gates
    platforms: tuple[str, ...] = (DEFAULT_PLATFORM,)  # what the flavor is built for (the manifest's `platforms:`)
    pending: dict[str, str] = field(default_factory=dict)  # platform -> why the flavor is not built for it yet


@dataclass
class Track:
    """A submitted job of the fan-out."""

    cell: str
    placed: Placed
    runner: Runner
    key: str
    handle: str
    pattern: str
    submitted: float
    started: float | None = None
    shown: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    restarts_seen: int = 0


def applies(name: str, profile: Profile, target: Target) -> bool:
    """Whether a fleet profile proves this flavor: the ones it names, else GPU profiles for GPU flavors."""
    if profile.flavors is not None:
        return target.flavor in profile.flavors
    on_gpus = (profile.hardware or name) != hardware_profiles.CPU
    return on_gpus == target.gpu_flavor


def off_platform(profile: Profile, target: Target) -> str | None:
    """Why the flavor has no image for the profile's platform (None when it has one): the job is not sent."""
    if profile.platform in target.platforms:
        return None
    pending = target.pending.get(profile.platform)
    return (f"{target.flavor} is built for {', '.join(target.platforms)}, not {profile.platform} (the profile's "
            f"platform)" + (f": {pending}" if pending else "") + "; nothing was sent")


def benches_of(profile: Profile, benchmarks: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The benchmarks the profile runs (those asked for, with the profile's options), in the release's order."""
    if profile.bench is None:
        return tuple((command, ()) for command in benchmarks)
    return tuple((command, tuple(profile.bench[command])) for command in benchmarks if command in profile.bench)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds} s"


class FanOut:
    def __init__(self, fleet: Fleet, root: Path, benchmarks: tuple[str, ...], say: Callable[[str], None],
                 store: Callable[[str, str, Cell], None], stored: Callable[[str, str], dict | None],
                 baselines: Callable[[str, str, str], Path | None] = lambda flavor, profile, command: None,
                 poll_s: float = POLL_S, references: Callable[[str], Reference] | None = None,
                 ab_size: ab_plan.Size | None = None) -> None:
        self.fleet = fleet
        self.root = root
        self.benchmarks = benchmarks
        self.say = say
        self.store = store  # (flavor, profile, cell): keep a finished cell at once (state.json)
        self.stored = stored  # (flavor, profile) -> the stored cell, for resuming
        self.baselines = baselines  # (flavor, profile, command) -> the previous release's result.json, if any
        self.poll_s = poll_s
        # flavor -> the reference of its A/B, run by each job on its node (None: no A/B part at all)
        self.references = references
        self.ab_size = ab_size or ab_plan.Size()
        self.no_reference: dict[str, str] = {}  # cell -> why its job has no reference (a first release)
        self.threshold_pct = ab_verdict.max_regression_pct(root) if references else 0.0
        self.stopping = threading.Event()  # set by abort(): a watcher in the background stops looking
        self.sleep = self.stopping.wait  # between two looks at the jobs (a test's to replace)
        self.watcher: threading.Thread | None = None
        self.watch_error: BaseException | None = None
        self.patterns = hardware_profiles.gates_profiles(root)
        self.run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")  # sorts by time; one per run
        self.runners: dict[str, Runner] = {}
        self.cells: dict[str, Cell] = {}
        self.tracks: dict[str, Track] = {}
        self.unanswered: dict[int, float] = {}  # runner -> since when its states cannot be read

    # -- planning -------------------------------------------------------------------------------------------
    def run(self, targets: list[Target]) -> dict[str, Cell]:
        """Gate every target on every profile that applies to it and wait; the cells by `FLAVOR@PROFILE`."""
        self.start(targets)
        return self.wait()

    def start(self, targets: list[Target], background: bool = False) -> None:
        """Plan and submit every job; a profile that applies to no target is left out. With `background`, the jobs
        are watched (progress, requeues, results kept) by a thread of their own while the caller runs its local
        gates; wait() then joins it."""
        waiting: dict[str, list[tuple[Placed, str, str]]] = {}
        for target in targets:
            names = [n for n, p in self.fleet.profiles.items() if applies(n, p, target)]
            for name in list(names):  # a flavor without an image for the profile's platform: N/A, nothing sent
                profile = self.fleet.profiles[name]
                why = off_platform(profile, target)
                if why:
                    names.remove(name)
                    self._finish(target.flavor, name, Cell(
                        key="", status="N/A", detail=why, profile=name, hardware=profile.hardware or name, runner="-",
                        finished=now(), off_platform=True))
            if not names:
                kind = "GPU" if target.gpu_flavor else "cpu"
                self._finish(target.flavor, "-", Cell(
                    key="", status="NOT PROVEN", profile="-", hardware="-", runner="-", finished=now(),
                    detail=f"no profile of the fleet proves {target.flavor} (a {kind} flavor) on its platforms "
                           f"({', '.join(target.platforms)}); fix: add one, or name the flavor in a profile's "
                           "flavors:"))
                continue
            for name in names:
                planned = self._plan(target, name, self.fleet.profiles[name])
                if planned:
                    waiting.setdefault(name, []).append(planned)
        try:
            for name, jobs in waiting.items():
                self._submit(name, jobs)
        except BaseException as exc:
            self.abort(exc)
            raise
        if background and self.tracks:
            self.watcher = threading.Thread(target=self._watch_in_background, name="fleet-watch", daemon=True)
            self.watcher.start()

    def _watch_in_background(self) -> None:
        try:
            self._watch()
        except BaseException as exc:  # handed to wait(), in the caller's thread
            self.watch_error = exc

    def wait(self) -> dict[str, Cell]:
        """Watch the submitted jobs to their end. Raises KeyboardInterrupt (Ctrl-C, or SIGTERM turned into it by the
        CLI) after cancelling every job that still runs."""
        try:
            if self.watcher is None:
                self._watch()
            else:
                while self.watcher.is_alive():
                    self.watcher.join(0.5)  # in short steps: Ctrl-C reaches this thread meanwhile
                if self.watch_error is not None:
                    raise self.watch_error
        except BaseException as exc:
            self.abort(exc)
            raise
        return self.cells

    def _plan(self, target: Target, name: str, profile: Profile) -> tuple[Placed, str, str] | None:
        hw = profile.hardware or name
        benches = benches_of(profile, self.benchmarks)
        baselines = {c: self.baselines(target.flavor, name, c) for c, _ in benches}
        reference = self.references(target.flavor) if self.references else None
        key = digest(target.image, target.flavor, name, profile.model_dump(mode="json", by_alias=True), benches,
                     {c: file_digest(p) for c, p in baselines.items() if p}, self.patterns.get(hw, ""),
                     *([reference.image, self.ab_size] if reference and reference.image else []))
        previous = self.stored(target.flavor, name)
        if previous and previous.get("key") == key and previous.get("status") == "PASS":
            self.say(f"    {target.flavor}@{name}: unchanged since {previous.get('finished')}, PASS kept "
                     f"({previous.get('job') or '-'} on {previous.get('node') or '-'})")
            self.cells[f"{target.flavor}@{name}"] = Cell.model_validate(previous)
            return None
        runner = self.runners.get(name)
        if runner is None:
            runner = self.runners[name] = for_profile(name, profile, self.run_id)
            runner.root = self.root  # type: ignore[attr-defined]  # where a shared_dir maps from
        local = target.folder / name / self.run_id
        (local / "inputs").mkdir(parents=True, exist_ok=True)
        for command, path in baselines.items():
            if path:
                shutil.copy2(path, local / "inputs" / f"baseline-{command}.json")
                (local / "inputs" / f"baseline-{command}.from").write_text(path.parent.name + "\n")
        place = profile.place
        spec = JobSpec(target.flavor, name, hw, target.image, runner.node_folder(local), tuple(profile.validate_args),
                       benches, profile.gpus, place.container, place.allow_http,
                       getattr(place, "docker_host", None), getattr(place, "gres", None),
                       getattr(place, "nodes", 1), getattr(place, "tasks_per_node", 1), profile.platform)
        if reference is not None:  # the A/B on the job's own node(s): both images on the same nodes (and GPUs)
            size = self.ab_size
            spec = ab_plan.with_ab(spec, reference.image, size.rounds, size.smoke, size.validation_time)
            if reference.image is None:
                self.no_reference[spec.cell] = reference.why
        return Placed(spec, local), key, self.patterns.get(hw, "")

    # -- submitting -----------------------------------------------------------------------------------------
    def _submit(self, name: str, jobs: list[tuple[Placed, str, str]]) -> None:
        runner = self.runners[name]
        try:
            reason = runner.probe()
            if reason:
                raise NoPlace(reason)
            handles = runner.submit([placed for placed, _, _ in jobs])
        except (NoPlace, SubmitFailed) as exc:
            status = "NOT PROVEN" if isinstance(exc, NoPlace) else "NOT RUN"
            for placed, key, _ in jobs:
                self._finish(placed.spec.flavor, name, Cell(
                    key=key, status=status, detail=str(exc), profile=name, hardware=placed.spec.hardware,
                    runner=runner.kind, folder=self._relative(placed.local), finished=now()))  # type: ignore[arg-type]
            return
        for (placed, key, pattern), handle in zip(jobs, handles, strict=True):
            cell = placed.spec.cell
            self.tracks[cell] = Track(cell, placed, runner, key, handle, pattern, time.monotonic())
            self.say(f"    {cell}: {runner.describe(handle)} submitted")

    # -- watching -------------------------------------------------------------------------------------------
    def _watch(self) -> None:
        last_heartbeat = time.monotonic()
        while self.tracks and not self.stopping.is_set():
            by_runner: dict[int, list[Track]] = {}
            for track in self.tracks.values():
                by_runner.setdefault(id(track.runner), []).append(track)
            for tracks in by_runner.values():
                try:
                    states = tracks[0].runner.states([t.handle for t in tracks])
                except NgcPaddleError as exc:  # the controller or a host does not answer: ask again, for a while
                    if time.monotonic() - self.unanswered.setdefault(id(tracks[0].runner), time.monotonic()) \
                            > UNANSWERED_S:
                        raise
                    self.say(f"    {tracks[0].runner.profile}: no answer ({exc}); asking again")
                    continue
                self.unanswered.pop(id(tracks[0].runner), None)
                for track in tracks:
                    state = states.get(track.handle) or JobState(track.handle, "FAILED", reason="the place no longer "
                                                                 "knows the job")
                    self._update(track, state)
            if not self.tracks:
                break
            if time.monotonic() - last_heartbeat >= HEARTBEAT_S:
                last_heartbeat = time.monotonic()
                self.say("    waiting: " + "; ".join(self._now_line(t) for t in self.tracks.values()))
            self.sleep(self.poll_s)

    def _now_line(self, track: Track) -> str:
        if track.started is None:
            return f"{track.cell} queued {duration(time.monotonic() - track.submitted)}"
        return f"{track.cell} running {duration(time.monotonic() - track.started)}"

    def _update(self, track: Track, state: JobState) -> None:
        job = track.runner.describe(track.handle)
        if state.restarts > track.restarts_seen:  # Slurm requeued the job itself (e.g. its node failed)
            track.restarts_seen = state.restarts
            if track.placed.attempt == state.restarts:  # not our own requeue, which counted it already
                track.attempts.append(Attempt(job=job, state="REQUEUED", node=state.node,
                                              detail="Slurm requeued the job itself"))
                track.placed.attempt = state.restarts + 1
            if track.placed.attempt > MAX_ATTEMPTS:
                track.runner.cancel([track.handle])
                self._end(track, "NOT RUN", "requeued more than once: " + self._attempts_text(track), state)
                return
        if state.state == "PENDING":
            shown = f"{job} queued ({state.reason})" if state.reason not in ("", "None") else f"{job} queued"
            if shown != track.shown:
                track.shown = shown
                self.say(f"    {track.cell}: {shown}")
            if any(state.reason.startswith(h) for h in HOPELESS):
                track.runner.cancel([track.handle])
                self._end(track, "NOT PROVEN", f"{job} cannot start where it was sent: Slurm's pending reason is "
                                               f"{state.reason}", state)
            return
        if not state.finished:
            if state.state != "RUNNING":  # COMPLETING, CONFIGURING, SUSPENDED, ...: said once, as Slurm says it
                shown = f"{job} {state.state.lower()}" + (f" on {state.node}" if state.node else "")
                if shown != track.shown:
                    track.shown = shown
                    self.say(f"    {track.cell}: {shown}")
                return
            if track.started is None:
                track.started = time.monotonic()
            shown = f"{job} running on {state.node or '?'}"
            if shown != track.shown:
                track.shown = shown
                self.say(f"    {track.cell}: {shown} (queued {duration(track.started - track.submitted)})")
            return
        self._collect(track, state, job)

    def _collect(self, track: Track, state: JobState, job: str) -> None:
        try:
            track.runner.fetch(track.handle, track.placed)
        except NgcPaddleError as exc:
            self._end(track, "NOT RUN", str(exc), state)
            return
        reading = results.read(track.placed, state, track.pattern, self.threshold_pct,
                               self.no_reference.get(track.cell, ""))
        if not reading.ran:
            track.attempts.append(Attempt(job=job, state=results.slurm_words(state), detail=reading.detail,
                                          node=state.node or reading.facts.get("hostname", "")))
            if track.placed.attempt < MAX_ATTEMPTS:
                track.placed.attempt += 1
                self.say(f"    {track.cell}: {job} ended {results.slurm_words(state)} without a verdict: "
                         f"{reading.detail}; requeued (attempt {track.placed.attempt} of {MAX_ATTEMPTS})")
                track.handle = track.runner.requeue(track.handle, track.placed)
                track.restarts_seen = max(track.restarts_seen, track.placed.attempt - 1)
                track.started, track.shown = None, ""
                return
            self._end(track, "NOT RUN", self._attempts_text(track), state, reading)
            return
        detail = reading.detail
        if track.attempts:
            detail = f"{detail} (after a requeue: {self._attempts_text(track)})"
        self._end(track, reading.status, detail, state, reading)

    def _attempts_text(self, track: Track) -> str:
        return "; ".join(f"attempt {i}: {a.job} {a.state} on {a.node or '?'}: {a.detail}"
                         for i, a in enumerate(track.attempts, 1))

    def _end(self, track: Track, status: str, detail: str, state: JobState,
             reading: results.Reading | None = None) -> None:
        spec = track.placed.spec
        facts = reading.facts if reading else {}
        node = facts.get("hostname") or state.node or None
        cell = Cell(key=track.key, status=status, detail=detail, profile=spec.profile,  # type: ignore[arg-type]
                    hardware=spec.hardware, runner=track.runner.kind, job=track.runner.describe(track.handle),  # type: ignore[arg-type]
                    node=node, facts=facts, validation=reading.validate if reading else None,
                    bench=reading.bench if reading else {}, ab=reading.ab if reading else None,
                    nodes=[n for n in (facts.get("slurm_nodes") or facts.get("nodes", "")).split(",") if n]
                    if spec.tasks > 1 else None,
                    tasks=reading.tasks if reading and spec.tasks > 1 else None,
                    scaling=reading.scaling if reading and spec.tasks > 1 else None,
                    attempts=track.attempts,
                    folder=self._relative(track.placed.local), seconds=round(time.monotonic() - track.submitted, 1),
                    finished=now())
        self._finish(spec.flavor, spec.profile, cell)  # kept first: a Ctrl-C from here on cannot lose it
        self.tracks.pop(track.cell, None)
        where = f" on {hardware_profiles.describe(facts)}" if facts else ""
        self.say(f"    {track.cell}: {cell.job} done{where} after {duration(cell.seconds or 0)}: {status}: "
                 f"{detail[:400]}")

    def _finish(self, flavor: str, profile: str, cell: Cell) -> None:
        self.cells[f"{flavor}@{profile}"] = cell
        self.store(flavor, profile, cell)
        if not cell.job:
            self.say(f"    {flavor}@{profile}: {cell.status}: {cell.detail}")

    def _relative(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    # -- stopping -------------------------------------------------------------------------------------------
    def abort(self, exc: BaseException) -> None:
        """Cancel every job still queued or running (the run is stopping: `exc` says why) and record them NOT RUN."""
        self.stopping.set()
        if self.watcher is not None and self.watcher is not threading.current_thread():
            self.watcher.join()  # it ends its current look at the jobs; then the jobs are this thread's
        for cell in [c for c in self.tracks if c in self.cells]:  # its verdict was kept just before the interrupt
            del self.tracks[cell]
        if not self.tracks:
            return
        why = "interrupted (Ctrl-C or SIGTERM)" if isinstance(exc, KeyboardInterrupt) else f"stopped by an error: {exc}"
        self.say(f"==> {why}: cancelling {len(self.tracks)} job(s): "
                 + ", ".join(t.runner.describe(t.handle) for t in self.tracks.values()))
        by_runner: dict[int, list[Track]] = {}
        for track in self.tracks.values():
            by_runner.setdefault(id(track.runner), []).append(track)
        for tracks in by_runner.values():
            try:
                tracks[0].runner.cancel([t.handle for t in tracks])
            except (NgcPaddleError, OSError) as error:
                self.say(f"    could not cancel {', '.join(t.handle for t in tracks)}: {error}")
        for track in list(self.tracks.values()):
            self._end(track, "NOT RUN", f"cancelled: the run was {why}; rerun to resume", JobState(track.handle,
                      "CANCELLED"))
