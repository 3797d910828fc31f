"""The job script every runner runs: one flavor's gates on one hardware profile (or, as a Slurm job array, on
several flavors that share the profile), written from payload.sh, the container runtime's functions and the
job's variables.

Why: the same script runs on a Slurm node, an SSH host and this host, so a verdict from the cluster and one
from here come from the same steps; only how the script is started differs (runners/). Every value that reaches
the script is quoted here (shlex) and was checked by the fleet schema before.
"""

import shlex
from dataclasses import dataclass
from pathlib import Path

from ngc_paddle.platforms import DEFAULT_PLATFORM, platform_named
from ngc_paddle.release.fleet import containers

BODY = Path(__file__).with_name("payload.sh")


@dataclass(frozen=True)
class JobSpec:
    """One flavor x profile job: what runs, by which digest, with which options, where its folder is."""

    flavor: str
    profile: str  # the fleet file's profile name
    hardware: str  # the gates.yaml profile it proves (cpu, A100-80GB, ...)
    image: str  # REGISTRY/REPO@sha256:HEX: never a tag, which could move while the job waits
    folder: Path  # the job's folder as the node sees it (the runner brings it back here)
    validate_args: tuple[str, ...] = ()
    benches: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (command, its options), in order
    gpus: int = 0
    runtime: str = "docker"
    allow_http: bool = False
    docker_host: str | None = None
    gres: str | None = None
    nodes: int = 1  # Slurm: the job's nodes and tasks on each; more than one task runs each benchmark data-parallel
    tasks_per_node: int = 1
    platform: str = DEFAULT_PLATFORM  # the nodes' platform: the job refuses a node of another machine (uname -m)
    validate: bool = True  # run the validation suite (an A/B alone, bench-compare's, runs only its rounds)
    pull: bool = True  # pull the image even when the node has it (False: bench-compare of images built here)
    # The A/B part (ngc_paddle.release.ab): the reference image (by digest on a fleet) run interleaved with the
    # candidate in `ab_rounds` rounds (after `ab_warmup` discarded ones) of `ab_benches`, each round also timing the
    # validation suite with `ab_validate_args` when that is not None; `candidate_env` (KEY=VALUE) reaches only the
    # candidate's containers in the rounds (perf/bench_ab_power.py's planted slowdown; docker only).
    reference: str | None = None
    ab_rounds: int = 0
    ab_warmup: int = 1
    ab_benches: tuple[tuple[str, tuple[str, ...]], ...] = ()
    ab_validate_args: tuple[str, ...] | None = None
    candidate_env: tuple[str, ...] = ()

    @property
    def tasks(self) -> int:
        return self.nodes * self.tasks_per_node

    @property
    def cell(self) -> str:
        return f"{self.flavor}@{self.profile}"


def _array(name: str, values: tuple[str, ...] | list[str]) -> str:
    return f"{name}=({' '.join(shlex.quote(v) for v in values)})"


def _shared(job: JobSpec) -> tuple:
    return (job.profile, job.validate_args, job.benches, job.gpus, job.platform, job.runtime, job.allow_http,
            job.docker_host, job.gres, job.nodes, job.tasks_per_node, job.validate, job.pull,
            job.ab_rounds, job.ab_warmup, job.ab_benches, job.ab_validate_args,
            job.candidate_env)


def render(jobs: list[JobSpec]) -> str:
    """The script of one job, or of a job array whose task i runs jobs[i] (they share profile and options)."""
    first = jobs[0]
    if any(_shared(j) != _shared(first) for j in jobs):
        raise ValueError("the jobs of one script must share their profile and options")
    if first.candidate_env and first.runtime != "docker":
        raise ValueError("candidate_env reaches the candidate's containers through docker run -e only")
    lines = ["#!/bin/bash",
             f"# ngc-paddle gate job: {', '.join(j.cell for j in jobs)} (written by ngc_paddle.release.fleet.payload)",
             f"NGC_PROFILE={shlex.quote(first.hardware)}",
             f"NGC_GPUS={first.gpus}",
             # The platform as docker names it, its architecture as an OCI index (enroot, apptainer) and uname -m do
             f"NGC_PLATFORM={shlex.quote(first.platform)}",
             f"NGC_ARCH={shlex.quote(first.platform.partition('/')[2])}",
             f"NGC_MACHINE={shlex.quote(platform_named(first.platform).machine)}",
             f"NGC_GRES={shlex.quote(first.gres or '')}",
             f"NGC_NODES={first.nodes}",
             f"NGC_TASKS_PER_NODE={first.tasks_per_node}",
             f"NGC_ALLOW_HTTP={int(first.allow_http)}",
             f"NGC_DOCKER_HOST={shlex.quote(first.docker_host or '')}",
             _array("NGC_VALIDATE_ARGS", first.validate_args),
             _array("NGC_BENCH_NAMES", [name for name, _ in first.benches])]
    lines += [_array(f"NGC_BENCH_ARGS_{i}", args) for i, (_, args) in enumerate(first.benches)]
    lines += [f"NGC_VALIDATE={int(first.validate)}",
              f"NGC_PULL={int(first.pull)}",
              f"NGC_AB_ROUNDS={first.ab_rounds}",
              f"NGC_AB_WARMUP={min(1, max(0, first.ab_warmup))}",
              f"NGC_AB_VALIDATE={int(first.ab_validate_args is not None)}",
              _array("NGC_AB_VALIDATE_ARGS", first.ab_validate_args or ()),
              _array("NGC_CANDIDATE_ENV", first.candidate_env),
              _array("NGC_AB_NAMES", [name for name, _ in first.ab_benches])]
    lines += [_array(f"NGC_AB_ARGS_{i}", args) for i, (_, args) in enumerate(first.ab_benches)]
    lines.append('case "${SLURM_ARRAY_TASK_ID:-0}" in')
    for i, job in enumerate(jobs):
        reference = job.reference or ""
        values = {"NGC_CELL": job.cell, "NGC_IMAGE": job.image, "NGC_ENROOT_URI": containers.enroot_uri(job.image),
                  "NGC_OUT": str(job.folder), "NGC_REFERENCE_IMAGE": reference,
                  "NGC_REFERENCE_URI": containers.enroot_uri(reference) if reference else ""}
        lines.append(f"  {i}) " + " ".join(f"{k}={shlex.quote(v)}" for k, v in values.items()) + " ;;")
    lines.append('  *) echo "error: this job has no task ${SLURM_ARRAY_TASK_ID}" >&2; exit 75 ;;')
    lines.append("esac")
    return "\n".join(lines) + "\n" + containers.functions(first.runtime) + "\n" + BODY.read_text()


def write(jobs: list[JobSpec], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(jobs))
    path.chmod(0o755)
    return path
