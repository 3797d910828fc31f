"""One verdict of a flavor on a hardware profile (a cell of the notes' gate table), as state.json keeps it.

Why: the release resumes per cell (a profile that passed with the same inputs is not run again when another
one failed), and the notes show each cell with the node and the job id it comes from; both read this strict
model, so a state file edited by hand is one line, exit 2 (ngc_paddle.release.state_file), never a half-read
verdict.
"""

from typing import Annotated, Literal

from pydantic import Field

from ngc_common.strict_model import Strict

Status = Literal["PASS", "FAIL", "NOT RUN", "NOT PROVEN", "N/A"]
Text = Annotated[str, Field(max_length=20_000)]
Short = Annotated[str, Field(max_length=300)]



class Attempt(Strict):
    """One start of a job that gave no verdict (it was requeued, or it was the last)."""

    job: Short  # "slurm job 57", "local pid 812", "ssh gpu01 pid 77"
    state: Short  # Slurm's words: FAILED (JobLaunchFailure, exit 0:9)
    detail: Text
    node: Short = ""


class Cell(Strict):
    key: Annotated[str, Field(max_length=200, pattern=r"^[A-Za-z0-9:]*$")]
    status: Status
    detail: Text
    profile: Short  # the fleet file's profile name
    hardware: Short  # the gates.yaml profile it proves
    runner: Literal["local", "slurm", "ssh", "-"]  # "-": never submitted (no place, nothing to run)
    job: Short | None = None  # the job whose result this is
    node: Short | None = None
    facts: dict[Short, Short] = Field(default_factory=dict)
    validation: Status | None = None
    bench: dict[Short, Status] = Field(default_factory=dict)
    ab: Status | None = None  # the A/B against the reference on the same node (None: no reference, see detail)
    # A multi-task Slurm job: its node list, its tasks and ranks per benchmark, each benchmark's scaling efficiency
    # (None for a job of one task, so that its cell reads as before)
    nodes: list[Short] | None = None
    tasks: list[Short] | None = None
    scaling: dict[Short, float] | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    # N/A because the flavor has no image for the profile's platform: shown in the table, not part of the flavor's
    # verdict (the flavor claims no such platform, as a profile that does not apply to it); None: any other cell, so
    # that it reads as before
    off_platform: bool | None = None
    folder: Short | None = None  # the job's folder, relative to the repository root
    seconds: Annotated[float, Field(ge=0)] | None = None  # submitted to done
    finished: Short

    @property
    def passed(self) -> bool:
        return self.status == "PASS"
