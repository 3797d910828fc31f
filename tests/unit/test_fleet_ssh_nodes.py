"""SSH profiles of several nodes: the job script of one node (run with fake tools), and the runner's orchestration of
the hosts with fake ssh sessions: a copy and a session per host, one master for all, a node that fails stopping the
others with one line naming its host, Ctrl-C reaching every host, and every node's task read back with rank 0's."""

import io
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from ngc_paddle.release.fleet import fleet_schema, task_results
from ngc_paddle.release.fleet.fleet_schema import SshPlace
from ngc_paddle.release.fleet.payload import JobSpec
from ngc_paddle.release.fleet.runners.interface import Placed, SubmitFailed
from ngc_paddle.release.fleet.runners.ssh import NODE_END_GRACE_S, SSH_FAILED, SshRunner
from ngc_paddle.release.fleet.runners.ssh_nodes import port_seed
from tests.unit import test_fleet_fanout, test_fleet_payload
from tests.unit.test_fleet_payload import IMAGE, attempt, calls, run, spec

fake_tools = test_fleet_payload.fakes  # the fixture `fakes` (fake docker, srun, ...), for this file's tests too
run_fanout = test_fleet_fanout.run  # the fixture `run`: a fan-out with fake places
HOSTS = ["release@gpu01:2222", "gpu02"]


def test_a_profile_of_two_ssh_nodes_names_its_hosts(tmp_path: Path, repo: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump({"profiles": {"cpu": {"ssh": {"hosts": HOSTS, "nodes": 2}}}}))
    profile = fleet_schema.load(path, repo).profiles["cpu"]
    assert profile.tasks == 2 and profile.ssh is not None and profile.ssh.hosts == HOSTS


def test_a_node_of_an_ssh_job_runs_its_own_container_as_its_rank(tmp_path: Path, fake_tools: Path) -> None:
    job = spec(tmp_path, benches=(("bench-rn50", ("--smoke",)),), nodes=2)
    proc = run(tmp_path, fake_tools, [job], {"NGC_NODE_RANK": "1", "NGC_SSH_MASTER": "gpu01:20123",
                                             "NGC_SSH_NODES": "gpu01,gpu02"})
    assert proc.returncode == 0, proc.stderr
    made = calls(tmp_path)
    assert not [c for c in made if c[0] == "srun"]  # no Slurm: this host is one node, the runner starts the others
    validate, task = [c for c in made if c[:2] == ["docker", "run"]]
    assert validate[validate.index("--network") + 1] == "none"  # every node validates its own host
    assert task[task.index("--network") + 1] == "host" and task[task.index("--name") + 1].endswith("-bench-rn50-task1")
    assert task[task.index(IMAGE) + 1:] == ["bench-rn50", "--output",
                                            "/workspace/out/attempt-1/bench/bench-rn50/task-1",
                                            "--nnodes", "2", "--master", "gpu01:20123", "--smoke"]
    host = (attempt(tmp_path) / "facts.txt").read_text().split("hostname=")[1].split("\n")[0]
    lines = (attempt(tmp_path) / "bench" / "bench-rn50" / "tasks.tsv").read_text().splitlines()
    assert lines == [f"1\t{host}\t0\tssh node 1"]
    facts = dict(line.split("=", 1) for line in (attempt(tmp_path) / "facts.txt").read_text().splitlines())
    assert (facts["nodes"], facts["node_rank"], facts["tasks"], facts["master"]) == ("gpu01,gpu02", "1", "2",
                                                                                     "gpu01:20123")


def test_the_master_port_comes_from_the_seed_and_touches_no_folder(tmp_path: Path, fake_tools: Path) -> None:
    script = tmp_path / "job.sh"
    run(tmp_path, fake_tools, [spec(tmp_path, nodes=2)])  # writes the script (and a first attempt)
    before = sorted((tmp_path / "job").iterdir())
    proc = subprocess.run(["bash", str(script), "--master-port"], capture_output=True, text=True, timeout=30,
                          env={"PATH": f"{fake_tools}:/usr/bin:/bin", "NGC_PORT_SEED": "40123"})
    assert proc.returncode == 0 and proc.stdout.strip().isdigit(), proc.stderr
    assert 20123 <= int(proc.stdout) < 20123 + 64  # 20000 + seed % 20000, or the next free one
    assert sorted((tmp_path / "job").iterdir()) == before


class Session:
    """A fake ssh session (Popen): running until the test ends it with an exit code."""

    def __init__(self, pid: int) -> None:
        self.pid, self.code, self.killed = pid, None, False

    def poll(self):
        return self.code

    def wait(self, timeout=None):
        return self.code

    def kill(self) -> None:
        self.killed, self.code = True, -9


class Hosts:
    """Fake ssh: answers the port question, takes the copies, ends the sessions it is told to kill (SIGTERM: 143),
    hands back a tar of a node's folder from `folders` (host, folder) -> files."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.sessions: list[tuple[str, str, Session]] = []
        self.folders: dict[str, dict[str, str]] = {}
        self.port_rc = 0

    def host_of(self, args: list[str]) -> str:
        port = args[args.index("-p") + 1] if "-p" in args else ""
        return args[-2] + (f":{port}" if port else "")

    def run(self, args, **kwargs):
        host, command = self.host_of(args), args[-1]
        self.calls.append((host, command))
        out: bytes | str = b"" if "input" in kwargs or "tar -C" in command or "rm -rf" in command else ""
        rc = 0
        if "--master-port" in command:
            out, rc = ("20077\n" if self.port_rc == 0 else ""), self.port_rc
        elif command.startswith("kill -TERM"):
            for h, cmd, session in self.sessions:
                folder = command.split("$(cat ")[1].split("/attempt-")[0]
                if h == host and cmd.startswith(f"cd {folder} ") and session.code is None:
                    session.code = 143
        elif command.startswith("tar -C"):
            folder = command.split()[2]
            files = self.folders.get(f"{host}|{folder}")
            if files is None:
                return subprocess.CompletedProcess(args, SSH_FAILED, b"", b"ssh: connect to host: No route to host\n")
            out = tar(files)
        return subprocess.CompletedProcess(args, rc, out, "" if isinstance(out, str) else b"")

    def popen(self, args, **kwargs):
        session = Session(1000 + len(self.sessions))
        self.sessions.append((self.host_of(args), args[-1], session))
        return session


def tar(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def two_nodes(tmp_path: Path, **place) -> tuple[SshRunner, Hosts, Placed]:
    hosts = Hosts()
    runner = SshRunner("cpu-dp", SshPlace(hosts=HOSTS, nodes=2, **place), "r1", run=hosts.run, popen=hosts.popen)
    local = tmp_path / "job"
    (local / "inputs").mkdir(parents=True)
    job = JobSpec("cpu", "cpu-dp", "cpu", IMAGE, runner.node_folder(local), benches=(("bench-rn50", ()),), nodes=2)
    return runner, hosts, Placed(job, local)


def test_an_ssh_job_of_two_nodes_starts_one_session_per_host_with_one_master(tmp_path: Path) -> None:
    runner, hosts, placed = two_nodes(tmp_path)
    handle = runner.submit([placed])[0]
    folder = placed.spec.folder
    node1 = folder.with_name(folder.name + "-node1")
    copies = [(h, c) for h, c in hosts.calls if "tar -xf" in c]
    assert copies == [("release@gpu01:2222", f"mkdir -p {folder} && tar -xf - -C {folder}"),
                      ("gpu02", f"mkdir -p {node1} && tar -xf - -C {node1}")]  # its own folder on each host
    asked = [(h, c) for h, c in hosts.calls if "--master-port" in c]
    seed = port_seed(folder, 1)
    assert asked == [("release@gpu01:2222", f"cd {folder} && NGC_PORT_SEED={seed} bash job.sh --master-port")]
    started = [(h, c) for h, c, _ in hosts.sessions]
    common = "NGC_ATTEMPT=1 NGC_SSH_MASTER=gpu01:20077 NGC_SSH_NODES=gpu01,gpu02"
    assert started == [("release@gpu01:2222", f"cd {folder} && {common} NGC_NODE_RANK=0 exec setsid -w bash job.sh"),
                       ("gpu02", f"cd {node1} && {common} NGC_NODE_RANK=1 exec setsid -w bash job.sh")]
    assert "NGC_OUT=" + str(node1) in (placed.local / "job-node1.sh").read_text()  # node 1 writes its own folder
    assert handle == "release@gpu01:2222 pid 1000 (+1 node(s))"
    state = runner.states([handle])[handle]
    assert (state.state, state.node) == ("RUNNING", "gpu01,gpu02")


def test_the_master_is_the_address_the_profile_gives(tmp_path: Path) -> None:
    runner, hosts, placed = two_nodes(tmp_path, master_addr="10.0.0.1")
    runner.submit([placed])
    assert all("NGC_SSH_MASTER=10.0.0.1:20077 " in c for _, c, _ in hosts.sessions)


def test_no_free_port_on_the_first_host_is_one_line(tmp_path: Path) -> None:
    runner, hosts, placed = two_nodes(tmp_path)
    hosts.port_rc = 75
    with pytest.raises(SubmitFailed, match=r"^cannot start the job of 2 nodes on release@gpu01:2222: no free port"):
        runner.submit([placed])
    assert hosts.sessions == []


def test_a_node_whose_host_cannot_be_reached_stops_the_others_and_names_the_host(tmp_path: Path) -> None:
    runner, hosts, placed = two_nodes(tmp_path)
    handle = runner.submit([placed])[0]
    (placed.local / "job-1-node1.out").write_text("ssh: connect to host gpu02 port 22: No route to host\n")
    hosts.sessions[1][2].code = SSH_FAILED
    state = runner.states([handle])[handle]
    assert hosts.sessions[0][2].code == 143  # node 0 was stopped at once, not left to wait for its peer
    assert any(h == "release@gpu01:2222" and c.startswith("kill -TERM") for h, c in hosts.calls)
    assert (state.state, state.node) == ("FAILED", "gpu02")
    assert state.reason == "node 1 (gpu02): ssh to gpu02 failed: ssh: connect to host gpu02 port 22: No route to host"
    assert runner.states([handle])[handle].reason == state.reason  # the first failure stays the job's line


def test_a_node_that_ends_well_waits_for_the_others(tmp_path: Path) -> None:
    runner, hosts, placed = two_nodes(tmp_path)
    handle = runner.submit([placed])[0]
    hosts.sessions[1][2].code = 0
    assert runner.states([handle])[handle].state == "RUNNING"
    assert not any(c.startswith("kill") for _, c in hosts.calls)
    hosts.sessions[0][2].code = 0
    assert runner.states([handle])[handle].state == "COMPLETED"


def test_a_node_left_running_long_after_its_peer_ended_is_stopped_and_named(tmp_path: Path) -> None:
    runner, hosts, placed = two_nodes(tmp_path)
    now = [1000.0]
    runner.clock = lambda: now[0]
    handle = runner.submit([placed])[0]
    hosts.sessions[0][2].code = 0  # node 0 ended; node 1 waits on a peer that will never answer
    assert runner.states([handle])[handle].state == "RUNNING"
    now[0] += NODE_END_GRACE_S - 1
    assert runner.states([handle])[handle].state == "RUNNING"  # within the grace: nodes end a little apart
    now[0] += 1
    state = runner.states([handle])[handle]
    assert hosts.sessions[1][2].code == 143 and (state.state, state.node) == ("FAILED", "gpu02")
    assert state.reason == (f"node 1 (gpu02) still ran {NODE_END_GRACE_S:.0f} s after node 0 (release@gpu01:2222) "
                            "ended (a peer lost in a collective); stopped")


def test_cancel_stops_every_hosts_job(tmp_path: Path) -> None:
    runner, hosts, placed = two_nodes(tmp_path)
    handle = runner.submit([placed])[0]
    runner.cancel([handle])
    kills = [(h, c) for h, c in hosts.calls if c.startswith("kill -TERM")]
    assert [h for h, _ in kills] == HOSTS
    assert [s.code for _, _, s in hosts.sessions] == [143, 143]


def test_a_requeue_starts_every_node_again_with_a_new_port_question(tmp_path: Path) -> None:
    runner, hosts, placed = two_nodes(tmp_path)
    handle = runner.submit([placed])[0]
    for _, _, session in hosts.sessions:
        session.code = 75
    placed.attempt = 2
    copies = len([c for _, c in hosts.calls if "tar -xf" in c])
    again = runner.requeue(handle, placed)
    assert len([c for _, c in hosts.calls if "tar -xf" in c]) == copies + 2  # copied again: fetch removed the folders
    assert again != handle and [h for h, _, _ in hosts.sessions[2:]] == HOSTS
    assert all("NGC_ATTEMPT=2 " in c for _, c, _ in hosts.sessions[2:])
    assert f"NGC_PORT_SEED={port_seed(placed.spec.folder, 2)} " in [c for _, c in hosts.calls if "--master" in c][-1]


def test_every_nodes_task_is_read_back_with_rank_0s_folder(tmp_path: Path) -> None:
    runner, hosts, placed = two_nodes(tmp_path)
    handle = runner.submit([placed])[0]
    folder = placed.spec.folder
    node1 = folder.with_name(folder.name + "-node1")
    tasks = "attempt-1/bench/bench-rn50/tasks.tsv"
    report = "attempt-1/bench/bench-rn50/task-1/r/result.json"  # rank 0 went to node 1: it joined first
    hosts.folders[f"release@gpu01:2222|{folder}"] = {tasks: "0\tgpu01\t0\tssh node 0\n", "attempt-1/outcome": "done\n",
                                                     "attempt-1/bench/bench-rn50/task-0/launch-logs/joined.1": ""}
    hosts.folders[f"gpu02|{node1}"] = {tasks: "1\tgpu02\t0\tssh node 1\n", "attempt-1/outcome": "done\n",
                                       report: '{"verdict": "PASS"}'}
    runner.fetch(handle, placed)
    assert (placed.local / tasks).read_text() == "0\tgpu01\t0\tssh node 0\n1\tgpu02\t0\tssh node 1\n"
    assert (placed.local / report).read_text() == '{"verdict": "PASS"}'  # beside node 0's task, as on Slurm
    assert task_results.results_of(placed.local / "attempt-1", "bench-rn50") == [placed.local / report]
    assert (placed.local / "nodes" / "1" / "attempt-1" / "outcome").read_text() == "done\n"
    assert [h for h, c in hosts.calls if c.startswith("rm -rf")] == HOSTS  # removed on both hosts


def test_a_node_whose_folder_cannot_come_back_leaves_its_task_missing(tmp_path: Path) -> None:
    runner, hosts, placed = two_nodes(tmp_path)
    handle = runner.submit([placed])[0]
    tasks = "attempt-1/bench/bench-rn50/tasks.tsv"
    hosts.folders[f"release@gpu01:2222|{placed.spec.folder}"] = {tasks: "0\tgpu01\t0\tssh node 0\n"}
    runner.fetch(handle, placed)  # node 1's host is gone: rank 0's folder still comes back
    assert (placed.local / tasks).read_text() == "0\tgpu01\t0\tssh node 0\n"


class NodesPlace(test_fleet_fanout.FakePlace):
    """A place whose finished job's facts name its two hosts, as an SSH job's rank 0 writes them."""

    def states(self, handles: list[str]):
        found = super().states(handles)
        for handle, state in found.items():
            facts = self.jobs[handle].local / "attempt-1" / "facts.txt"
            if state.state == "COMPLETED":
                facts.write_text(facts.read_text() + "nodes=gpu01,gpu02\nnode_rank=0\ntasks=2\n")
        return found


def test_the_cell_of_an_ssh_job_of_two_nodes_names_both_hosts(run_fanout) -> None:
    place = NodesPlace("cpu", {"cpu": [[("RUNNING", None), ("COMPLETED", {})]]})
    cell = run_fanout({"cpu": {"ssh": {"hosts": HOSTS, "nodes": 2}}}, {"cpu": place})["cpu@cpu"]
    assert cell.nodes == ["gpu01", "gpu02"] and cell.tasks is not None and cell.scaling is not None
    assert "bench-rn50 on 0 task(s)" in cell.detail and cell.status == "FAIL"  # no task ran: never a PASS


def test_a_requeue_that_finds_no_port_fails_its_attempt_with_the_line(tmp_path: Path) -> None:
    runner, hosts, placed = two_nodes(tmp_path)
    handle = runner.submit([placed])[0]
    for _, _, session in hosts.sessions:
        session.code = 75
    hosts.port_rc, placed.attempt = 75, 2
    again = runner.requeue(handle, placed)
    state = runner.states([again])[again]
    assert (state.state, state.reason) == ("FAILED", "cannot start the job of 2 nodes on release@gpu01:2222: no free "
                                                     "port for the master")
    assert len(hosts.sessions) == 2  # nothing started the second time


def test_a_job_of_two_nodes_needs_every_host_to_answer(tmp_path: Path) -> None:
    def run(args, **kwargs):
        down = args[-2] == "gpu02"
        return subprocess.CompletedProcess(args, SSH_FAILED if down else 0, "",
                                           "ssh: connect to host gpu02 port 22: Connection refused\n" if down else "")

    runner = SshRunner("cpu-dp", SshPlace(hosts=HOSTS, nodes=2), "r1", run=run)
    assert runner.probe() == ("a job of 2 nodes runs on every host of the profile: gpu02: ssh: connect to host gpu02 "
                              "port 22: Connection refused")
    one = SshRunner("A10", SshPlace(hosts=HOSTS), "r1", run=run)
    assert one.probe() is None and one.usable == ["release@gpu01:2222"]  # one node: the hosts that answer take turns
