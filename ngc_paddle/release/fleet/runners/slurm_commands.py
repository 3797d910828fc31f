"""Slurm through its own commands: sinfo (is there a node for this profile?), sbatch --parsable, squeue, scontrol
show job / sacct (a job's state, node, reason, exit code, restarts), scontrol requeue and scancel.

Why: every site's Slurm answers these commands with the user's own credentials and configuration (munge,
SLURM_CONF, the cluster's name), whatever plugins it runs; no client library or daemon of ours is needed on
the login node. Outputs are read with explicit `-o`/`-P` formats, never as tables meant for people.
`scontrol show job` knows a job until MinJobAge after its end; after that `sacct` (a site with slurmdbd).
It lives beside the Slurm runner, below the runners' package: it reads job states in the runners' words (interface.py),
and a module outside runners/ importing interface.py would run runners/__init__.py, which leads back to it.
"""

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.fleet.fleet_schema import GRES_RE, SlurmPlace
from ngc_paddle.release.fleet.runners.interface import JobState, NoPlace, SubmitFailed

# Node states (sinfo %t, without its flag characters) in which a node can take a job.
USABLE_NODE_STATES = frozenset({"idle", "mix", "mixed", "alloc", "allocated", "comp", "completing", "resv", "plnd",
                                "planned"})
# Pending reasons that mean the job can never start where it was sent: the profile has no place to run.
HOPELESS = ("PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints", "PartitionDown",
            "InvalidAccount", "InvalidQOS", "QOSMaxGRESPerJob", "ReqNodeNotAvail")
NO_NODE_MESSAGES = ("Requested node configuration is not available", "Invalid generic resource",
                    "Requested partition configuration not available")
FORGOTTEN = "Invalid job id specified"  # Slurm's answer about a job its controller no longer holds
Run = Callable[..., subprocess.CompletedProcess[str]]


class SlurmError(NgcPaddleError):
    """A Slurm command failed in a way that is not about one job (no controller, no client)."""


def _default_run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise SlurmError(f"{args[0]} not found: this host has no Slurm client; fix: run from a login node of the "
                         "cluster (or install slurm-client with the cluster's slurm.conf and munge key)") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{args[0]} did not answer within {timeout:.0f} s; fix: check the cluster's controller "
                         "(scontrol ping)") from None


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
    return (lines[-1] if lines else f"exit {proc.returncode}").removeprefix("sbatch: error: ")[:240]


class Slurm:
    """One cluster, as the Slurm client on this host reaches it."""

    def __init__(self, run: Run = _default_run) -> None:
        self.run = run

    def probe(self, place: SlurmPlace) -> str | None:
        """Why `place` has no node that can run a job (NOT PROVEN), or None when it has one."""
        proc = self.run("sinfo", "-h", "-p", place.partition, "-o", "%D|%t|%G|%E")
        if proc.returncode != 0:
            if "invalid partition" in (proc.stderr + proc.stdout).lower():
                return f"partition {place.partition!r} does not exist on this cluster (sinfo)"
            raise SlurmError(f"sinfo failed: {_last_line(proc)}; fix: check that this host reaches the cluster's "
                             "controller (scontrol ping)")
        rows = [line.split("|", 3) for line in proc.stdout.splitlines() if line.strip()]
        rows = [r for r in rows if len(r) == 4 and r[0].isdigit() and int(r[0]) > 0]
        if not rows:
            return f"partition {place.partition!r} has no nodes (sinfo)"
        if place.gres:
            wanted = place.gpus
            wanted_type = GRES_RE.fullmatch(place.gres).group(1)  # type: ignore[union-attr]
            offered = [r for r in rows if _gpus_offered(r[2], wanted_type) >= wanted]
            if not offered:
                shown = ", ".join(sorted({r[2] for r in rows})) or "none"
                return f"no node of partition {place.partition!r} has gres {place.gres} (its nodes offer: {shown})"
            rows = offered
        usable = [r for r in rows if r[1].rstrip("*~#!%$@^-+").lower() in USABLE_NODE_STATES]
        if not usable:
            states = "; ".join(f"{r[0]} {r[1]}" + (f" ({r[3]})" if r[3] not in ("", "none") else "") for r in rows)
            return f"no node of partition {place.partition!r} can take a job now: {states} (sinfo)"
        return None

    def submit(self, script: Path, place: SlurmPlace, name: str, folder: Path, tasks: int = 1) -> str:
        """sbatch the script (a job array of `tasks` when more than one); the job id. The job's output goes to
        FOLDER/slurm-%j.out (%A_%a for an array), appended across a requeue."""
        array = tasks > 1
        args = ["sbatch", "--parsable", f"--job-name={name}", f"--partition={place.partition}",
                f"--nodes={place.nodes}", f"--ntasks-per-node={place.tasks_per_node}", f"--time={place.time}",
                "--requeue", "--open-mode=append", "--export=ALL",
                f"--chdir={folder}", f"--output={folder}/slurm-{'%A_%a' if array else '%j'}.out"]
        args += [f"--account={place.account}"] if place.account else []
        args += [f"--qos={place.qos}"] if place.qos else []
        args += [f"--constraint={place.constraint}"] if place.constraint else []
        args += [f"--gres={place.gres}"] if place.gres else []
        args += [f"--cpus-per-task={place.cpus_per_task}"] if place.cpus_per_task else []
        args += [f"--mem={place.mem}"] if place.mem else []
        args += [f"--array=0-{tasks - 1}"] if array else []
        proc = self.run(*args, str(script))
        if proc.returncode != 0:
            message = _last_line(proc)
            if any(m.lower() in message.lower() for m in NO_NODE_MESSAGES):
                raise NoPlace(f"Slurm refused the job: {message} (partition {place.partition!r}"
                              + (f", gres {place.gres}" if place.gres else "") + ")")
            raise SubmitFailed(f"sbatch refused the job: {message}")
        job = proc.stdout.strip().split(";")[0]
        if not re.fullmatch(r"[0-9]+", job):
            raise SubmitFailed(f"sbatch --parsable printed {proc.stdout.strip()[:80]!r}, not a job id")
        return job

    def states(self, jobs: list[str]) -> dict[str, JobState]:
        """The state of each job or array task (by its id as given); one squeue for all, then scontrol (or sacct)
        for the details of each that ended or is unknown to squeue."""
        if not jobs:
            return {}
        masters = sorted({job.split("_")[0] for job in jobs})
        proc = self.run("squeue", "-h", "-r", "-t", "all", "-j", ",".join(masters), "-o", "%i|%T|%N|%r|%S|%e")
        # squeue asked for one job the controller forgot (past MinJobAge) exits 1: scontrol, then sacct, know it
        if proc.returncode != 0 and FORGOTTEN not in proc.stderr + proc.stdout:
            raise SlurmError(f"squeue failed: {_last_line(proc)}; fix: check that this host reaches the cluster's "
                             "controller (scontrol ping)")
        found: dict[str, JobState] = {}
        for line in proc.stdout.splitlines() if proc.returncode == 0 else ():
            parts = line.strip().split("|")
            if len(parts) == 6 and parts[0] in jobs:
                found[parts[0]] = JobState(parts[0], parts[1].rstrip("+"), parts[2], parts[3], start=parts[4],
                                           end=parts[5])
        for job in jobs:
            state = found.get(job)
            if state is None or state.finished:
                detailed = self.show(job)
                if detailed is not None:
                    found[job] = detailed
        return found

    def show(self, job: str) -> JobState | None:
        """`scontrol show job -o JOB`, else `sacct` (a job the controller forgot); None when neither knows it."""
        proc = self.run("scontrol", "show", "job", "-o", job)
        if proc.returncode == 0 and "JobState=" in proc.stdout:
            line = proc.stdout.strip().splitlines()[0]
            fields = dict(re.findall(r"(\w+(?:/\w+)?)=(\S*)", line))
            task = fields.get("ArrayTaskId")
            job_id = f"{fields.get('ArrayJobId')}_{task}" if task and task.isdigit() else fields.get("JobId", job)
            return JobState(job_id, fields.get("JobState", "").rstrip("+"), fields.get("NodeList", "").replace(
                "(null)", ""), fields.get("Reason", ""), fields.get("ExitCode", ""),
                int(fields.get("Restarts", "0") or 0), fields.get("StartTime", ""), fields.get("EndTime", ""))
        proc = self.run("sacct", "-n", "-P", "-X", "-j", job, "--format=JobID,State,ExitCode,NodeList,Start,End,Reason")
        if proc.returncode == 0:
            for line in proc.stdout.splitlines():
                parts = line.split("|")
                if len(parts) == 7 and parts[0] == job:
                    state = parts[1].split()[0].rstrip("+")  # "CANCELLED by 0"
                    return JobState(job, state, parts[3], parts[6], parts[2], start=parts[4], end=parts[5])
        return None

    def requeue(self, job: str) -> bool:
        """Put a finished job back in the queue under its id (Slurm counts it in Restarts); False when refused."""
        return self.run("scontrol", "requeue", job).returncode == 0

    def cancel(self, jobs: list[str]) -> None:
        if jobs:
            self.run("scancel", *jobs)


def _gpus_offered(gres: str, wanted_type: str | None) -> int:
    """The GPUs a node's gres string offers (sinfo %G: `gpu:2`, `gpu:a100:8(S:0-1)`, `gpu:a100:4,gpu:v100:2`)."""
    total = 0
    for item in gres.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] != "gpu" or len(parts) < 2:
            continue
        kind, count = (parts[1], parts[2]) if len(parts) >= 3 else (None, parts[1])
        if count.isdigit() and (wanted_type is None or kind == wanted_type):
            total += int(count)
    return total
