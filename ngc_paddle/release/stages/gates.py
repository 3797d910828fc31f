"""Release stage `gates`: validation and benchmarks of every flavor on every hardware profile of a fleet.

The long form: docs/design-notes.md, section `ngc_paddle/release/stages/gates.py`.
"""

from collections.abc import Callable
from functools import partial
from pathlib import Path

from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.release.ab.plan import Size
from ngc_paddle.release.ab.reference import Reference
from ngc_paddle.release.fleet.cells import Cell
from ngc_paddle.release.fleet.fanout import FanOut, Target
from ngc_paddle.release.fleet.fleet_schema import Fleet
from ngc_paddle.release.options import BENCHMARKS
from ngc_paddle.release.stages import Outcome, digest, release_folder
from ngc_paddle.release.stages.bench import stored_verdict
from ngc_paddle.release.state_file import State

NAME = "gates"
STATUS = {"PASS": "passed", "FAIL": "failed"}  # anything else: not proven


def folder(root: Path, release: str, flavor: str) -> Path:
    return release_folder(root, release) / flavor / NAME


def previous_result(release: ResolvedRelease, flavor: str, profile: str, command: str) -> Path | None:
    """The newest passing result.json of `command` in the gates of this flavor and profile of the release before
    `release`: its regression baseline (month over month, per hardware profile)."""
    previous = release.previous_release
    if previous is None:
        return None
    runs = folder(previous.root, previous.release, flavor) / profile
    passed = [p for p in sorted(runs.glob(f"*/attempt-*/bench/{command}/*/result.json")) if stored_verdict(p) == "PASS"]
    return passed[-1] if passed else None


class Gates:
    """The fan-out of one run (release or `ngc-paddle gates`), with its cells kept in state.json as they finish."""

    def __init__(self, fleet: Fleet, release: ResolvedRelease, benchmarks: tuple[str, ...], state: State,
                 say: Callable[[str], None], poll_s: float | None = None,
                 references: Callable[[str], Reference] | None = None, ab_size: Size | None = None) -> None:
        self.release = release.release
        self.root = root = release.root
        self.manifest = release.manifest
        self.state = state
        extra: dict = {"poll_s": poll_s} if poll_s else {}
        if references:
            extra.update(references=references, ab_size=ab_size)
        self.fan = FanOut(fleet, root, benchmarks, say,
                          store=lambda flavor, profile, cell: state.record_profile(
                              flavor, NAME, profile, cell.model_dump(mode="json", exclude_none=True)),
                          stored=lambda flavor, profile: state.profile(flavor, NAME, profile),
                          baselines=partial(previous_result, release), **extra)
        self.flavors: list[str] = []

    def start(self, flavors: list[tuple[str, bool, str]], background: bool = False) -> None:
        """Submit the jobs of each (flavor, is it a GPU flavor, candidate REGISTRY/REPO@DIGEST); with `background`,
        watch them in a thread of their own while the caller runs its local gates."""
        self.flavors = [flavor for flavor, _, _ in flavors]
        specs = self.manifest.flavors
        self.fan.start([Target(f, gpu, image, folder(self.root, self.release, f), tuple(specs[f].platforms),
                               dict(specs[f].platforms_pending)) for f, gpu, image in flavors], background)

    def wait(self) -> dict[str, tuple[str, Outcome]]:
        """Each flavor's (key, outcome), once every job has ended."""
        cells = self.fan.wait()
        order = [*self.fan.fleet.profiles, "-"]  # the fleet file's order, whatever order the jobs ended in
        return {flavor: outcome({p: cells[f"{flavor}@{p}"] for p in order if f"{flavor}@{p}" in cells})
                for flavor in self.flavors}

    def abort(self, exc: BaseException) -> None:
        self.fan.abort(exc)


def markdown(root: Path, cells: dict[str, dict]) -> str:
    """The notes' benchmark tables of a flavor's fan-out: each profile's newest result.md of each benchmark, with the
    job and node it comes from."""
    parts = []
    for profile, cell in cells.items():
        for command in BENCHMARKS:
            found = sorted((root / cell["folder"]).glob(f"attempt-*/bench/{command}/*/result.md")) \
                if cell.get("folder") else []
            if found:
                text = found[-1].read_text().split("\n", 1)[1]
                parts.append(f"### {command} on {profile} ({cell.get('job')}, {cell.get('node')})\n{text}")
    return "\n".join(parts)


def _nodes(cell: Cell) -> str:
    """Where a cell ran: its node, or a data-parallel job's node list, tasks and scaling efficiencies."""
    if not cell.nodes:
        return cell.node or "?"
    scaling = "".join(f", {name} scaling efficiency {value:.2f}" for name, value in (cell.scaling or {}).items())
    return f"{','.join(cell.nodes)}, {cell.facts.get('tasks', '?')} tasks{scaling}"


def outcome(cells: dict[str, Cell]) -> tuple[str, Outcome]:
    """A flavor's key and verdict from its cells (by profile)."""
    statuses = [c.status for c in cells.values() if not c.off_platform]  # a platform the flavor does not claim
    status = "failed" if "FAIL" in statuses else "passed" if statuses and set(statuses) == {"PASS"} else "not proven"
    parts = []
    for profile, cell in cells.items():
        where = f" ({cell.job} on {_nodes(cell)})" if cell.job else ""
        parts.append(f"{profile}: {cell.status}{where}" + ("" if cell.status == "PASS" else f": {cell.detail}"))
    key = digest(sorted(c.key for c in cells.values()))
    return key, Outcome(status, "; ".join(parts) or "no profile ran",
                        {"profiles": {p: c.model_dump(mode="json", exclude_none=True) for p, c in cells.items()}})
