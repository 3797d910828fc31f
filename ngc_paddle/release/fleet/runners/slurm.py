"""Runner `slurm`: one sbatch per profile (a job array over the flavors that share it), watched with squeue and
scontrol, requeued with scontrol requeue, stopped with scancel.

Why: the scheduler the site already runs places the jobs on nodes of the profile's partition and gres; results
come back through a folder that this host and the nodes share (the fleet's `shared_dir`, else the release's
build folder, which must then be on a shared filesystem): docs/fleets.md says why not through the job's output.
"""

import shutil
import time
from pathlib import Path

from ngc_paddle.release.fleet import payload
from ngc_paddle.release.fleet.fleet_schema import SlurmPlace
from ngc_paddle.release.fleet.runners.interface import JobState, Placed, Runner
from ngc_paddle.release.fleet.runners.slurm_commands import Slurm

STOP_WAIT_S = 90  # scancel, then Slurm's KillWait, then the job's trap removing its container
POLL_S = 1.0


class SlurmRunner(Runner):
    kind = "slurm"

    def __init__(self, profile: str, place: SlurmPlace, slurm: Slurm | None = None, root: Path | None = None) -> None:
        super().__init__(profile)
        self.place = place
        self.slurm = slurm or Slurm()
        self.root = root  # the folder `shared_dir` stands for (the release's build folder); set by the fan-out

    def node_folder(self, local: Path) -> Path:
        if self.place.shared_dir is None:
            return local
        base = self.root or local.anchor
        return Path(self.place.shared_dir) / local.relative_to(base)

    def probe(self) -> str | None:
        return self.slurm.probe(self.place)

    def submit(self, jobs: list[Placed]) -> list[str]:
        for job in jobs:
            self._stage(job)
        if len(jobs) == 1:
            folder = jobs[0].spec.folder
            script = payload.write([jobs[0].spec], jobs[0].local / "job.sh")
            if script.parent != folder:
                shutil.copy2(script, folder / "job.sh")
            job_id = self.slurm.submit(folder / "job.sh", self.place, _name(jobs), folder)
            return [job_id]
        # A job array: task i is jobs[i]; its script sits beside their folders, its output in the first one's.
        script = payload.write([j.spec for j in jobs], jobs[0].local.parent / f"array-{self.profile}.sh")
        node_script = jobs[0].spec.folder.parent / script.name
        if node_script != script:
            shutil.copy2(script, node_script)
        array = self.slurm.submit(node_script, self.place, _name(jobs), jobs[0].spec.folder, tasks=len(jobs))
        return [f"{array}_{i}" for i in range(len(jobs))]

    def _stage(self, job: Placed) -> None:
        """Copy the job's inputs (baselines) into its folder on the shared filesystem, where that is elsewhere."""
        if job.spec.folder == job.local:
            return
        job.spec.folder.mkdir(parents=True, exist_ok=True)
        if (job.local / "inputs").is_dir():
            shutil.copytree(job.local / "inputs", job.spec.folder / "inputs", dirs_exist_ok=True)

    def states(self, handles: list[str]) -> dict[str, JobState]:
        return self.slurm.states(handles)

    def requeue(self, handle: str, job: Placed) -> str:
        if self.slurm.requeue(handle):
            return handle
        return self.submit([job])[0]  # a job Slurm will not requeue (purged, --no-requeue): submitted again

    def cancel(self, handles: list[str]) -> None:
        if not handles:
            return
        self.slurm.cancel(handles)
        deadline = time.monotonic() + STOP_WAIT_S
        while time.monotonic() < deadline:
            states = self.slurm.states(handles)
            if all(s.finished for s in states.values()):
                return
            time.sleep(POLL_S)

    def fetch(self, handle: str, job: Placed) -> None:
        if job.spec.folder != job.local and job.spec.folder.is_dir():
            shutil.copytree(job.spec.folder, job.local, dirs_exist_ok=True)
            shutil.rmtree(job.spec.folder, ignore_errors=True)

    def describe(self, handle: str) -> str:
        return f"slurm job {handle}"


def _name(jobs: list[Placed]) -> str:
    first = jobs[0].spec
    return f"ngc-gates-{first.flavor if len(jobs) == 1 else 'flavors'}-{first.profile}"[:100]
