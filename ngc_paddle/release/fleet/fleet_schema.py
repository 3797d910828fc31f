"""The fleet file (fleets/*.yaml): where each hardware profile's gates run. Strict pydantic, checked at the door.

Why: a fleet file decides which machines prove a release. A misspelt key, a partition name with a space, a
`gres: gpu` without a count or a profile the benchmarks do not know would otherwise surface as a job that
runs somewhere else, or nowhere, minutes later. Here any of them is one line naming the file and the field,
exit 2, before anything is pushed or submitted.

The long form: docs/design-notes.md, section `ngc_paddle/release/fleet/fleet_schema.py`.
"""

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationError, model_validator

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_common.strict_model import Strict
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.platforms import DEFAULT_PLATFORM, host_or_default, platform_named
from ngc_paddle.release.fleet import hardware_profiles
from ngc_paddle.release.options import BENCHMARKS

FIX = "see fleets/example-gpu-site.yaml and docs/fleets.md for the format"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Slurm names (partition, account, qos): no spaces, commas or shell characters.
SLURM_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
CONSTRAINT_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._&|\[\]*:()-]{0,200}")  # Slurm's feature expression
GRES_RE = re.compile(r"gpu(?::([A-Za-z0-9_.-]{1,64}))?:([1-9][0-9]{0,2})")
TIME_RE = re.compile(r"(?:[0-9]{1,3}-)?[0-9]{1,3}(?::[0-5][0-9]){0,2}")  # [D-]HH[:MM[:SS]], or minutes
MEM_RE = re.compile(r"[1-9][0-9]{0,6}[KMGT]?")
PORT = r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"  # 1-65535
MASTER_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
HOST_RE = re.compile(r"(?:[a-z_][a-z0-9_.-]{0,31}@)?[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(?::" + PORT + ")?")
DOCKER_HOST_RE = re.compile(r"(?:unix://)?/[A-Za-z0-9._/-]{1,200}|tcp://[A-Za-z0-9.-]{1,253}:" + PORT)
ARG_RE = re.compile(r"[^\x00-\x1f\x7f]{1,200}")  # an argument passed to a command in the image: one line
ABS_PATH_RE = re.compile(r"/[A-Za-z0-9._/+-]{0,500}")


def _matches(pattern: re.Pattern[str], what: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            shown = repr(value) if len(value) <= 60 else repr(value[:60]) + "..."
            raise ValueError(f"{shown} is not {what}")
        return value

    return AfterValidator(check)


Name = Annotated[str, _matches(NAME_RE, "a name of letters, digits, '.', '_' and '-' (e.g. A100-80GB)")]
SlurmName = Annotated[str, _matches(SLURM_NAME_RE, "a Slurm name (letters, digits, '.', '_', '-')")]
Arg = Annotated[str, _matches(ARG_RE, "one line of at most 200 characters")]


def _below_root(value: str) -> str:
    """A folder the jobs write into (and a node may clean up): `/` itself, or a path that climbs with `..` (or
    hides behind `.`), would put them where nothing of the release belongs."""
    parts = [part for part in value.split("/") if part]
    if not parts:
        raise ValueError(f"{value!r} is the root folder; name a folder below it")
    if any(part in (".", "..") for part in parts):
        raise ValueError(f"{value[:60]!r} holds a '.' or '..' component; write the folder's own path")
    return value


AbsPath = Annotated[str, _matches(ABS_PATH_RE, "an absolute path (letters, digits, '.', '_', '/', '+', '-')"),
                    AfterValidator(_below_root)]
Runtime = Literal["pyxis", "enroot", "apptainer", "docker"]
DockerHost = Annotated[str, _matches(DOCKER_HOST_RE, "a DOCKER_HOST (unix:///PATH or tcp://HOST:PORT, PORT 1-65535)")]


def _bench(value: str) -> str:
    if value not in BENCHMARKS:
        raise ValueError(f"{value[:60]!r} is not a benchmark of the image ({', '.join(BENCHMARKS)})")
    return value


Bench = Annotated[str, AfterValidator(_bench)]
# The platform of the profile's nodes (ngc_paddle/platforms.py names them): the image of that platform is what runs.
PlatformName = Annotated[str, AfterValidator(lambda name: platform_named(name).name)]



LAUNCH_OPTIONS = ("--nnodes", "--master")  # a multi-task job sets them on every task


class SlurmPlace(Strict):
    """A Slurm partition, reached with Slurm's own commands (sbatch, squeue, scontrol, sacct, scancel) from here."""

    partition: SlurmName
    account: SlurmName | None = None
    qos: SlurmName | None = None
    constraint: Annotated[str, _matches(CONSTRAINT_RE, "a Slurm feature expression (e.g. a100&nvlink)")] | None = None
    gres: Annotated[str, _matches(GRES_RE, "gpu:N or gpu:TYPE:N (e.g. gpu:1, gpu:a100:8)")] | None = None
    cpus_per_task: Annotated[int, Field(ge=1, le=1024)] | None = None
    mem: Annotated[str, _matches(MEM_RE, "a Slurm memory size (e.g. 64G)")] | None = None
    time: Annotated[str, _matches(TIME_RE, "a Slurm time limit (e.g. 01:00:00, 2-00:00:00 or 90)")] = "02:00:00"
    container: Runtime = "docker"
    # A folder this host and every node of the partition see under the same path (the jobs' results come
    # back through it); default: the release's own build folder, which must then be on a shared filesystem.
    shared_dir: AbsPath | None = None
    allow_http: bool = False  # the registry speaks plain HTTP (enroot, pyxis and apptainer need to be told)
    # Data parallel: the job asks for nodes x tasks_per_node tasks; each benchmark runs one container per task (srun),
    # the tasks joined as the nodes of one Paddle launch (docs/fleets.md, "Several nodes and tasks").
    nodes: Annotated[int, Field(ge=1, le=64)] = 1
    tasks_per_node: Annotated[int, Field(ge=1, le=64)] = 1

    @model_validator(mode="after")
    def _tasks_on_docker(self) -> "SlurmPlace":
        if self.tasks > 1 and self.container != "docker":
            raise ValueError(f"nodes x tasks_per_node = {self.tasks} tasks start one docker container each through "
                             f"srun; container {self.container!r} is not supported for several tasks yet; fix: "
                             "container: docker, or one task")
        return self

    @property
    def gpus(self) -> int:
        match = GRES_RE.fullmatch(self.gres or "")
        return int(match.group(2)) if match else 0

    @property
    def tasks(self) -> int:
        return self.nodes * self.tasks_per_node


class SshPlace(Strict):
    """Hosts with a container runtime, reached with OpenSSH; keys come from the user's ssh-agent, never a file here."""

    hosts: Annotated[list[Annotated[str, _matches(HOST_RE, "[USER@]HOST[:PORT] with PORT 1-65535")]],
                     Field(min_length=1, max_length=64)]
    gpus: Annotated[int, Field(ge=0, le=64)] = 0
    container: Literal["apptainer", "docker"] = "docker"
    work_dir: AbsPath = "/tmp/ngc-paddle-gates"  # on the host: the job's folder, removed once its results are back
    known_hosts: AbsPath | None = None  # default: the user's own known_hosts (StrictHostKeyChecking stays on)
    docker_host: DockerHost | None = None  # the engine on the host, when not its default one
    allow_http: bool = False
    # Data parallel: a job of N nodes runs on the N hosts listed, the first one the master of one Paddle launch
    # (docs/fleets.md, "Several nodes and tasks"); `master_addr` is the first host as the others reach it.
    nodes: Annotated[int, Field(ge=1, le=64)] = 1
    master_addr: Annotated[str, _matches(MASTER_RE, "a host name or IP address (e.g. 10.0.0.1)")] | None = None

    @model_validator(mode="after")
    def _nodes_are_the_hosts(self) -> "SshPlace":
        if self.nodes > 1 and len(self.hosts) != self.nodes:
            raise ValueError(f"nodes: {self.nodes} with {len(self.hosts)} host(s): a job of several nodes runs on "
                             "the hosts the profile lists, one node each; fix: list exactly nodes: hosts")
        if self.nodes > 1 and self.container != "docker":
            raise ValueError(f"nodes: {self.nodes} starts one docker container per host; container "
                             f"{self.container!r} is not supported for several nodes yet; fix: container: docker, "
                             "or nodes: 1")
        if self.master_addr is not None and self.nodes == 1:
            raise ValueError("master_addr: is the first host's address for a job of several nodes; fix: drop it, "
                             "or ask for nodes: above 1")
        return self

    @property
    def tasks(self) -> int:
        return self.nodes


class LocalPlace(Strict):
    """This host: the same job a node runs, started here (what `ngc-paddle gates` does without a fleet file)."""

    gpus: Annotated[int, Field(ge=0, le=64)] = 0
    container: Literal["apptainer", "docker"] = "docker"
    allow_http: bool = False


class Profile(Strict):
    hardware: Name | None = None  # the gates.yaml profile this entry proves (default: the entry's name)
    # The nodes' platform: a flavor built for it runs its image of that platform there (pulled from the release's
    # index by the node's runtime); a flavor not built for it is N/A there, never sent (docs/fleets.md, "Platforms").
    platform: PlatformName = DEFAULT_PLATFORM
    flavors: Annotated[list[Name], Field(min_length=1)] | None = None
    slurm: SlurmPlace | None = None
    ssh: SshPlace | None = None
    local: LocalPlace | None = None
    validate_args: Annotated[list[Arg], Field(alias="validate", max_length=32)] = Field(default_factory=list)
    # The benchmarks this profile runs, each with its options (default: the release's, without options).
    bench: dict[Bench, Annotated[list[Arg], Field(max_length=64)]] | None = None

    @model_validator(mode="after")
    def _one_place(self) -> "Profile":
        places = [p for p in (self.slurm, self.ssh, self.local) if p is not None]
        if len(places) != 1:
            raise ValueError("a profile runs in exactly one place: give one of slurm:, ssh:, local:")
        return self

    @model_validator(mode="after")
    def _launch_is_ours(self) -> "Profile":
        if self.tasks == 1:
            return self
        for command, args in (self.bench or {}).items():
            ours = [a for a in args if a.split("=")[0] in LAUNCH_OPTIONS]
            if ours:
                raise ValueError(f"bench.{command}: {ours[0]!r} is set by the job across its {self.tasks} "
                                 "tasks (--nnodes, --master); fix: drop it, or use nodes (and tasks_per_node)")
        return self

    @property
    def tasks(self) -> int:
        return self.slurm.tasks if self.slurm else self.ssh.tasks if self.ssh else 1

    @property
    def place(self) -> SlurmPlace | SshPlace | LocalPlace:
        return self.slurm or self.ssh or self.local  # type: ignore[return-value]

    @property
    def runner(self) -> str:
        return "slurm" if self.slurm else "ssh" if self.ssh else "local"

    @property
    def gpus(self) -> int:
        return self.place.gpus


class Fleet(Strict):
    profiles: Annotated[dict[Name, Profile], Field(min_length=1, max_length=64)]


class FleetError(NgcPaddleError):
    """The fleet file cannot be used (bad input: exit 2)."""


# No fleet file: this host, as a node, on its own platform.
LOCAL = Fleet(profiles={hardware_profiles.CPU: Profile(local=LocalPlace(), platform=host_or_default())})


def load(path: Path, root: Path, release: ResolvedRelease | None = None) -> Fleet:
    """The fleet file at `path`, checked against the schema, the profiles benchmarks/gates.yaml knows and, given
    the release it gates, that release's flavors (a profile naming a flavor it lacks would gate nothing of it)."""
    data = bounded_read.load_yaml(path, FleetError)
    try:
        fleet = Fleet.model_validate(data)
    except ValidationError as exc:
        raise FleetError(one_line(path, exc, FIX)) from None
    known = hardware_profiles.gates_profiles(root)
    for name, profile in fleet.profiles.items():
        where = f"{path}: profiles.{name}"
        hw = profile.hardware or name
        stray = [f for f in profile.flavors or [] if release is not None and not release.has_flavor(f)]
        if stray and release is not None:
            raise FleetError(f"{where}.flavors: {stray[0]!r} is not a flavor of release {release.release} "
                             f"({', '.join(release.manifest.flavors)}); fix: name flavors the release has")
        if hw not in known:
            raise FleetError(f"{where}: {hw!r} is not a hardware profile of benchmarks/gates.yaml; fix: use one of "
                             f"{', '.join(known)}, or name it with hardware:")
        if hw != hardware_profiles.CPU and profile.gpus == 0:
            where += ".slurm.gres" if profile.slurm else f".{profile.runner}.gpus"
            raise FleetError(f"{where}: the {hw} profile asks for no GPU, so its jobs would never see one; fix: "
                             "ask for at least one (slurm: gres: gpu:1; ssh/local: gpus: 1)")
    return fleet


def hardware_of(name: str, profile: Profile) -> str:
    return profile.hardware or name
