"""The release pipeline's state.json: the result and input key of each stage of each flavor (pydantic, strict).

Read at the door through a strict model; written by State.record after every stage (atomically).

Why: the pipeline skips a stage whose recorded key is unchanged and that passed, so a state file
that is edited, truncated or from another tool must not be half-believed: a stage recorded as a
number, an unknown status or a missing key is bad input, one line naming the file and the field
with the fix (delete the file to start over: every stage then reruns), exit 2; never a traceback.
"""

import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationError

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_common.strict_model import Strict
from ngc_paddle.fields import Token
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.fleet.cells import Cell

MAX_STATE_BYTES = 4 * 1024 * 1024  # a few kB per release
MAX_DETAIL = 20_000  # characters of a stage's detail or evidence: the reader's limit, which the writer keeps too
Stage = Literal["build", "candidate", "validate", "ab", "bench", "gates", "scan", "month-over-month", "attest", "push"]
# "not run": the A/B part of a first release (no previous image): the absolute gates decide alone (stages/ab.py)
Status = Literal["passed", "failed", "not proven", "accepted unproven", "unsigned", "not run"]


class StateError(NgcPaddleError):
    """state.json cannot be used."""


def _timestamp(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value[:40]!r} is not an ISO 8601 time") from None
    return value


class StageEntry(Strict):
    key: Annotated[str, Field(max_length=200, pattern=r"^[A-Za-z0-9:]*$")]  # a hash or an image id; "" if none
    status: Status
    detail: Annotated[str, Field(max_length=MAX_DETAIL)]  # may quote a tool's output, newlines included
    # gates only: what the gate itself found, before a person's acceptance was added to `detail`
    evidence: Annotated[str, Field(max_length=MAX_DETAIL)] | None = None
    finished: Annotated[str, Field(max_length=40), AfterValidator(_timestamp)]
    digest: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")] | None = None  # candidate and push only
    # candidate and push of a flavor of several platforms: `digest` is its image index, this each platform's manifest
    platform_digests: dict[Annotated[str, Field(pattern=r"^[a-z0-9]+/[a-z0-9]+$")],
                           Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]] | None = None
    image_id: Annotated[str, Field(max_length=80, pattern=r"^[A-Za-z0-9:]*$")] | None = None  # the image gated
    # build only: the image, its components as read back from it (for the notes), its size in bytes
    image: Annotated[str, Field(max_length=300)] | None = None
    readback: dict[Annotated[str, Field(max_length=100)], Annotated[str, Field(max_length=200)]] | None = None
    size: Annotated[int, Field(ge=0)] | None = None
    # month-over-month only: every package change (a line each, for the notes) and the release compared with
    changes: list[Annotated[str, Field(max_length=500)]] | None = None
    since: Annotated[str, Field(max_length=20)] | None = None
    # gates only (a fleet's fan-out): the verdict of each hardware profile, by the fleet file's profile name
    profiles: dict[Token, Cell] | None = None


class StateFile(Strict):
    flavors: dict[Token, dict[Stage, StageEntry]]


def fix(path: Path) -> str:
    return f"delete {path} to start over (every stage then reruns)"


def fit(text: str) -> str:
    """A detail cut to what the reader accepts, saying how much was cut (a month-over-month failure listing
    hundreds of removed packages would otherwise write a state.json its own reader refuses)."""
    if len(text) <= MAX_DETAIL:
        return text
    keep = MAX_DETAIL - 100
    return text[:keep] + f" ... ({len(text) - keep} more characters cut; the stage's own report has them all)"


def read(path: Path) -> dict[str, Any]:
    """The recorded stages as a plain mapping (flavor -> stage -> entry); {} when there is no file yet."""
    if path.is_symlink():  # a link (a loop reads as "no file") is never taken as "no state yet", nor written through
        raise StateError(f"{path}: (file): is a symlink; fix: replace it with the file itself, or {fix(path)}")
    if not path.exists():
        return {}
    try:
        data = bounded_read.load_json(path, StateError, MAX_STATE_BYTES)
    except StateError as exc:  # same line, with this file's fix
        raise StateError(f"{str(exc).rsplit('; fix: ', 1)[0]}; fix: {fix(path)}") from None
    try:
        StateFile.model_validate({"flavors": data})
    except ValidationError as exc:
        raise StateError(one_line(path, exc, fix(path), skip=1, written=True)) from None
    return data


class State:
    """state.json in memory: a stage's last passed result by its key, and each new result written at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = read(path)  # checked at the door: a malformed file is one line, exit 2
        self.lock = threading.RLock()  # a fan-out's watcher records its cells while the local gates record theirs

    def done(self, flavor: str, stage: str, key: str) -> dict | None:
        """The stage's last result when its inputs are unchanged and it passed (a NOT PROVEN one always reruns)."""
        return self._same_inputs(flavor, stage, key, ("passed",))

    def unproven(self, flavor: str, stage: str, key: str) -> dict | None:
        """The stage's last result when its inputs are unchanged and it was NOT PROVEN (accepted or not)."""
        return self._same_inputs(flavor, stage, key, ("not proven", "accepted unproven"))

    def _same_inputs(self, flavor: str, stage: str, key: str, statuses: tuple[str, ...]) -> dict | None:
        entry = self.data.get(flavor, {}).get(stage)
        return entry if entry and entry.get("key") == key and entry.get("status") in statuses else None

    def record(self, flavor: str, stage: str, key: str, status: str, detail: str, **extra) -> dict:
        if "evidence" in extra and isinstance(extra["evidence"], str):
            extra = {**extra, "evidence": fit(extra["evidence"])}
        entry = {"key": key, "status": status, "detail": fit(detail),
                 "finished": datetime.now(UTC).isoformat(timespec="seconds"), **extra}
        with self.lock:
            self.data.setdefault(flavor, {})[stage] = entry
            self._write()
        return entry

    def forget(self, entry: str) -> bool:
        """Drop every stage of one entry (a flavor, or a platform of one: cpu-arm64); whether it held any."""
        with self.lock:
            held = self.data.pop(entry, None) is not None
            if held:
                self._write()
        return held

    def record_profile(self, flavor: str, stage: str, profile: str, cell: dict) -> None:
        """Keep one profile's verdict of a fan-out as soon as it is known (the stage's own result comes after all
        of them): an interrupted run then resumes with the profiles that passed."""
        with self.lock:
            entry = self.data.setdefault(flavor, {}).get(stage) or {}
            if entry.get("key") != "" or entry.get("detail") != "in progress":  # a finished run's entry: start anew
                entry = {"key": "", "status": "not proven", "detail": "in progress",
                         "profiles": dict(entry.get("profiles") or {}),  # the verdicts a rerun keeps
                         "finished": datetime.now(UTC).isoformat(timespec="seconds")}
            entry.setdefault("profiles", {})[profile] = cell
            self.data[flavor][stage] = entry
            self._write()

    def profile(self, flavor: str, stage: str, profile: str) -> dict | None:
        """The last recorded verdict of one profile of a fan-out stage."""
        return ((self.data.get(flavor, {}).get(stage) or {}).get("profiles") or {}).get(profile)

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2) + "\n")
        tmp.replace(self.path)
