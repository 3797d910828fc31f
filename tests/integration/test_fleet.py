"""The fan-out against real places: a one-node Slurm cluster (toolchain/ensure-slurm.sh: slurmctld, slurmd, munge
from Debian's packages, on 127.0.0.1) and an sshd this test starts, each running the cpu flavor's image by digest
from a registry of the tests' own (127.0.0.1:5019).

Covered: the cpu flavor's gates as a Slurm job next to the same validation through the local runner and the
session's default bench-rn50 run on this host (same verdicts, same configuration, figures within noise), a profile
on an empty partition (NOT PROVEN, nothing submitted) and a GPU profile on a node without GPUs (N/A), a job killed
mid-run (requeued once, then NOT RUN, its container removed by the Epilog), Ctrl-C during the run (jobs cancelled,
squeue empty, the rerun keeps what passed), a bad fleet file (exit 2, nothing submitted), and the SSH runner with a
key that only an ssh-agent holds (and a two-node SSH profile whose two hosts are that sshd: one launch across two
containers), and a release through the fleet whose Slurm job runs the A/B against the previous
release's image on its node (its verdict in the cell, the notes' section per profile). The validation runs its
`fast` checks (the whole suite runs in test_validation.py); the Slurm job's benchmark runs for real so that its
figures can be compared with the session's run here (conftest.rn50_default).
"""

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from ngc_paddle.release.stages import push
from tests.integration.conftest import CLI, INTERRUPTIBLE, REPO, BenchRun, previous_release, remove_previous, scratch

REGISTRY = "127.0.0.1:5019"  # the tests' own; toolchain/ensure-registry.sh starts it through `ngc-paddle gates`
RELEASE = "26.12"
FAST = ["-m", "fast"]
SHORT = ["--steps", "4", "--warmup", "1", "--infer-iters", "10"]  # an A/B round's length on CPUs (ab/plan.py)


@pytest.fixture(scope="module", autouse=True)
def cluster() -> None:
    proc = subprocess.run(["bash", str(REPO / "toolchain" / "ensure-slurm.sh")], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"no Slurm cluster: {proc.stderr.strip()[-500:]}; fix: make fleet-toolchain")


@pytest.fixture
def root(tmp_path: Path, built) -> Path:
    """A copy of the repository (same image name: the image `built` made) whose build/ is the test's own."""
    return scratch(tmp_path / "repo", "ngc-paddle")


def fleet(root: Path, name: str, profiles: dict) -> Path:
    path = root / "fleets" / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"profiles": profiles}, sort_keys=False))
    return path


def gates_args(root: Path, fleet_file: Path, *extra: str) -> list[str]:
    return [*CLI, "--root", str(root), "gates", RELEASE, "--flavor", "cpu", "--fleet", str(fleet_file),
            "--registry", REGISTRY, *extra]


def gates(root: Path, fleet_file: Path, *extra: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(gates_args(root, fleet_file, *extra), capture_output=True, text=True, cwd=REPO,
                          timeout=timeout)


def cells(root: Path) -> dict:
    state = json.loads((root / "build" / "release" / RELEASE / "state.json").read_text())
    return state["cpu"]["gates"]["profiles"]


def our_jobs() -> list[str]:
    """Jobs of the fan-out still queued or running on the cluster."""
    out = subprocess.run(["squeue", "-h", "-o", "%i %j %T"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if " ngc-gates-" in line]


def containers_of(job: str) -> list[str]:
    return subprocess.run(["docker", "ps", "-aq", "--filter", f"label=ngc-paddle.slurm-job=ngc-paddle/{job}"],
                          capture_output=True, text=True, check=True).stdout.split()


def rn50(root: Path, cell: dict) -> dict:
    results = sorted((root / cell["folder"]).glob("attempt-*/bench/bench-rn50/*/result.json"))
    return json.loads(results[-1].read_text())


def test_a_bad_fleet_file_is_one_line_and_submits_nothing(tmp_path: Path) -> None:
    root = scratch(tmp_path / "repo", "ngc-paddle")
    before = our_jobs()
    bad = fleet(root, "bad", {"cpu": {"slurm": {"partition": "cpu", "gres": "gpu"}}})
    proc = gates(root, bad, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"error: {bad}: profiles.cpu.slurm.gres: ")
    assert our_jobs() == before == []  # nothing submitted (and nothing pushed: no state was written)
    assert not (root / "build" / "release" / RELEASE / "state.json").exists()


@pytest.mark.alone
def test_the_cpu_gates_through_slurm_agree_with_the_same_gates_here(root: Path, rn50_default: BenchRun) -> None:
    slurm = fleet(root, "lab", {
        "cpu": {"slurm": {"partition": "cpu", "cpus_per_task": 2, "time": "00:30:00"}, "validate": FAST,
                "bench": {"bench-rn50": []}},
        "cpu-empty": {"hardware": "cpu", "slurm": {"partition": "empty"}, "validate": FAST},
        "A100-80GB": {"flavors": ["cpu"], "slurm": {"partition": "gpu", "gres": "gpu:1"}, "validate": FAST}})
    started = time.monotonic()
    proc = gates(root, slurm)
    slurm_s = time.monotonic() - started
    out = proc.stdout
    assert proc.returncode == 3, out[-3000:] + proc.stderr  # a profile without nodes, one without its GPU
    found = cells(root)
    cpu, empty, a100 = found["cpu"], found["cpu-empty"], found["A100-80GB"]
    assert cpu["status"] == "PASS", cpu["detail"]
    assert cpu["runner"] == "slurm" and cpu["job"].startswith("slurm job ") and cpu["node"] == socket.gethostname()
    assert cpu["validation"] == "PASS" and cpu["bench"] == {"bench-rn50": "PASS"}
    state = json.loads((root / "build" / "release" / RELEASE / "state.json").read_text())
    digest = state["cpu"]["candidate"]["digest"]
    assert cpu["facts"]["image"] == f"{REGISTRY}/ngc-paddle@{digest}"  # the candidate, by digest, not a tag
    assert empty["status"] == "NOT PROVEN" and empty["detail"] == "partition 'empty' has no nodes (sinfo)"
    assert "job" not in empty and "cpu@cpu-empty: NOT PROVEN: partition 'empty' has no nodes" in out
    assert a100["status"] == "N/A" and "gave the job 0 NVIDIA GPU(s), the profile asks for 1" in a100["detail"]
    job = cpu["job"].split()[-1]
    assert f"cpu@cpu: slurm job {job} submitted" in out and f"slurm job {job} running on " in out
    report = (root / "build" / "release" / RELEASE / "gates.md").read_text()
    assert f"| cpu | cpu | PASS | PASS | PASS | {socket.gethostname()} (no GPU) | slurm job {job} |" in report
    assert our_jobs() == [] and containers_of(job) == []
    assert proc.stderr.startswith("error: gates of 26.12 NOT PROVEN")

    # Here: the local runner with the same validation; the benchmark is the session's default run of bench-rn50 on
    # this host (the benchmark's own test reads it too), the same command the job ran.
    local = fleet(root, "here", {"cpu": {"local": {}, "validate": FAST, "bench": {}}})
    started = time.monotonic()
    here = gates(root, local)
    local_s = time.monotonic() - started
    assert here.returncode == 0, here.stdout[-3000:] + here.stderr
    mine = cells(root)["cpu"]
    assert mine["runner"] == "local" and mine["job"].startswith("local pid ")
    assert (mine["status"], mine["validation"]) == (cpu["status"], cpu["validation"])
    assert mine["detail"].split(";")[0] == cpu["detail"].split(";")[0]  # the same checks passed, failed, skipped
    there, here_ = rn50(root, cpu), rn50_default.result
    assert {"bench-rn50": here_["verdict"]} == cpu["bench"]
    assert there["config"] == here_["config"]  # the same run: threads, batch, sizes, steps
    assert there["environment"]["hardware"] == here_["environment"]["hardware"]  # the same CPU and thread count
    a, b = (r["results"]["train"]["fp32"]["efficiency"] for r in (there, here_))
    print(f"\ntrain fp32 efficiency: slurm {a:.3f}, here {b:.3f}; wall: slurm {slurm_s:.0f} s, "
          f"here (validation) {local_s:.0f} s")
    # Within noise: the efficiency is the training's FLOP/s over a peak probed just before it, and other work on this
    # shared 2-core host moves one against the other (0.32-0.77 seen for the same run here); a job that ran on other
    # hardware, another thread count or another configuration differs beyond that, or fails the assertions above.
    assert 1 / 3 < a / b < 3, (a, b)


def run_until(root: Path, fleet_file: Path, wanted: list[str], timeout: float = 600) -> tuple[subprocess.Popen, list]:
    """Start `gates` in a session of its own and read its output until every line of `wanted` was seen in order."""
    proc = subprocess.Popen(gates_args(root, fleet_file), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, **INTERRUPTIBLE)
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        seen.append(line)
        if wanted and wanted[0] in line:
            wanted.pop(0)
            if not wanted:
                break
        if time.monotonic() > deadline:
            break
    return proc, seen


def test_a_job_killed_mid_run_is_requeued_once_then_not_run(root: Path) -> None:
    lab = fleet(root, "lab", {"cpu": {"slurm": {"partition": "cpu", "cpus_per_task": 2}, "validate": FAST,
                                      "bench": {"bench-rn50": []}}})  # long enough to be killed while it runs
    proc, seen = run_until(root, lab, [" running on "])
    job = next(line for line in seen if " running on " in line).split("slurm job ")[1].split()[0]
    time.sleep(5)  # the validation's container is up
    subprocess.run(["scancel", "--signal=KILL", "--batch", job], check=True)  # as the OOM killer or a dead node would
    for line in proc.stdout:  # requeued by the fan-out (scontrol requeue), started again under the same id
        seen.append(line)
        if "requeued (attempt 2 of 2)" in "".join(seen) and " running on " in line:
            break
    time.sleep(5)
    subprocess.run(["scancel", "--signal=KILL", "--batch", job], check=True)
    rest, _ = proc.communicate(timeout=300)
    out = "".join(seen) + rest
    assert proc.returncode == 3, out[-3000:]
    cell = cells(root)["cpu"]
    assert cell["status"] == "NOT RUN" and len(cell["attempts"]) == 2, cell
    assert [a["state"].split()[0] for a in cell["attempts"]] == ["FAILED", "FAILED"]
    assert cell["detail"].startswith(f"attempt 1: slurm job {job} FAILED") and "attempt 2:" in cell["detail"]
    assert "requeued (attempt 2 of 2)" in out and "PASS" not in cell["status"]
    assert our_jobs() == [] and containers_of(job) == []  # the Epilog removed what the killed script left running


def test_ctrl_c_cancels_the_jobs_and_the_rerun_keeps_what_passed(root: Path) -> None:
    # slow: the suite's slow checks (every shipped command's smoke run), still running when quick's fast checks are
    # done; no benchmark, so no efficiency gate decides and the test may run beside others
    lab = fleet(root, "lab", {
        "quick": {"hardware": "cpu", "slurm": {"partition": "cpu", "cpus_per_task": 1}, "validate": FAST, "bench": {}},
        "slow": {"hardware": "cpu", "slurm": {"partition": "gpu", "cpus_per_task": 1}, "validate": ["-m", "slow"],
                 "bench": {}}})
    proc, seen = run_until(root, lab, ["cpu@quick: slurm job"])
    for line in proc.stdout:
        seen.append(line)
        if "cpu@quick: slurm job" in line and " done " in line:
            break
    assert "cpu@slow" in "".join(seen) and " done " not in "".join(s for s in seen if "cpu@slow" in s)
    os.killpg(proc.pid, signal.SIGINT)
    rest, _ = proc.communicate(timeout=300)
    out = "".join(seen) + rest
    assert proc.returncode == 130, out[-3000:]
    assert "cancelling 1 job(s)" in out and "rerun the same command to resume" in out
    assert our_jobs() == []  # squeue empty: nothing of the run is left queued or running
    slow_job = cells(root)["slow"]["job"].split()[-1]
    assert containers_of(slow_job) == []
    quick = cells(root)["quick"]
    assert quick["status"] == "PASS" and cells(root)["slow"]["status"] == "NOT RUN"

    again = gates(root, lab)
    assert "cpu@quick: unchanged since" in again.stdout and "PASS kept" in again.stdout
    assert "cpu@quick: slurm job" not in again.stdout and "cpu@slow: slurm job" in again.stdout
    assert again.returncode == 0, again.stdout[-2000:]
    assert cells(root)["slow"]["status"] == "PASS" and cells(root)["quick"] == quick


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def sshd(tmp_path: Path):
    """An sshd on 127.0.0.1 that takes one key, which only an ssh-agent started here holds (its file is deleted)."""
    subprocess.run(["bash", str(REPO / "toolchain" / "ensure-sshd.sh")], check=True)
    ssh = tmp_path / "ssh"
    ssh.mkdir(mode=0o700)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ssh / "host_key")], check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ssh / "user_key")], check=True)
    (ssh / "authorized_keys").write_text((ssh / "user_key.pub").read_text())
    port = free_port()
    (ssh / "known_hosts").write_text(f"[127.0.0.1]:{port} {(ssh / 'host_key.pub').read_text()}")
    (ssh / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {ssh}/host_key\nAuthorizedKeysFile {ssh}/authorized_keys\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        f"StrictModes no\nPidFile {ssh}/sshd.pid\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation folder
    server = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(ssh / "sshd_config")],
                              stderr=subprocess.PIPE, text=True)
    agent_out = subprocess.run(["ssh-agent", "-s"], capture_output=True, text=True, check=True).stdout
    agent = dict(part.split("=", 1) for part in agent_out.replace(";", "\n").split() if "=" in part)
    env = {"SSH_AUTH_SOCK": agent["SSH_AUTH_SOCK"], "SSH_AGENT_PID": agent["SSH_AGENT_PID"]}
    subprocess.run(["ssh-add", "-q", str(ssh / "user_key")], check=True, env={**os.environ, **env},
                   capture_output=True)
    (ssh / "user_key").unlink()  # from here on the key is in the agent only
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    try:
        yield {"host": f"root@127.0.0.1:{port}", "known_hosts": str(ssh / "known_hosts"), "env": env}
    finally:
        server.terminate()
        server.wait(timeout=30)
        os.kill(int(env["SSH_AGENT_PID"]), signal.SIGTERM)


def test_the_ssh_runner_runs_the_gates_on_a_host_with_the_agents_key(root: Path, sshd: dict, tmp_path: Path,
                                                                     monkeypatch) -> None:
    work = tmp_path / "remote-work"
    place = {"hosts": [sshd["host"]], "known_hosts": sshd["known_hosts"], "work_dir": str(work)}
    if os.environ.get("DOCKER_HOST"):
        place["docker_host"] = os.environ["DOCKER_HOST"]  # the engine the image is in; an ssh session gets no env
    lab = fleet(root, "ssh", {"cpu": {"ssh": place, "validate": FAST, "bench": {}}})
    for name, value in sshd["env"].items():
        monkeypatch.setenv(name, value)
    proc = gates(root, lab)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    cell = cells(root)["cpu"]
    assert cell["status"] == "PASS" and cell["runner"] == "ssh" and cell["validation"] == "PASS"
    assert cell["job"].startswith(f"ssh {sshd['host']} pid ") and cell["facts"]["hostname"] == socket.gethostname()
    assert (root / cell["folder"] / "attempt-1" / "validation" / "validation.json").is_file()  # brought back
    assert list(work.iterdir()) == []  # and removed on the host

    monkeypatch.delenv("SSH_AUTH_SOCK")  # no agent: no key, and nothing else is tried
    refused = gates(root, fleet(root, "ssh2", {"cpu": {"ssh": {**place, "work_dir": str(work / "b")},
                                                       "validate": ["-m", "fast and not slow"], "bench": {}}}))
    assert refused.returncode == 3 and "Permission denied (publickey)" in cells(root)["cpu"]["detail"]


@pytest.mark.alone
def test_a_fleet_release_runs_the_ab_on_the_jobs_node_and_the_notes_show_it_per_profile(root: Path, built) -> None:
    """`ngc-paddle release --fleet`: the cpu profile's Slurm job runs the candidate and then, on the same node, the
    A/B against the previous release's image (26.11's, found by the default lookup, pulled by digest on the node).
    Two smoke rounds are too few for an interval to decide: the A/B is NOT PROVEN every time, and since validation
    and benchmark pass on their own, the cell is NOT PROVEN by its A/B alone (the verdict folded into the cell),
    which holds the release (exit 3). The job's ab.json, the cell and the notes' per-profile section agree."""
    push.ensure_registry(REGISTRY)  # the tests' registry, as `ngc-paddle gates` starts it
    reference = previous_release(root, built.image, REGISTRY)
    waived = root / "security" / "waived.yaml"  # no vulnerability feed reaches the test host (as the release tests)
    waived.write_text((root / "security" / "policy.yaml").read_text()
                      + "vulnerability_waiver: {reason: no feed on the test host, expires: 2099-12-31}\n")
    lab = fleet(root, "lab", {"cpu": {"slurm": {"partition": "cpu", "cpus_per_task": 2, "time": "00:30:00"},
                                      "validate": FAST, "bench": {"bench-rn50": SHORT}}})
    try:
        proc = subprocess.run([*CLI, "--root", str(root), "release", RELEASE, "--flavor", "cpu", "--fleet", str(lab),
                               "--registry", REGISTRY, "--bench", "bench-rn50", "--policy", str(waived),
                               "--no-attest", "--ab-smoke", "--ab-rounds", "2"],
                              capture_output=True, text=True, cwd=REPO, timeout=1800)
    finally:
        remove_previous(root, REGISTRY)
    out = proc.stdout
    assert proc.returncode == 3, out[-3000:] + proc.stderr
    state = json.loads((root / "build" / "release" / RELEASE / "state.json").read_text())["cpu"]
    assert "ab" not in state and "bench" not in state  # on a fleet they are the jobs' (the `gates` stage)
    assert state["scan"]["status"] == state["month-over-month"]["status"] == "passed", state
    assert proc.stderr.strip().splitlines()[-1].startswith(f"error: release {RELEASE} blocked by: cpu: gates gate "
                                                            "NOT PROVEN")
    cell = state["gates"]["profiles"]["cpu"]
    job = cell["job"].split()[-1]
    assert cell["runner"] == "slurm" and cell["node"] == socket.gethostname() and cell["validation"] == "PASS"
    # NOT PROVEN by the bench itself only where it says why: a CPU kind without floors (the A/B decides the bench),
    # or a work that outran the probes beside it (a host busier during the probes than the work), probed again
    undecided = "no floor for CPU kind" in cell["detail"] or "rechecked with 3 more probes" in cell["detail"] or \
        "probed again after the work" in cell["detail"]
    assert cell["bench"] == {"bench-rn50": "NOT PROVEN" if undecided else "PASS"}, cell["detail"]
    assert cell["ab"] == cell["status"] == "NOT PROVEN", cell
    assert f"A/B NOT PROVEN against {reference} (2 rounds)" in cell["detail"]

    summary = json.loads((root / cell["folder"] / "attempt-1" / "bench-ab" / "ab.json").read_text())
    assert summary["candidate"]["digest"] == state["candidate"]["digest"] == cell["facts"]["image_digest"]
    assert summary["reference"]["digest"] == reference.split("@")[1] != summary["candidate"]["digest"]
    node = summary["node"]
    assert (node["hostname"], node["slurm_node"]) == (socket.gethostname(), cell["node"])
    assert node["slurm_job"].split("_")[0] == job.split("_")[0], node  # the job it ran in (an array's: JOB_TASK)
    assert (summary["rounds"], summary["warmup_rounds"]) == (2, 1) and summary["verdict"] == "NOT PROVEN"
    train = next(m for m in summary["metrics"] if m["key"] == "bench-rn50:train.fp32.ips")
    assert train["rounds"] == 2 and train["status"] == "NOT PROVEN"  # too few rounds for an interval
    rounds = {(s["round"], s["image"]) for s in summary["samples"] if s["metric"] == train["key"]}
    assert rounds == {(r, side) for r in range(3) for side in ("candidate", "reference")}

    notes = (root / "release-notes" / f"{RELEASE}.md").read_text()
    section = notes.split("## This month vs last month: A/B (cpu)", 1)[1].split("\n## ", 1)[0]
    assert section.lstrip().startswith(f"### cpu ({cell['job']}, {cell['node']})") and "### this host" not in section
    assert f"last month: {reference}" in section and "- verdict: **NOT PROVEN** (2 rounds" in section
    for m in summary["metrics"]:
        assert f"| {m['ratio']:.3f} | [{m['low']:.3f}, {m['high']:.3f}] | {m['status']} |" in section, (m, section)
    assert f"| cpu | gates | not proven | cpu: NOT PROVEN ({cell['job']} on {cell['node']})" in notes
    assert our_jobs() == [] and containers_of(job) == []


# Two data-parallel tasks at the data-parallel tests' smoke size (test_data_parallel.py): one thread each, 32 px.
DP_SMOKE = ["--mode", "train", "--threads", "1", "--steps", "2", "--warmup", "1", "--batch-size", "2",
            "--image-size", "32", "--num-classes", "10", "--lr-warmup-epochs", "0"]


def test_a_two_task_profile_runs_two_containers_in_one_slurm_step(tmp_path: Path, built) -> None:
    """A profile with tasks_per_node: 2 on the one-node cluster: sbatch asks for two tasks, the job's validation runs
    once, and bench-rn50 runs as two containers started by one srun (one Slurm step), joined through gloo as the two
    nodes of one launch with the master on the node (the loopback: the job has one node). The verdict names both tasks
    and both ranks, the report holds two ranks with equal parameters after every step, the scaling is in the cell."""
    root = scratch(tmp_path / "repo", built.image.split(":")[0])
    lab = fleet(root, "dp", {"cpu": {"slurm": {"partition": "cpu", "tasks_per_node": 2, "cpus_per_task": 1,
                                               "time": "00:10:00"},
                                     "validate": ["-k", "two_cpu_processes"],  # the gloo check alone: cost
                                     "bench": {"bench-rn50": DP_SMOKE}}})
    started = time.monotonic()
    proc = gates(root, lab, timeout=600)
    seconds = time.monotonic() - started
    out = proc.stdout
    cell = cells(root)["cpu"]
    job = cell["job"].split()[-1]
    print(f"\ntwo-task fleet job: {seconds:.0f} s; {cell['status']}: {cell['detail'][:600]}")
    assert cell["runner"] == "slurm" and cell["validation"] == "PASS", out[-3000:] + proc.stderr
    host = socket.gethostname()
    assert cell["nodes"] == [host] and cell["facts"]["tasks"] == "2", cell
    folder = root / cell["folder"] / "attempt-1"
    two_ranks_joined(cell, folder, host)
    steps = (folder / "steps.tsv").read_text().splitlines()
    assert [line.split("\t")[0] for line in steps] == ["validate", "bench-rn50"]  # the validation once per job
    tasks = [line.split("\t") for line in (folder / "bench" / "bench-rn50" / "tasks.tsv").read_text().splitlines()]
    assert sorted(t[0] for t in tasks) == ["0", "1"] and {t[3] for t in tasks} == {f"{job}.0"}, tasks  # one step
    assert our_jobs() == [] and containers_of(job) == []


def test_a_two_node_ssh_profile_runs_one_launch_across_its_two_hosts(tmp_path: Path, built, sshd: dict,
                                                                     monkeypatch) -> None:
    """An SSH profile of two nodes whose two hosts are the test's sshd (each node its own folder in the work dir):
    the runner asks the first host for a port, starts the job script on both, and bench-rn50 runs as two containers
    on the host network, joined through gloo as the two nodes of one launch with the master on the first host. The
    verdict names both hosts, both tasks and both ranks, rank 0's report holds equal parameters on both ranks, the
    scaling is in the cell, and nothing is left on the hosts. No efficiency gate decides here (a PASS or NOT PROVEN
    bench, as in the two-task Slurm test): it runs beside other tests."""
    root = scratch(tmp_path / "repo", built.image.split(":")[0])
    work = tmp_path / "remote-work"
    lab = two_node_fleet(root, sshd, work, DP_SMOKE, monkeypatch)
    started = time.monotonic()
    proc = gates(root, lab, timeout=600)
    cell = cells(root)["cpu"]
    print(f"\ntwo-node ssh job: {time.monotonic() - started:.0f} s; {cell['status']}: {cell['detail'][:600]}")
    assert cell["runner"] == "ssh" and cell["validation"] == "PASS", proc.stdout[-3000:] + proc.stderr
    assert cell["job"].startswith(f"ssh {sshd['host']} pid ") and cell["job"].endswith("(+1 node(s))"), cell["job"]
    assert cell["nodes"] == ["127.0.0.1", "127.0.0.1"] and cell["facts"]["tasks"] == "2", cell
    two_ranks_joined(cell, root / cell["folder"] / "attempt-1", socket.gethostname())
    assert (root / cell["folder"] / "nodes" / "1" / "attempt-1" / "facts.txt").is_file()  # node 1's folder came back
    assert list(work.iterdir()) == []  # both nodes' folders removed on the hosts


def test_ctrl_c_stops_both_nodes_of_a_two_node_ssh_job(tmp_path: Path, built, sshd: dict, monkeypatch) -> None:
    """Ctrl-C while a two-node SSH job's benchmark runs as its two containers: both hosts' job scripts are stopped,
    their containers removed, the cell NOT RUN, the gates command ends 130."""
    root = scratch(tmp_path / "repo", built.image.split(":")[0])
    work = tmp_path / "remote-work"
    lab = two_node_fleet(root, sshd, work, [*DP_SMOKE, "--steps", "2000"], monkeypatch)
    proc, seen = run_until(root, lab, ["cpu@cpu: ssh "])
    names: list[str] = []
    deadline = time.monotonic() + 300
    while len(names) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(1)
        names = [n for n in running("-bench-rn50-task") if mounts(n).startswith(str(work))]  # this test's job
    assert len(names) == 2, "".join(seen)  # both nodes' containers of one launch
    os.killpg(proc.pid, signal.SIGINT)
    rest, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, ("".join(seen) + rest)[-3000:]
    assert [n for n in running("-bench-rn50-task") if n in names] == []  # both removed by their job's trap
    outcomes = [path.read_text() for path in sorted(work.glob("*/attempt-1/outcome"))]
    assert outcomes == ["interrupted: SIGTERM\n"] * 2, outcomes  # each node's script stopped, not left to end
    assert cells(root)["cpu"]["status"] == "NOT RUN"


def two_node_fleet(root: Path, sshd: dict, work: Path, bench_args: list[str], monkeypatch) -> Path:
    """A fleet of one two-node SSH profile whose two hosts are the test's sshd (each node its own folder in `work`),
    running the gloo check and bench-rn50 with `bench_args`; the agent's key is this process's from here on."""
    place = {"hosts": [sshd["host"], sshd["host"]], "nodes": 2, "known_hosts": sshd["known_hosts"],
             "work_dir": str(work)}
    if os.environ.get("DOCKER_HOST"):
        place["docker_host"] = os.environ["DOCKER_HOST"]
    for name, value in sshd["env"].items():
        monkeypatch.setenv(name, value)
    return fleet(root, "ssh-dp", {"cpu": {"ssh": place, "validate": ["-k", "two_cpu_processes"],
                                          "bench": {"bench-rn50": bench_args}}})


def running(part: str) -> list[str]:
    """The containers whose name holds `part` (running or not)."""
    return subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}", "--filter", f"name={part}"],
                          capture_output=True, text=True, check=True).stdout.split()


def mounts(name: str) -> str:
    return subprocess.run(["docker", "inspect", "-f", "{{range .Mounts}}{{.Source}} {{end}}", name],
                          capture_output=True, text=True).stdout.strip()


def two_ranks_joined(cell: dict, folder: Path, host: str) -> None:
    """A two-task (or two-node) bench-rn50 on this host, read back: the master on the loopback, both tasks and both
    ranks named, the scaling in the cell, no data missing, and one report (rank 0's, whichever task held it) whose
    ranks ended every step with equal parameters: a real all-reduce."""
    assert cell["facts"]["master"].startswith("127.0.0.1:"), cell["facts"]
    named = [t.split(" exit ")[0] for t in cell["tasks"] if " task " in t]
    assert named == [f"bench-rn50 task 0 on {host}", f"bench-rn50 task 1 on {host}"], cell["tasks"]
    assert {t for t in cell["tasks"] if " rank " in t} == {f"bench-rn50 rank 0 on {host}#0",
                                                           f"bench-rn50 rank 1 on {host}#1"}, cell["tasks"]
    assert "bench-rn50 fp32" in cell["scaling"] and cell["scaling"]["bench-rn50 fp32"] > 0, cell
    assert cell["bench"]["bench-rn50"] in ("PASS", "NOT PROVEN"), cell["detail"]
    assert "NOT PROVEN: " not in cell["detail"].split("bench-rn50 on 2 task(s)")[-1], cell["detail"]  # no data missing
    results = sorted(folder.glob("bench/bench-rn50/task-*/*/result.json"))
    assert len(results) == 1, results  # rank 0's task writes the report
    dp = json.loads(results[0].read_text())["results"]["data_parallel"]["fp32"]
    assert [(r["rank"], r["node_rank"]) for r in dp["ranks"]] == [(0, 0), (1, 1)], dp
    sums = [r["param_checksums"] for r in dp["ranks"]]
    assert sums[0] == sums[1] and len(sums[0]) == 3, sums
