"""The job script each runner runs, executed with fake container runtimes on PATH: the commands it gives docker,
pyxis (srun), enroot and apptainer (the last three cannot run here), what it records, how it stops.

Each test runs the real generated bash script (a few hundred ms); the fakes log their arguments and do nothing,
or what a test tells them (fail, sleep, list GPUs)."""

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ngc_paddle.release.fleet import containers
from ngc_paddle.release.fleet.payload import JobSpec, render, write

DIGEST = "sha256:" + "ab" * 32
IMAGE = f"127.0.0.1:5019/ngc-paddle@{DIGEST}"
TOOLS = ("docker", "srun", "enroot", "apptainer")


@pytest.fixture
def fakes(tmp_path: Path) -> Path:
    """A folder of fake tools: each appends its command line to calls.log; FAKE_<TOOL>_RC makes it fail, FAKE_SLEEP
    makes `docker run` (or srun/enroot start/apptainer exec) wait that long."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        (bin_dir / tool).write_text(f"""#!/bin/bash
printf '%q ' {tool} "$@" >> {tmp_path}/calls.log; echo >> {tmp_path}/calls.log
case "$1 ${{2:-}}" in
  "version "*) echo 26.1.5 ;;
  "image inspect") echo sha256:0123 ;;
  "run "*|"start "*|"exec "*|"--ntasks=1 "*) [ -n "${{FAKE_SLEEP:-}}" ] && sleep "$FAKE_SLEEP" ;;
  "pull "*|"import "*)
    [ -n "${{FAKE_PULL_RC:-}}" ] && {{ echo "error: manifest unknown" >&2; exit "$FAKE_PULL_RC"; }} ;;
esac
exit 0
""")
        (bin_dir / tool).chmod(0o755)
    (bin_dir / "uname").write_text("""#!/bin/bash
[ "${1:-}" = -m ] && [ -n "${FAKE_MACHINE:-}" ] && { echo "$FAKE_MACHINE"; exit 0; }
PATH=/usr/bin:/bin exec uname "$@"
""")  # FAKE_MACHINE: the node's machine as `uname -m` says it (an arm64 node here)
    (bin_dir / "uname").chmod(0o755)
    return bin_dir


def gpus(bin_dir: Path, lines: list[str]) -> None:
    """A fake nvidia-smi that lists these GPUs (index, name, driver) and says CUDA 12.4."""
    csv = "\\n".join(lines)
    (bin_dir / "nvidia-smi").write_text(f"""#!/bin/bash
case "$*" in
  *--query-gpu*) printf '{csv}\\n' ;;
  *) echo "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |" ;;
esac
""")
    (bin_dir / "nvidia-smi").chmod(0o755)


def spec(tmp_path: Path, **kw) -> JobSpec:
    base = dict(flavor="cpu", profile="cpu", hardware="cpu", image=IMAGE, folder=tmp_path / "job",
                validate_args=("-m", "not slow"), benches=(("bench-rn50", ("--smoke",)), ("bench-hgnet", ())))
    return JobSpec(**{**base, **kw})


def run(tmp_path: Path, bin_dir: Path, jobs: list[JobSpec], env: dict | None = None) -> subprocess.CompletedProcess:
    script = write(jobs, tmp_path / "job.sh")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "CUDA_", "DOCKER_HOST"))}
    environment.update(PATH=f"{bin_dir}:/usr/bin:/bin", **(env or {}))
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=environment, timeout=60)


def calls(tmp_path: Path) -> list[list[str]]:
    log = tmp_path / "calls.log"
    return [shlex.split(line) for line in log.read_text().splitlines()] if log.exists() else []


def attempt(tmp_path: Path, n: int = 1) -> Path:
    return tmp_path / "job" / f"attempt-{n}"


def test_docker_pulls_by_digest_and_runs_each_gate(tmp_path: Path, fakes: Path) -> None:
    (tmp_path / "job" / "inputs").mkdir(parents=True)
    (tmp_path / "job" / "inputs" / "baseline-bench-rn50.json").write_text("{}")
    proc = run(tmp_path, fakes, [spec(tmp_path)], {"SLURM_JOB_ID": "57", "SLURM_CLUSTER_NAME": "lab",
                                                    "SLURM_CPUS_PER_TASK": "2"})
    assert proc.returncode == 0, proc.stderr
    made = calls(tmp_path)
    assert made[0] == ["docker", "pull", "--quiet", "--platform", "linux/amd64", IMAGE]
    runs = [c for c in made if c[:2] == ["docker", "run"]]
    assert len(runs) == 3
    validate, rn50, hgnet = runs
    owner = f"{os.getuid()}:{os.getgid()}"
    for command in runs:
        assert command[command.index("--label") + 1] == "ngc-paddle.slurm-job=lab/57"  # what the Epilog removes
        assert IMAGE in command and "--gpus" not in command and command[command.index("--cpus") + 1] == "2"
        assert command[command.index("--network") + 1] == "none"
        assert command[command.index("-v") + 1] == f"{tmp_path}/job:/workspace/out"
    assert validate[validate.index("--user") + 1] == "0:0"  # the hygiene walk reads every file
    in_image = validate[validate.index(IMAGE) + 1:]
    assert in_image[:2] == ["bash", "-c"] and "chown -R" in in_image[2]
    assert validate[-4:] == ["--output", "/workspace/out/attempt-1/validation", "-m", "not slow"]
    assert rn50[rn50.index("--user") + 1] == owner
    assert rn50[rn50.index(IMAGE) + 1:] == ["bench-rn50", "--output", "/workspace/out/attempt-1/bench/bench-rn50",
                                            "--baseline", "/workspace/out/inputs/baseline-bench-rn50.json", "--smoke"]
    assert hgnet[hgnet.index(IMAGE) + 1:] == ["bench-hgnet", "--output", "/workspace/out/attempt-1/bench/bench-hgnet"]
    assert (attempt(tmp_path) / "outcome").read_text() == "done\n"
    steps = [line.split("\t")[:2] for line in (attempt(tmp_path) / "steps.tsv").read_text().splitlines()]
    assert steps == [["validate", "0"], ["bench-rn50", "0"], ["bench-hgnet", "0"]]
    facts = dict(line.split("=", 1) for line in (attempt(tmp_path) / "facts.txt").read_text().splitlines())
    assert facts["slurm_job"] == "57" and facts["image_digest"] == DIGEST and facts["gpu_count"] == "0"
    assert facts["runtime"] == "docker 26.1.5"


def test_a_requeued_job_writes_a_new_attempt(tmp_path: Path, fakes: Path) -> None:
    assert run(tmp_path, fakes, [spec(tmp_path)], {"SLURM_JOB_ID": "57", "SLURM_RESTART_COUNT": "1"}).returncode == 0
    assert (attempt(tmp_path, 2) / "outcome").read_text() == "done\n" and not attempt(tmp_path, 1).exists()


def test_the_job_gets_its_gpus_and_records_them(tmp_path: Path, fakes: Path) -> None:
    gpus(fakes, ["0, NVIDIA A100-SXM4-80GB, 550.54.15", "1, NVIDIA A100-SXM4-80GB, 550.54.15",
                 "2, NVIDIA A100-SXM4-80GB, 550.54.15"])
    job = spec(tmp_path, profile="A100-80GB", hardware="A100-80GB", gpus=2, benches=())
    assert run(tmp_path, fakes, [job], {"SLURM_JOB_ID": "9", "SLURM_JOB_GPUS": "1,2"}).returncode == 0
    command = next(c for c in calls(tmp_path) if c[:2] == ["docker", "run"])
    assert command[command.index("--gpus") + 1] == '"device=1,2"'
    assert "--ipc=host" in command and "memlock=-1" in command
    facts = (attempt(tmp_path) / "facts.txt").read_text()
    assert "gpu_count=2\n" in facts and "gpu_names=NVIDIA A100-SXM4-80GB;NVIDIA A100-SXM4-80GB\n" in facts
    assert "driver=550.54.15\n" in facts and "cuda=12.4\n" in facts


def test_a_gpu_profile_on_a_node_without_gpus_stops_before_the_image(tmp_path: Path, fakes: Path) -> None:
    job = spec(tmp_path, profile="A100-80GB", hardware="A100-80GB", gpus=1)
    proc = run(tmp_path, fakes, [job], {"SLURM_JOB_ID": "3"})
    assert proc.returncode == 0 and calls(tmp_path) == []  # no pull, no run: minutes of a wrong node saved
    assert (attempt(tmp_path) / "outcome").read_text().startswith("no-gpu: ")
    assert "0 NVIDIA GPU(s), the profile asks for 1" in (attempt(tmp_path) / "outcome").read_text()


def test_an_image_that_cannot_be_pulled_is_a_start_failure(tmp_path: Path, fakes: Path) -> None:
    proc = run(tmp_path, fakes, [spec(tmp_path)], {"FAKE_PULL_RC": "1"})
    assert proc.returncode == 75
    assert (attempt(tmp_path) / "outcome").read_text() == \
        f"start-failed: cannot get {IMAGE}: error: manifest unknown\n"
    assert not [c for c in calls(tmp_path) if c[:2] == ["docker", "run"]]


def test_sigterm_stops_the_container_and_says_so(tmp_path: Path, fakes: Path) -> None:
    script = write([spec(tmp_path)], tmp_path / "job.sh")
    env = {**os.environ, "PATH": f"{fakes}:/usr/bin:/bin", "FAKE_SLEEP": "30", "SLURM_JOB_ID": "77"}
    proc = subprocess.Popen(["bash", str(script)], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(c[:2] == ["docker", "run"] for c in calls(tmp_path)):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 143  # at once, not after the 30 s the container would still run
    name = next(c for c in calls(tmp_path) if c[:2] == ["docker", "run"])[4]
    assert ["docker", "rm", "-f", name] in calls(tmp_path)
    assert (attempt(tmp_path) / "outcome").read_text() == "interrupted: SIGTERM\n"
    assert len([c for c in calls(tmp_path) if c[:2] == ["docker", "run"]]) == 1  # no later gate started


def test_pyxis_runs_each_gate_as_a_job_step_in_the_image(tmp_path: Path, fakes: Path) -> None:
    job = spec(tmp_path, runtime="pyxis", gres="gpu:1", gpus=0, allow_http=True)
    assert run(tmp_path, fakes, [job], {"SLURM_JOB_ID": "5"}).returncode == 0
    steps = [c for c in calls(tmp_path) if c[0] == "srun" and "--version" not in c]
    assert len(steps) == 3
    uri = f"127.0.0.1:5019#ngc-paddle:{DIGEST}"  # enroot's URI: no '@'; the digest in the tag's place
    assert containers.enroot_uri(IMAGE) == uri
    for step in steps:
        assert f"--container-image={uri}" in step and "--container-name=ngc-gates-5-1" in step
        assert f"--container-mounts={tmp_path}/job:/workspace/out" in step and "--no-container-mount-home" in step
        assert "--gres=gpu:1" in step and containers.ENTRYPOINT in step
    assert "--container-remap-root" in steps[0] and "--container-remap-root" not in steps[1]
    assert steps[1][steps[1].index(containers.ENTRYPOINT) + 1:][:2] == ["bench-rn50", "--output"]


def test_enroot_imports_creates_starts_and_removes(tmp_path: Path, fakes: Path) -> None:
    gpus(fakes, ["0, NVIDIA H100 80GB HBM3, 550.54.15"])
    job = spec(tmp_path, runtime="enroot", gpus=1, hardware="H100-SXM", benches=(("bench-rn50", ()),))
    assert run(tmp_path, fakes, [job], {"SLURM_JOB_ID": "8", "SLURM_JOB_GPUS": "0",
                                        "TMPDIR": str(tmp_path)}).returncode == 0
    made = [c for c in calls(tmp_path) if c[0] == "enroot" and c[1] != "version"]
    sqsh = f"{tmp_path}/ngc-gates-8-1.sqsh"
    assert made[0] == ["enroot", "import", "--arch", "amd64", "--output", sqsh,
                       f"docker://127.0.0.1:5019#ngc-paddle:{DIGEST}"]
    assert made[1] == ["enroot", "create", "--force", "--name", "ngc-gates-8-1", sqsh]
    validate, rn50 = made[2], made[3]
    assert validate[:2] == ["enroot", "start"] and "--root" in validate and "--root" not in rn50
    assert ["--mount", f"{tmp_path}/job:/workspace/out"] == validate[3:5]
    assert "NVIDIA_VISIBLE_DEVICES" in rn50 and rn50[rn50.index("ngc-gates-8-1") + 1] == containers.ENTRYPOINT
    assert made[-1] == ["enroot", "remove", "--force", "ngc-gates-8-1"]


def test_apptainer_pulls_by_digest_and_executes_with_the_gpus(tmp_path: Path, fakes: Path) -> None:
    gpus(fakes, ["0, Tesla V100-SXM2-32GB, 535.1"])
    job = spec(tmp_path, runtime="apptainer", gpus=1, hardware="V100", allow_http=True, benches=())
    assert run(tmp_path, fakes, [job], {"TMPDIR": str(tmp_path)}).returncode == 0
    made = [c for c in calls(tmp_path) if c[0] == "apptainer" and c[1] != "--version"]
    sif = made[0][5]
    assert made[0] == ["apptainer", "pull", "--arch", "amd64", "--no-https", sif, f"docker://{IMAGE}"]  # plain HTTP
    assert sif.startswith(f"{tmp_path}/ngc-gates-") and sif.endswith("-1.sif")
    assert made[1][:2] == ["apptainer", "exec"] and "--nv" in made[1]
    assert ["--bind", f"{tmp_path}/job:/workspace/out"] == made[1][5:7]
    after = made[1][made[1].index(sif) + 1:]
    assert after[:3] == [containers.ENTRYPOINT, "bash", "-c"] and "validate" in after[3]
    assert after[4:] == ["/workspace/out/attempt-1/validation", "--output", "/workspace/out/attempt-1/validation",
                         "-m", "not slow"]


def test_a_job_array_runs_the_flavor_of_its_task(tmp_path: Path, fakes: Path) -> None:
    other = f"127.0.0.1:5019/ngc-paddle@sha256:{'cd' * 32}"
    jobs = [spec(tmp_path), spec(tmp_path, flavor="cpu2", image=other, folder=tmp_path / "job2")]
    assert "  1) NGC_CELL=cpu2@cpu " in render(jobs)
    assert run(tmp_path, fakes, jobs, {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_JOB_ID": "40",
                                       "SLURM_JOB_ID": "42"}).returncode == 0
    assert calls(tmp_path)[0] == ["docker", "pull", "--quiet", "--platform", "linux/amd64", other]
    assert (tmp_path / "job2" / "attempt-1" / "outcome").exists() and not (tmp_path / "job").exists()
    assert "slurm_job=40_1\n" in (tmp_path / "job2" / "attempt-1" / "facts.txt").read_text()
    assert run(tmp_path, fakes, jobs, {"SLURM_ARRAY_TASK_ID": "7"}).returncode == 75
    with pytest.raises(ValueError, match="share their profile"):
        render([spec(tmp_path), spec(tmp_path, gpus=1)])


ARM64_NODE = {"FAKE_MACHINE": "aarch64", "SLURM_JOB_ID": "6", "TMPDIR": "."}


def test_docker_takes_the_profiles_platform_from_the_index(tmp_path: Path, fakes: Path) -> None:
    job = spec(tmp_path, platform="linux/arm64", benches=(("bench-rn50", ()),))
    assert run(tmp_path, fakes, [job], ARM64_NODE).returncode == 0
    made = calls(tmp_path)
    assert made[0] == ["docker", "pull", "--quiet", "--platform", "linux/arm64", IMAGE]  # the index, by digest
    runs = [c for c in made if c[:2] == ["docker", "run"]]
    assert len(runs) == 2 and all(c[c.index("--platform") + 1] == "linux/arm64" for c in runs)
    assert "machine=aarch64\n" in (attempt(tmp_path) / "facts.txt").read_text()
    assert (attempt(tmp_path) / "outcome").read_text() == "done\n"


def test_the_tasks_of_a_data_parallel_step_take_the_platform_too(tmp_path: Path, fakes: Path) -> None:
    job = spec(tmp_path, platform="linux/arm64", benches=(("bench-rn50", ()),), validate=False, nodes=1,
               tasks_per_node=2)
    assert run(tmp_path, fakes, [job], {**ARM64_NODE, "SLURM_JOB_NODELIST": "n1"}).returncode == 0
    step = next(c for c in calls(tmp_path) if c[0] == "srun")
    assert step[step.index("--platform") + 1] == "linux/arm64"  # each task's docker run gets it (ngc_task)


def test_enroot_and_apptainer_import_the_platforms_architecture(tmp_path: Path, fakes: Path) -> None:
    job = spec(tmp_path, runtime="enroot", platform="linux/arm64", benches=())
    assert run(tmp_path, fakes, [job], {**ARM64_NODE, "TMPDIR": str(tmp_path)}).returncode == 0
    imported = next(c for c in calls(tmp_path) if c[:2] == ["enroot", "import"])
    assert imported[2:4] == ["--arch", "arm64"]  # the OCI index's architecture, not the host's default
    (tmp_path / "calls.log").unlink()
    job = spec(tmp_path, runtime="apptainer", platform="linux/arm64", benches=(), folder=tmp_path / "job2")
    assert run(tmp_path, fakes, [job], {**ARM64_NODE, "TMPDIR": str(tmp_path)}).returncode == 0
    pulled = next(c for c in calls(tmp_path) if c[:2] == ["apptainer", "pull"])
    assert pulled[2:4] == ["--arch", "arm64"]


def test_pyxis_imports_for_the_nodes_own_architecture(tmp_path: Path, fakes: Path) -> None:
    job = spec(tmp_path, runtime="pyxis", platform="linux/arm64", benches=())
    assert run(tmp_path, fakes, [job], ARM64_NODE).returncode == 0
    step = next(c for c in calls(tmp_path) if c[0] == "srun" and "--version" not in c)
    assert not [a for a in step if "platform" in a or "arch" in a]  # no such option: the machine check stands for it
    assert (attempt(tmp_path) / "outcome").read_text() == "done\n"


@pytest.mark.parametrize("runtime", ["docker", "pyxis", "enroot", "apptainer"])
def test_a_node_of_another_machine_runs_nothing(tmp_path: Path, fakes: Path, runtime: str) -> None:
    job = spec(tmp_path, runtime=runtime, platform="linux/amd64")
    proc = run(tmp_path, fakes, [job], {**ARM64_NODE, "TMPDIR": str(tmp_path)})
    assert proc.returncode == 0 and calls(tmp_path) == []  # no pull, no import, nothing emulated
    outcome = (attempt(tmp_path) / "outcome").read_text()
    assert outcome.startswith("wrong-machine: ") and outcome.count("\n") == 1
    assert "is aarch64, the profile's platform linux/amd64 runs on x86_64; fix: " in outcome
    assert "machine=aarch64\n" in (attempt(tmp_path) / "facts.txt").read_text()
