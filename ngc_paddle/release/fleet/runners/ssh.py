"""Runner `ssh`: the job script on hosts with a container runtime, over plain OpenSSH.

Why: a lab machine or a few GPU servers without a scheduler are still the hardware a profile needs. Keys come
from the user's ssh-agent (SSH_AUTH_SOCK) or their own ssh configuration; nothing here reads, writes or passes a
key. Host keys are checked (StrictHostKeyChecking=yes, the user's known_hosts or the fleet's `known_hosts:`),
BatchMode=yes makes a missing key or an unknown host one error line instead of a prompt. The job's folder is
uploaded (its script and inputs) and brought back with tar over the same connection; the job runs in a session
of its own (setsid), so that a cancel reaches its whole process group and the trap removes its container. A profile
of several nodes runs each job on all its hosts at once, one node each (runners/ssh_nodes.py, docs/fleets.md).
"""

import hashlib
import io
import shlex
import subprocess
import tarfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.fleet import payload
from ngc_paddle.release.fleet.fleet_schema import SshPlace
from ngc_paddle.release.fleet.runners import ssh_nodes as nodes
from ngc_paddle.release.fleet.runners.interface import JobState, Placed, Runner, SubmitFailed, state_of_exit

SSH_FAILED = 255
STOP_WAIT_S = 60
# After one node of a job ended well, how long the others may still run: they share every benchmark with it, so at
# most a rendezvous that never completes (the launch's RENDEZVOUS_S, 300 s) and the end of their scripts remain; a
# peer that died in an all-reduce is not seen by the launcher of another node, so this bounds it.
NODE_END_GRACE_S = 420.0
MAX_RESULTS_BYTES = 512 * 1024 * 1024


@dataclass
class Started:
    """One job on its hosts: a process (the ssh session running the job script) per node, rank order."""

    job: Placed
    hosts: list[str]
    procs: list[subprocess.Popen]
    failed: tuple[int, JobState] | None = None  # the first node that ended badly while others ran (they were stopped)
    first_end: float | None = None  # when the first node ended well while others still ran


class SshRunner(Runner):
    kind = "ssh"

    def __init__(self, profile: str, place: SshPlace, run_id: str, run=subprocess.run, popen=subprocess.Popen) -> None:
        super().__init__(profile)
        self.place = place
        self.run_id = run_id
        self.run = run
        self.popen = popen
        self.usable = list(place.hosts)
        self.jobs: dict[str, Started] = {}
        self.clock = time.monotonic

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
        if self.place.nodes > 1 and problems:  # a job of several nodes needs every host it lists
            return f"a job of {self.place.nodes} nodes runs on every host of the profile: " + "; ".join(problems)
        return None

    def submit(self, jobs: list[Placed]) -> list[str]:
        handles = []
        for i, job in enumerate(jobs):
            hosts = [self.usable[i % len(self.usable)]] if self.place.nodes == 1 else list(self.place.hosts)
            self._copy(hosts, job)
            handles.append(self._start(hosts, job))
        return handles

    def _copy(self, hosts: list[str], job: Placed) -> None:
        """Each node's script and the job's inputs into its folder on its host (again for a requeue: fetching the
        attempt before removed the folder there)."""
        for rank, host in enumerate(hosts):
            node_spec = replace(job.spec, folder=nodes.folder(job.spec.folder, rank))
            script = payload.write([node_spec], job.local / nodes.script_name(rank))
            folder = shlex.quote(str(node_spec.folder))
            proc = self.run(self.ssh(host, f"mkdir -p {folder} && tar -xf - -C {folder}"),
                            input=_inputs(job.local, script), capture_output=True, timeout=300, check=False)
            if proc.returncode != 0:
                raise SubmitFailed(f"cannot copy the job to {host}: {_last_line(proc.stderr.decode(errors='replace'))}")

    def _start(self, hosts: list[str], job: Placed) -> str:
        env = [f"NGC_ATTEMPT={job.attempt}"]
        if len(hosts) > 1:
            env += self._launch_env(hosts, job)
        procs = []
        for rank, host in enumerate(hosts):
            folder = shlex.quote(str(nodes.folder(job.spec.folder, rank)))
            rank_env = [f"NGC_NODE_RANK={rank}"] if len(hosts) > 1 else []
            command = f"cd {folder} && {' '.join([*env, *rank_env])} exec setsid -w bash job.sh"
            with (job.local / nodes.log_name(job.attempt, rank)).open("ab") as log:
                procs.append(self.popen(self.ssh(host, command), stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True))
        handle = f"{hosts[0]} pid {procs[0].pid}" + (f" (+{len(hosts) - 1} node(s))" if len(hosts) > 1 else "")
        self.jobs[handle] = Started(job, hosts, procs)
        return handle

    def _launch_env(self, hosts: list[str], job: Placed) -> list[str]:
        """What every node of the job is told: the master (the first host, as the others reach it, at a port its
        job script finds free there, as on Slurm) and the hosts."""
        seed = nodes.port_seed(job.spec.folder, job.attempt)
        folder = shlex.quote(str(job.spec.folder))
        proc = self.run(self.ssh(hosts[0], f"cd {folder} && NGC_PORT_SEED={seed} bash job.sh --master-port"),
                        capture_output=True, text=True, timeout=60, check=False)
        port = proc.stdout.strip()
        if proc.returncode != 0 or not port.isdigit():
            why = _last_line(proc.stderr) if proc.returncode == SSH_FAILED else "no free port for the master"
            raise SubmitFailed(f"cannot start the job of {len(hosts)} nodes on {hosts[0]}: {why}")
        master = f"{self.place.master_addr or nodes.host_name(hosts[0])}:{port}"
        names = ",".join(nodes.host_name(h) for h in hosts)
        return [f"NGC_SSH_MASTER={shlex.quote(master)}", f"NGC_SSH_NODES={shlex.quote(names)}"]

    def states(self, handles: list[str]) -> dict[str, JobState]:
        found = {}
        for handle in handles:
            if handle in self.jobs:
                found[handle] = self._state(handle, self.jobs[handle])
        return found

    def _state(self, handle: str, started: Started) -> JobState:
        """The job's state: RUNNING while every node runs; a node that ends badly stops the others at once (its
        line names its host); COMPLETED when all ended well."""
        codes = [proc.poll() for proc in started.procs]
        if started.failed is None:
            for rank, code in enumerate(codes):
                if code not in (None, 0):
                    started.failed = (rank, self._node_state(handle, started, rank, code))
                    if None in codes:
                        self._stop([started])
                        codes = [proc.poll() for proc in started.procs]
                    break
        if None in codes and started.failed is None and 0 in codes:
            self._outlived(handle, started, codes)
            codes = [proc.poll() for proc in started.procs]
        if None in codes:
            return JobState(handle, "RUNNING", ",".join(nodes.host_name(h) for h in started.hosts))
        if started.failed is not None:
            return started.failed[1]
        return JobState(handle, "COMPLETED", started.hosts[0], exit_code="0")

    def _outlived(self, handle: str, started: Started, codes: list[int | None]) -> None:
        """Nodes still running NODE_END_GRACE_S after another ended well are stopped, the first named."""
        now = self.clock()
        started.first_end = started.first_end if started.first_end is not None else now
        if now - started.first_end < NODE_END_GRACE_S:
            return
        rank, done = codes.index(None), codes.index(0)
        host = started.hosts[rank]
        started.failed = (rank, JobState(handle, "FAILED", host, f"node {rank} ({host}) still ran "
                                         f"{NODE_END_GRACE_S:.0f} s after node {done} ({started.hosts[done]}) ended "
                                         "(a peer lost in a collective); stopped", ""))
        self._stop([started])

    def _node_state(self, handle: str, started: Started, rank: int, code: int) -> JobState:
        host, job = started.hosts[rank], started.job
        where = f"node {rank} ({host}): " if len(started.hosts) > 1 else ""
        if code == SSH_FAILED:
            log = (job.local / nodes.log_name(job.attempt, rank)).read_text(errors="replace")
            return JobState(handle, "FAILED", host, f"{where}ssh to {host} failed: {_last_line(log)}", str(code))
        state = state_of_exit(handle, host, code)
        state.reason = where + state.reason
        return state

    def requeue(self, handle: str, job: Placed) -> str:
        started = self.jobs.pop(handle)
        try:
            self._copy(started.hosts, job)
            return self._start(started.hosts, job)
        except SubmitFailed as exc:  # no copy or no master port this time: the attempt ends FAILED with the line
            handle = f"{started.hosts[0]} not started (attempt {job.attempt})"
            self.jobs[handle] = Started(job, started.hosts, [], (0, JobState(handle, "FAILED", started.hosts[0],
                                                                                str(exc))))
            return handle

    def cancel(self, handles: list[str]) -> None:
        self._stop([self.jobs[h] for h in handles if h in self.jobs])

    def _stop(self, jobs: list[Started]) -> None:
        """SIGTERM to the process group of every node's job script still running (its trap removes the container),
        then wait for them all (a session that does not end in STOP_WAIT_S is killed here)."""
        running = [(started, rank, proc) for started in jobs for rank, proc in enumerate(started.procs)
                   if proc.poll() is None]
        for started, rank, _proc in running:
            folder = nodes.folder(started.job.spec.folder, rank)
            pid_file = shlex.quote(f"{folder}/attempt-{started.job.attempt}/pid")
            self.run(self.ssh(started.hosts[rank], f'kill -TERM -- -"$(cat {pid_file})"'), capture_output=True,
                     timeout=60, check=False)
        deadline = time.monotonic() + STOP_WAIT_S
        for _started, _rank, proc in running:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def fetch(self, handle: str, job: Placed) -> None:
        hosts = self.jobs[handle].hosts
        for rank, host in enumerate(hosts):
            folder = nodes.folder(job.spec.folder, rank)
            into = job.local if rank == 0 else job.local / nodes.NODES_DIR / str(rank)
            proc = self.run(self.ssh(host, f"tar -C {shlex.quote(str(folder))} -cf - ."), capture_output=True,
                            timeout=600, check=False)
            if proc.returncode != 0 or len(proc.stdout) > MAX_RESULTS_BYTES:
                if rank > 0:  # its tasks' lines are then missing: the benchmark is NOT PROVEN, not lost in silence
                    continue
                raise NgcPaddleError(f"cannot bring the results of {job.spec.cell} back from {host}:{folder}: "
                                     f"{_last_line(proc.stderr.decode(errors='replace'))}; fix: copy the folder by "
                                     f"hand into {into}")
            into.mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as archive:
                archive.extractall(into, filter="data")  # no links out of the folder, no absolute paths
            self.run(self.ssh(host, f"rm -rf {shlex.quote(str(folder))}"), capture_output=True, timeout=120,
                     check=False)
        if len(hosts) > 1:
            nodes.merge_nodes(job.local, job.attempt, len(hosts))

    def describe(self, handle: str) -> str:
        return f"ssh {handle}"


def _inputs(folder: Path, script: Path) -> bytes:
    """The job's script (as job.sh) and inputs as a tar archive to unpack in its folder on the host."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(script, arcname="job.sh")
        if (folder / "inputs").is_dir():
            archive.add(folder / "inputs", arcname="inputs")
    return buffer.getvalue()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:240] if lines else "no output"
