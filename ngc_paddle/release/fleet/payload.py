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

    @property
    def cell(self) -> str:
        return f"{self.flavor}@{self.profile}"


def _array(name: str, values: tuple[str, ...] | list[str]) -> str:
    return f"{name}=({' '.join(shlex.quote(v) for v in values)})"


def render(jobs: list[JobSpec]) -> str:
    """The script of one job, or of a job array whose task i runs jobs[i] (they share profile and options)."""
    first = jobs[0]
    shared = (first.profile, first.validate_args, first.benches, first.gpus, first.runtime, first.allow_http,
              first.docker_host, first.gres)
    if any((j.profile, j.validate_args, j.benches, j.gpus, j.runtime, j.allow_http, j.docker_host, j.gres) != shared
           for j in jobs):
        raise ValueError("the jobs of one script must share their profile and options")
    lines = ["#!/bin/bash",
             f"# ngc-paddle gate job: {', '.join(j.cell for j in jobs)} (written by ngc_paddle.release.fleet.payload)",
             f"NGC_PROFILE={shlex.quote(first.hardware)}",
             f"NGC_GPUS={first.gpus}",
             f"NGC_GRES={shlex.quote(first.gres or '')}",
             f"NGC_ALLOW_HTTP={int(first.allow_http)}",
             f"NGC_DOCKER_HOST={shlex.quote(first.docker_host or '')}",
             _array("NGC_VALIDATE_ARGS", first.validate_args),
             _array("NGC_BENCH_NAMES", [name for name, _ in first.benches])]
    lines += [_array(f"NGC_BENCH_ARGS_{i}", args) for i, (_, args) in enumerate(first.benches)]
    lines.append('case "${SLURM_ARRAY_TASK_ID:-0}" in')
    for i, job in enumerate(jobs):
        values = {"NGC_CELL": job.cell, "NGC_IMAGE": job.image, "NGC_ENROOT_URI": containers.enroot_uri(job.image),
                  "NGC_OUT": str(job.folder)}
        lines.append(f"  {i}) " + " ".join(f"{k}={shlex.quote(v)}" for k, v in values.items()) + " ;;")
    lines.append('  *) echo "error: this job has no task ${SLURM_ARRAY_TASK_ID}" >&2; exit 75 ;;')
    lines.append("esac")
    return "\n".join(lines) + "\n" + containers.functions(first.runtime) + "\n" + BODY.read_text()


def write(jobs: list[JobSpec], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(jobs))
    path.chmod(0o755)
    return path
