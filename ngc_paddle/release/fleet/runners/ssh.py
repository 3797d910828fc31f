"""Runner `ssh`: the job script on hosts with a container runtime, over plain OpenSSH.

Why: a lab machine or a few GPU servers without a scheduler are still the hardware a profile needs. Keys come
from the user's ssh-agent (SSH_AUTH_SOCK) or their own ssh configuration; nothing here reads, writes or passes a
key. Host keys are checked (StrictHostKeyChecking=yes, the user's known_hosts or the fleet's `known_hosts:`),
BatchMode=yes makes a missing key or an unknown host one error line instead of a prompt. The job's folder is
uploaded (its script and inputs) and brought back with tar over the same connection; the job runs in a session
of its own (setsid), so that a cancel reaches its whole process group and the trap removes its container.
"""

import hashlib
import io
import shlex
import subprocess
import tarfile
import time
from pathlib import Path

from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.fleet import payload
from ngc_paddle.release.fleet.fleet_schema import SshPlace
from ngc_paddle.release.fleet.runners.interface import JobState, Placed, Runner, SubmitFailed, state_of_exit

SSH_FAILED = 255
STOP_WAIT_S = 60
MAX_RESULTS_BYTES = 512 * 1024 * 1024


class SshRunner(Runner):
    kind = "ssh"

    def __init__(self, profile: str, place: SshPlace, run_id: str, run=subprocess.run, popen=subprocess.Popen) -> None:
        super().__init__(profile)
        self.place = place
        self.run_id = run_id
        self.run = run
        self.popen = popen
        self.usable = list(place.hosts)
        self.jobs: dict[str, tuple[subprocess.Popen, str, Placed]] = {}

    def ssh(self, host: str, command: str) -> list[str]:
        """The ssh command line that runs `command` (one shell string) on `host` ([USER@]HOST[:PORT])."""
        target, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
        args = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=15",
                "-o", "ServerAliveInterval=30", "-o", "ServerAliveCountMax=4"]
        if self.place.known_hosts:
            args += ["-o", f"UserKnownHostsFile={self.place.known_hosts}"]
        if port:
            args += ["-p", port]
        return [*args, target, command]

    def node_folder(self, local: Path) -> Path:
        tag = hashlib.sha256(str(local).encode()).hexdigest()[:12]
        return Path(self.place.work_dir) / f"{self.run_id}-{tag}"

    def _engine(self) -> str:
        return f"DOCKER_HOST={shlex.quote(self.place.docker_host)} " if self.place.docker_host else ""

    def probe(self) -> str | None:
        check = (f"{self._engine()}docker version -f '{{{{.Server.Version}}}}'" if self.place.container == "docker"
                 else "apptainer --version")
        problems, self.usable = [], []
        for host in self.place.hosts:
            proc = self.run(self.ssh(host, check), capture_output=True, text=True, timeout=60, check=False)
            if proc.returncode == 0:
                self.usable.append(host)
            else:
                why = _last_line(proc.stderr)
                why = why if proc.returncode == SSH_FAILED else f"{self.place.container} does not answer ({why})"
                problems.append(f"{host}: {why}")
        if not self.usable:
            return "no host of the profile can run a job: " + "; ".join(problems)
        return None

    def submit(self, jobs: list[Placed]) -> list[str]:
        handles = []
        for i, job in enumerate(jobs):
            host = self.usable[i % len(self.usable)]
            payload.write([job.spec], job.local / "job.sh")
            folder = shlex.quote(str(job.spec.folder))
            proc = self.run(self.ssh(host, f"mkdir -p {folder} && tar -xf - -C {folder}"), input=_inputs(job.local),
                            capture_output=True, timeout=300, check=False)
            if proc.returncode != 0:
                raise SubmitFailed(f"cannot copy the job to {host}: {_last_line(proc.stderr.decode(errors='replace'))}")
            handles.append(self._start(host, job))
        return handles

    def _start(self, host: str, job: Placed) -> str:
        folder = shlex.quote(str(job.spec.folder))
        command = f"cd {folder} && NGC_ATTEMPT={job.attempt} exec setsid -w bash job.sh"
        with (job.local / f"job-{job.attempt}.out").open("ab") as log:
            proc = self.popen(self.ssh(host, command), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              start_new_session=True)
        handle = f"{host} pid {proc.pid}"
        self.jobs[handle] = (proc, host, job)
        return handle

    def states(self, handles: list[str]) -> dict[str, JobState]:
        found = {}
        for handle in handles:
            if handle not in self.jobs:
                continue
            proc, host, job = self.jobs[handle]
            code = proc.poll()
            if code is None:
                found[handle] = JobState(handle, "RUNNING", host.split("@")[-1].split(":")[0])
            elif code == SSH_FAILED:
                log = (job.local / f"job-{job.attempt}.out").read_text(errors="replace")
                found[handle] = JobState(handle, "FAILED", host, f"ssh to {host} failed: {_last_line(log)}", str(code))
            else:
                found[handle] = state_of_exit(handle, host, code)
        return found

    def requeue(self, handle: str, job: Placed) -> str:
        _, host, _ = self.jobs.pop(handle)
        return self._start(host, job)

    def cancel(self, handles: list[str]) -> None:
        running = [(h, *self.jobs[h]) for h in handles if h in self.jobs and self.jobs[h][0].poll() is None]
        for _handle, _proc, host, job in running:
            pid_file = shlex.quote(f"{job.spec.folder}/attempt-{job.attempt}/pid")
            self.run(self.ssh(host, f'kill -TERM -- -"$(cat {pid_file})"'), capture_output=True, timeout=60,
                     check=False)
        deadline = time.monotonic() + STOP_WAIT_S
        for _handle, proc, _host, _job in running:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def fetch(self, handle: str, job: Placed) -> None:
        host = self.jobs[handle][1]
        folder = shlex.quote(str(job.spec.folder))
        proc = self.run(self.ssh(host, f"tar -C {folder} -cf - ."), capture_output=True, timeout=600, check=False)
        if proc.returncode != 0 or len(proc.stdout) > MAX_RESULTS_BYTES:
            raise NgcPaddleError(f"cannot bring the results of {job.spec.cell} back from {host}:{job.spec.folder}: "
                                 f"{_last_line(proc.stderr.decode(errors='replace'))}; fix: copy the folder by hand "
                                 f"into {job.local}")
        with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as archive:
            archive.extractall(job.local, filter="data")  # no links out of the folder, no absolute paths
        self.run(self.ssh(host, f"rm -rf {folder}"), capture_output=True, timeout=120, check=False)

    def describe(self, handle: str) -> str:
        return f"ssh {handle}"


def _inputs(folder: Path) -> bytes:
    """The job's script and inputs as a tar archive to unpack in its folder on the host."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(folder / "job.sh", arcname="job.sh")
        if (folder / "inputs").is_dir():
            archive.add(folder / "inputs", arcname="inputs")
    return buffer.getvalue()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:240] if lines else "no output"
