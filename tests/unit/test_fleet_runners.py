"""The local and SSH runners: the local one runs the real job script end to end against a fake docker (the verdict
comes from the files a job leaves), and stops it with its container on an interrupt; the SSH one builds OpenSSH
command lines that never name a key and always check the host's."""

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from ngc_paddle.release.fleet.fanout import FanOut, Target
from ngc_paddle.release.fleet.fleet_schema import LOCAL, SshPlace
from ngc_paddle.release.fleet.payload import JobSpec
from ngc_paddle.release.fleet.runners.interface import Placed
from ngc_paddle.release.fleet.runners.ssh import SshRunner
from tests.unit.fuzz_support import bench_result

DIGEST = "sha256:" + "ab" * 32
IMAGE = f"127.0.0.1:5019/ngc-paddle@{DIGEST}"
VALIDATION = {"counts": {"passed": 40, "failed": 0, "skipped": 3, "error": 0}, "verdict": "PASS", "verdict_reasons": []}

# A docker that "runs" the image's commands by writing what they would: validation.json for validate, a result.json
# for a benchmark, under the folder mounted at /workspace/out. FAKE_SLEEP makes `run` hang until stopped.
FAKE_DOCKER = r'''#!/usr/bin/env python3
import json, os, shlex, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(shlex.join(["docker", *args]) + "\n")
if args[:1] == ["version"]:
    print("26.1.5")
elif args[:2] == ["image", "inspect"]:
    print("sha256:0123")
elif args[:1] == ["run"]:
    if os.environ.get("FAKE_SLEEP"):
        time.sleep(float(os.environ["FAKE_SLEEP"]))
    host = next(a.split(":")[0] for a in args if a.endswith(":/workspace/out"))
    real = lambda p: p.replace("/workspace/out", host)
    out = real(args[args.index("--output") + 1]) if "--output" in args else None
    if "bash" in args:  # validate as root, then chown
        os.makedirs(out, exist_ok=True)
        json.dump(json.loads(os.environ["FAKE_VALIDATION"]), open(f"{out}/validation.json", "w"))
    else:
        os.makedirs(f"{out}/run-1", exist_ok=True)
        open(f"{out}/run-1/result.json", "w").write(open(os.environ["FAKE_RESULT"]).read())
'''


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    result = tmp_path / "result.json"
    result.write_text(json.dumps(bench_result("rn50")))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "docker.log"))
    monkeypatch.setenv("FAKE_RESULT", str(result))
    monkeypatch.setenv("FAKE_VALIDATION", json.dumps(VALIDATION))
    for name in [k for k in os.environ if k.startswith(("SLURM_", "CUDA_VISIBLE"))]:
        monkeypatch.delenv(name)
    return tmp_path / "docker.log"


def fan(tmp_path: Path, repo: Path, said: list[str], store: dict) -> FanOut:
    out = FanOut(LOCAL, repo, ("bench-rn50",), said.append, store=lambda f, p, c: store.__setitem__(p, c),
                 stored=lambda f, p: None, poll_s=0.05)
    out.root = tmp_path
    return out


def test_the_local_runner_runs_the_job_script_to_a_verdict(tmp_path: Path, repo: Path, fake_docker: Path) -> None:
    said: list[str] = []
    cells = fan(tmp_path, repo, said, {}).run([Target("cpu", False, IMAGE, tmp_path / "rel" / "cpu" / "gates")])
    cell = cells["cpu@cpu"]
    assert cell.status == "PASS", cell.detail
    assert cell.runner == "local" and cell.job.startswith("local pid ") and cell.facts["image_digest"] == DIGEST
    assert cell.bench == {"bench-rn50": "PASS"} and cell.validation == "PASS"
    commands = [shlex.split(line) for line in fake_docker.read_text().splitlines()]
    assert commands[0] == ["docker", "pull", "--quiet", "--platform", "linux/amd64", IMAGE]
    assert [c[c.index(IMAGE) + 1] for c in commands if c[1] == "run"] == ["bash", "bench-rn50"]
    assert (tmp_path / cell.folder / "attempt-1" / "outcome").read_text() == "done\n"


def test_an_interrupt_stops_the_local_job_and_its_container(tmp_path: Path, repo: Path, fake_docker: Path,
                                                            monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SLEEP", "60")

    def sleep(seconds: float) -> None:  # Ctrl-C once the job's first container runs
        if fake_docker.exists() and " run " in fake_docker.read_text():
            raise KeyboardInterrupt
        time.sleep(seconds)

    store: dict = {}
    fanned = fan(tmp_path, repo, [], store)
    fanned.sleep = sleep
    with pytest.raises(KeyboardInterrupt):
        fanned.run([Target("cpu", False, IMAGE, tmp_path / "rel" / "cpu" / "gates")])
    commands = [shlex.split(line) for line in fake_docker.read_text().splitlines()]
    name = next(c for c in commands if c[1] == "run")[4]
    assert ["docker", "rm", "-f", name] == commands[-1]  # the job's trap removed its container
    cell = store["cpu"]
    assert cell.status == "NOT RUN" and "rerun to resume" in cell.detail
    pid = int(cell.job.split()[-1])
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # the job's whole process group is gone
    outcome = tmp_path / cell.folder / "attempt-1" / "outcome"
    assert outcome.read_text() == "interrupted: SIGTERM\n"


class FakeSsh:
    def __init__(self, rc: int = 0, stdout: bytes | str = b"", stderr: bytes | str = b"") -> None:
        self.calls: list[list[str]] = []
        self.rc, self.stdout, self.stderr = rc, stdout, stderr

    def __call__(self, args, **kwargs):
        self.calls.append(args)
        return subprocess.CompletedProcess(args, self.rc, self.stdout, self.stderr)


def test_ssh_commands_check_the_host_and_take_keys_from_the_agent_only(tmp_path: Path) -> None:
    place = SshPlace(hosts=["release@gpu01:2222", "gpu02"], known_hosts="/etc/ngc/known_hosts",
                     docker_host="unix:///run/docker-test.sock")
    runner = SshRunner("A10", place, "r1", run=FakeSsh())
    args = runner.ssh("release@gpu01:2222", "true")
    assert args[:1] == ["ssh"] and args[-2:] == ["release@gpu01", "true"] and args[args.index("-p") + 1] == "2222"
    options = [args[i + 1] for i, a in enumerate(args) if a == "-o"]
    assert {"BatchMode=yes", "StrictHostKeyChecking=yes", "UserKnownHostsFile=/etc/ngc/known_hosts"} <= set(options)
    assert "-i" not in args and not any("IdentityFile" in o for o in options)  # the agent's keys, never a file
    assert "-p" not in runner.ssh("gpu02", "true")
    assert runner.probe() is None and runner.run.calls[0][-1] == \
        "DOCKER_HOST=unix:///run/docker-test.sock docker version -f '{{.Server.Version}}'"


def test_ssh_hosts_that_cannot_run_a_job_make_the_profile_not_proven(tmp_path: Path) -> None:
    runner = SshRunner("A10", SshPlace(hosts=["gpu01", "gpu02"], gpus=1), "r1",
                       run=FakeSsh(255, "", "ssh: connect to host gpu01 port 22: Connection refused\n"))
    assert runner.probe() == ("no host of the profile can run a job: gpu01: ssh: connect to host gpu01 port 22: "
                              "Connection refused; gpu02: ssh: connect to host gpu01 port 22: Connection refused")
    runner = SshRunner("A10", SshPlace(hosts=["gpu01"], gpus=1), "r1", run=FakeSsh(127, "", "docker: not found\n"))
    assert runner.probe() == "no host of the profile can run a job: gpu01: docker does not answer (docker: not found)"


def test_ssh_copies_the_job_over_and_starts_it_in_its_own_session(tmp_path: Path) -> None:
    started: list[list[str]] = []

    class Proc:
        pid = 4242

        def poll(self):
            return None

    def popen(args, **kwargs):
        started.append(args)
        return Proc()

    run = FakeSsh()
    runner = SshRunner("A10", SshPlace(hosts=["gpu01"], gpus=1), "r1", run=run, popen=popen)
    local = tmp_path / "job"
    (local / "inputs").mkdir(parents=True)
    spec = JobSpec("gpu", "A10", "A10", IMAGE, runner.node_folder(local), gpus=1)
    assert str(spec.folder).startswith("/tmp/ngc-paddle-gates/r1-")
    handle = runner.submit([Placed(spec, local)])[0]
    assert handle == "gpu01 pid 4242" and runner.describe(handle) == "ssh gpu01 pid 4242"
    folder = shlex.quote(str(spec.folder))
    assert run.calls[0][-1] == f"mkdir -p {folder} && tar -xf - -C {folder}"
    assert started[0][-1] == f"cd {folder} && NGC_ATTEMPT=1 exec setsid -w bash job.sh"
    assert runner.states([handle])[handle].state == "RUNNING"
