"""The runner interface, the state of a job in Slurm's words, and a job as the fan-out hands it to a runner.

Why: the fan-out reads every runner's jobs as Slurm states (PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT,
NODE_FAIL, CANCELLED, ...), so that one set of rules decides what is requeued and what is NOT RUN; the local and
SSH runners translate a process's exit into the same words.
"""

import signal
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from ngc_common.exit_codes import ExitCode
from ngc_paddle.host_errors import NotProven
from ngc_paddle.release.fleet.payload import JobSpec

# States in which a job will not run any more (Slurm's JOB_STATE names).
TERMINAL = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY",
                      "PREEMPTED", "DEADLINE", "SPECIAL_EXIT", "REVOKED"})
# The job script stopped by SIGINT/SIGTERM: its own exit (its trap), or the signal itself (Popen's -N).
STOPPED = frozenset({ExitCode.INTERRUPTED, ExitCode.TERMINATED, -signal.SIGINT, -signal.SIGTERM})


class NoPlace(NotProven):
    """The place has nowhere to run this profile's jobs (an empty partition, a gres absent): NOT PROVEN, with why."""


class SubmitFailed(NotProven):
    """The place refused the job for another reason (an account, a QOS, a full queue, a host that takes no copy):
    NOT RUN, with its reason."""


@dataclass
class JobState:
    """What the place says of one job (or array task) now."""

    job: str  # 123, or 123_4 for a task of a Slurm array; a runner's own handle elsewhere
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, ... (Slurm's flag suffix `+` dropped)
    node: str = ""
    reason: str = ""
    exit_code: str = ""  # Slurm's rc:signal, or the process's exit code
    restarts: int = 0
    start: str = ""
    end: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL


def state_of_exit(handle: str, node: str, code: int) -> JobState:
    """A finished job script's exit code in Slurm's words (local and SSH runners)."""
    if code == ExitCode.PASS:  # the job ran its steps (their verdicts are in its folder)
        return JobState(handle, "COMPLETED", node, exit_code="0")
    if code in STOPPED:
        return JobState(handle, "CANCELLED", node, "stopped by a signal", str(code))
    if code == ExitCode.NOT_STARTED:  # payload.sh: the image could not be started on the node
        return JobState(handle, "FAILED", node, "the image could not be started", str(code))
    return JobState(handle, "FAILED", node, f"exit code {code}", str(code))


@dataclass
class Placed:
    """One job of the fan-out: its spec (whose folder is the node's view), its folder here, its attempt."""

    spec: JobSpec
    local: Path
    attempt: int = 1


class Runner(ABC):
    """Where one fleet profile's jobs run."""

    kind = "?"

    def __init__(self, profile: str) -> None:
        self.profile = profile

    def node_folder(self, local: Path) -> Path:
        """Where the node sees a job folder that is `local` here (the same path unless a runner moves it)."""
        return local

    def probe(self) -> str | None:
        """Why this profile has no place to run now (the profile is then NOT PROVEN), or None."""
        return None

    @abstractmethod
    def submit(self, jobs: list[Placed]) -> list[str]:
        """Start the jobs (writing their scripts); a handle per job, in order. Raises NoPlace (NOT PROVEN) or
        SubmitFailed (NOT RUN) with the place's reason."""

    @abstractmethod
    def states(self, handles: list[str]) -> dict[str, JobState]:
        """The state of each job now (a handle the place no longer knows is left out)."""

    @abstractmethod
    def requeue(self, handle: str, job: Placed) -> str:
        """Start a job that ended without a verdict once more (its attempt already counted up); its handle."""

    @abstractmethod
    def cancel(self, handles: list[str]) -> None:
        """Stop the jobs and wait until they have stopped (their containers removed)."""

    def fetch(self, handle: str, job: Placed) -> None:  # noqa: B027 - nothing to bring back where folders are shared
        """Bring the job's folder back to job.local (nothing to do where the node writes it there)."""

    def describe(self, handle: str) -> str:
        return f"job {handle}"
