"""Runner `local`: the job script on this host, as a process of its own session (what runs without a fleet file).

Why: the same job a Slurm node runs, started here, is both the default (a host that has the hardware) and the
reference the fan-out's overhead is measured against (perf/fleet/bench_fanout.py).
"""

import contextlib
import os
import signal
import socket
import subprocess
import time

from ngc_paddle.release.fleet import payload
from ngc_paddle.release.fleet.runners.interface import JobState, Placed, Runner, state_of_exit

STOP_WAIT_S = 60  # the job's trap removes its container (docker rm -f), then exits


class LocalRunner(Runner):
    kind = "local"

    def __init__(self, profile: str) -> None:
        super().__init__(profile)
        self.procs: dict[str, subprocess.Popen] = {}
        self.node = socket.gethostname().split(".")[0]

    def submit(self, jobs: list[Placed]) -> list[str]:
        return [self._start(job) for job in jobs]

    def _start(self, job: Placed) -> str:
        script = payload.write([job.spec], job.local / "job.sh")
        log = (job.local / f"job-{job.attempt}.out").open("ab")
        env = {**os.environ, "NGC_ATTEMPT": str(job.attempt)}
        proc = subprocess.Popen(["bash", str(script)], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=job.local, start_new_session=True, env=env)
        log.close()
        handle = f"pid {proc.pid}"
        self.procs[handle] = proc
        return handle

    def states(self, handles: list[str]) -> dict[str, JobState]:
        found = {}
        for handle in handles:
            proc = self.procs.get(handle)
            if proc is None:
                continue
            code = proc.poll()
            found[handle] = JobState(handle, "RUNNING", self.node) if code is None else state_of_exit(handle, self.node,
                                                                                                     code)
        return found

    def requeue(self, handle: str, job: Placed) -> str:
        self.procs.pop(handle, None)
        return self._start(job)

    def cancel(self, handles: list[str]) -> None:
        procs = [self.procs[h] for h in handles if h in self.procs and self.procs[h].poll() is None]
        for proc in procs:
            _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT_S
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()

    def describe(self, handle: str) -> str:
        return f"local {handle}"


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)  # the job's session: its script and the docker client it waits on
