"""Hardware profiles (those of benchmarks/gates.yaml, plus `cpu`) and the facts a job records about its node.

Why: a fleet file may only name profiles the benchmarks gate (a typo would prove nothing and say nothing),
and a result only counts for a profile when the node it ran on has that profile's GPU: the same regular
expression the benchmark matches GPU 0's name against (gates.yaml `match`). The node's facts (hostname, GPU
model and count, driver, CUDA, the image digest it ran) are written by the job itself (payload.sh), read here
strictly and kept with the result for the notes.
"""

import re
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_paddle.host_errors import NgcPaddleError

CPU = "cpu"  # the profile of runs without a GPU (gates.yaml's `cpu` gates)
GATES_FILE = Path("benchmarks") / "gates.yaml"
FACT_KEYS = ("hostname", "slurm_job", "slurm_node", "gpu_names", "gpu_count", "driver", "cuda", "cpu_model", "cpus",
             "machine", "image", "image_digest", "runtime", "slurm_nodes", "nodes", "node_rank", "tasks", "master")
MAX_FACT = 300


class _GatesProfile(BaseModel):
    """The two fields of a gates.yaml profile the fleet needs; the benchmark checks the whole file itself."""

    model_config = ConfigDict(extra="ignore", strict=True)  # the rest of gates.yaml is the benchmark's to check
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
    match: Annotated[str, Field(min_length=1, max_length=200)]


class _GatesProfiles(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)  # as above: the fleet reads the profiles only
    profiles: list[_GatesProfile]


def gates_profiles(root: Path) -> dict[str, str]:
    """Each hardware profile of benchmarks/gates.yaml with its GPU-name pattern; `cpu` matches runs without a GPU."""
    path = root / GATES_FILE
    data = bounded_read.load_yaml(path, NgcPaddleError)
    try:
        table = _GatesProfiles.model_validate(data)
    except ValidationError as exc:
        raise NgcPaddleError(one_line(path, exc, "restore benchmarks/gates.yaml (git checkout)")) from None
    return {CPU: "", **{p.name: p.match for p in table.profiles}}


def read_facts(path: Path) -> dict[str, str]:
    """facts.txt of a job (`key=value` lines, written on the node); unknown keys and overlong values are dropped,
    a missing file gives no facts (the job died before writing them)."""
    if not path.is_file():
        return {}
    facts = {}
    for line in bounded_read.read_text(path, NgcPaddleError, max_bytes=64 * 1024).splitlines():
        key, sep, value = line.partition("=")
        value = "".join(c for c in value.strip() if c.isprintable())[:MAX_FACT]
        if sep and key in FACT_KEYS and value:
            facts[key] = value
    return facts


def gpu_names(facts: dict[str, str]) -> list[str]:
    return [name.strip() for name in facts.get("gpu_names", "").split(";") if name.strip()]


def mismatch(profile: str, pattern: str, gpus: int, facts: dict[str, str]) -> str | None:
    """Why the node of `facts` is not hardware of `profile` (None when it is). A cpu profile runs its containers
    without GPUs, so any node serves it; a GPU profile needs `gpus` GPUs whose names all match its pattern."""
    if profile == CPU:
        return None
    node = facts.get("hostname", "the node")
    names = gpu_names(facts)
    if not names:
        return f"node {node} shows no NVIDIA GPU (nvidia-smi found none), not {profile}"
    if len(names) < gpus:
        return f"node {node} gave the job {len(names)} GPU(s) ({names[0]}), the profile asks for {gpus}"
    wrong = sorted({name for name in names if not re.search(pattern, name)})
    if wrong:
        return f"node {node} has {', '.join(wrong)}, not {profile} (gates.yaml match {pattern!r})"
    return None


def describe(facts: dict[str, str]) -> str:
    """The node in a few words for the notes: `vm (no GPU)`, `dgx01 (8x NVIDIA A100-SXM4-80GB, driver 550.54, CUDA
    12.4)`."""
    node = facts.get("hostname", "?")
    names = gpu_names(facts)
    if not names:
        return f"{node} (no GPU)"
    parts = [f"{len(names)}x {names[0]}"]
    parts += [f"driver {facts['driver']}"] if facts.get("driver") else []
    parts += [f"CUDA {facts['cuda']}"] if facts.get("cuda") else []
    return f"{node} ({', '.join(parts)})"
