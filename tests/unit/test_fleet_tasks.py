"""Profiles of several Slurm tasks (nodes x tasks_per_node): the schema's refusals, sbatch's request, the job script's
one srun step of one container per task (run with fake tools that play each task), and the verdict read back."""

import json
import shutil
import socket
from pathlib import Path

import pytest
import yaml

from ngc_paddle.release.fleet import fleet_schema, results
from ngc_paddle.release.fleet.cells import Cell
from ngc_paddle.release.fleet.fleet_schema import SlurmPlace
from ngc_paddle.release.fleet.payload import JobSpec
from ngc_paddle.release.fleet.runners.interface import JobState, Placed
from ngc_paddle.release.fleet.runners.slurm_commands import Slurm
from ngc_paddle.release.stages import gates
from tests.unit import test_fleet_payload
from tests.unit.test_fleet_fanout import IMAGE, finished
from tests.unit.test_fleet_payload import attempt, calls, run, spec
from tests.unit.test_fleet_slurm import Fake

fake_tools = test_fleet_payload.fakes  # the fixture `fakes` (fake docker, srun, ...), for this file's tests too


def load(tmp_path: Path, repo: Path, profile: dict) -> fleet_schema.Fleet:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump({"profiles": {"cpu": profile}}))
    return fleet_schema.load(path, repo)


def test_a_profile_asks_for_nodes_and_tasks_per_node(tmp_path: Path, repo: Path) -> None:
    fleet = load(tmp_path, repo, {"slurm": {"partition": "cpu", "nodes": 2, "tasks_per_node": 4}})
    assert fleet.profiles["cpu"].tasks == 8
    assert load(tmp_path, repo, {"slurm": {"partition": "cpu"}}).profiles["cpu"].tasks == 1


@pytest.mark.parametrize(("profile", "where", "what"), [
    ({"slurm": {"partition": "cpu", "nodes": 0}}, "profiles.cpu.slurm.nodes", "greater than or equal to 1"),
    ({"slurm": {"partition": "cpu", "tasks_per_node": 65}}, "profiles.cpu.slurm.tasks_per_node", "less than"),
    ({"slurm": {"partition": "cpu", "tasks_per_node": 2, "container": "pyxis"}}, "profiles.cpu.slurm",
     "container 'pyxis' is not supported for several tasks yet"),
    ({"ssh": {"hosts": ["a", "b"], "nodes": 3}}, "profiles.cpu.ssh", "nodes: 3 with 2 host(s)"),
    ({"ssh": {"hosts": ["a", "b"], "nodes": 2, "container": "apptainer"}}, "profiles.cpu.ssh",
     "container 'apptainer' is not supported for several nodes yet"),
    ({"ssh": {"hosts": ["a"], "master_addr": "10.0.0.1"}}, "profiles.cpu.ssh", "master_addr: is the first host's"),
    ({"ssh": {"hosts": ["a", "b"], "nodes": 2}, "bench": {"bench-rn50": ["--nnodes=2"]}}, "profiles.cpu",
     "'--nnodes=2' is set by the job across its 2 tasks"),
    ({"slurm": {"partition": "cpu", "nodes": 2}, "bench": {"bench-rn50": ["--master", "x:1"]}}, "profiles.cpu",
     "'--master' is set by the job across its 2 tasks"),
])
def test_a_bad_task_request_is_one_line(tmp_path: Path, repo: Path, profile: dict, where: str, what: str) -> None:
    with pytest.raises(fleet_schema.FleetError) as caught:
        load(tmp_path, repo, profile)
    line = str(caught.value)
    assert caught.value.exit_code == 2 and "\n" not in line and "fix: " in line, line
    assert line.startswith(f"{tmp_path / 'fleet.yaml'}: {where}: ") and what in line, line


def test_sbatch_asks_for_the_nodes_and_tasks(tmp_path: Path) -> None:
    fake = Fake({"sbatch": (0, "4711\n", "")})
    Slurm(fake).submit(tmp_path / "job.sh", SlurmPlace(partition="cpu", nodes=2, tasks_per_node=2, cpus_per_task=1),
                       "n", tmp_path)
    assert {"--nodes=2", "--ntasks-per-node=2", "--cpus-per-task=1"} <= set(fake.calls[0])
    fake = Fake({"sbatch": (0, "4712\n", "")})
    Slurm(fake).submit(tmp_path / "job.sh", SlurmPlace(partition="cpu"), "n", tmp_path)
    assert {"--nodes=1", "--ntasks-per-node=1"} <= set(fake.calls[0])


def play_tasks(bin_dir: Path, tmp_path: Path, hosts: str) -> None:
    """A fake srun that logs its options and runs the task's command once per task (SLURM_PROCID 0, 1, ...), and a
    fake scontrol that lists `hosts` as the job's node list."""
    (bin_dir / "srun").write_text(f"""#!/bin/bash
printf '%q ' srun "$@" >> {tmp_path}/calls.log; echo >> {tmp_path}/calls.log
n=1
while [ "${{1#--}}" != "$1" ]; do case "$1" in --ntasks=*) n=${{1#--ntasks=}} ;; esac; shift; done
for (( t = 0; t < n; t++ )); do SLURM_PROCID=$t SLURM_STEP_ID=0 "$@" || rc=$?; done
exit ${{rc:-0}}
""")
    (bin_dir / "scontrol").write_text(f"#!/bin/bash\n[ \"$*\" = 'show hostnames n[01-02]' ] && printf '{hosts}'\n")
    (bin_dir / "hostname").write_text("#!/bin/bash\necho n01\n")
    for tool in ("srun", "scontrol", "hostname"):
        (bin_dir / tool).chmod(0o755)


def test_a_two_task_job_runs_a_container_per_task_in_one_srun(tmp_path: Path, fake_tools: Path) -> None:
    play_tasks(fake_tools, tmp_path, "n01\\nn02\\n")
    job = spec(tmp_path, benches=(("bench-rn50", ("--smoke",)),), nodes=2, tasks_per_node=1)
    proc = run(tmp_path, fake_tools, [job], {"SLURM_JOB_ID": "57", "SLURM_JOB_NODELIST": "n[01-02]",
                                        "SLURM_JOB_NUM_NODES": "2", "SLURM_CPUS_PER_TASK": "1",
                                        "SLURM_CLUSTER_NAME": "lab"})
    assert proc.returncode == 0, proc.stderr
    made = calls(tmp_path)
    srun = [c for c in made if c[0] == "srun"]
    assert len(srun) == 1  # one Slurm step for both tasks
    assert {"--nodes=2", "--ntasks-per-node=1", "--ntasks=2", "--cpus-per-task=1"} <= set(srun[0])
    runs = [c for c in made if c[:2] == ["docker", "run"]]
    validate, *tasks = runs
    assert validate[validate.index("--network") + 1] == "none"  # the validation runs once, as before
    assert [t[t.index("--name") + 1] for t in tasks] == ["ngc-gates-57-1-bench-rn50-task0",
                                                        "ngc-gates-57-1-bench-rn50-task1"]
    for n, task in enumerate(tasks):
        assert task[task.index("--network") + 1] == "host" and "--hostname" not in task
        assert task[task.index("--label") + 1] == "ngc-paddle.slurm-job=lab/57"
        assert task[task.index(IMAGE) + 1:] == [
            "bench-rn50", "--output", f"/workspace/out/attempt-1/bench/bench-rn50/task-{n}", "--nnodes", "2",
            "--master", "n01:20057", "--smoke"]  # the first node of the job's list, a port from the job id
    lines = (attempt(tmp_path) / "bench" / "bench-rn50" / "tasks.tsv").read_text().splitlines()
    assert lines == ["0\tn01\t0\t57.0", "1\tn01\t0\t57.0"]
    facts = dict(line.split("=", 1) for line in (attempt(tmp_path) / "facts.txt").read_text().splitlines())
    assert (facts["slurm_nodes"], facts["tasks"], facts["master"]) == ("n01,n02", "2", "n01:20057")


def test_a_job_of_one_node_keeps_its_tasks_on_the_loopback(tmp_path: Path, fake_tools: Path) -> None:
    play_tasks(fake_tools, tmp_path, "n01\\n")
    job = spec(tmp_path, benches=(("bench-rn50", ()),), nodes=1, tasks_per_node=2)
    proc = run(tmp_path, fake_tools, [job], {"SLURM_JOB_ID": "58", "SLURM_JOB_NODELIST": "n[01-02]",
                                        "SLURM_JOB_NUM_NODES": "1"})
    assert proc.returncode == 0, proc.stderr
    task = [c for c in calls(tmp_path) if c[:2] == ["docker", "run"]][-1]
    assert task[task.index("--master") + 1] == "127.0.0.1:20058"


def test_a_master_port_another_socket_listens_on_is_passed_over(tmp_path: Path, fake_tools: Path) -> None:
    play_tasks(fake_tools, tmp_path, "n01\\n")
    job = spec(tmp_path, benches=(("bench-rn50", ()),), nodes=1, tasks_per_node=2)
    with socket.socket() as taken:  # another job's master (or any service) on the port this job id derives
        taken.bind(("127.0.0.1", 20000 + 4242))
        taken.listen()
        proc = run(tmp_path, fake_tools, [job], {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "n[01-02]",
                                            "SLURM_JOB_NUM_NODES": "1"})
    assert proc.returncode == 0, proc.stderr
    task = [c for c in calls(tmp_path) if c[:2] == ["docker", "run"]][-1]
    master = task[task.index("--master") + 1]
    assert master.startswith("127.0.0.1:") and int(master.rsplit(":", 1)[1]) > 24242, master


def dp_job(tmp_path: Path, ranks: int = 2, lines: str = "0\tn01\t3\t7.0\n1\tn02\t0\t7.0\n") -> Placed:
    """A finished two-task job: rank 0's report in task 0's folder, the tasks' lines in tasks.tsv."""
    job_spec = JobSpec(flavor="cpu", profile="cpu", hardware="cpu", image=IMAGE, folder=tmp_path / "job",
                       benches=(("bench-rn50", ()),), nodes=2)
    job = Placed(job_spec, tmp_path / "job")
    finished(job)
    bench = job.local / "attempt-1" / "bench" / "bench-rn50"
    result = json.loads((bench / "run-1" / "result.json").read_text())
    result["results"]["data_parallel"] = {"fp32": {
        "procs": ranks, "nodes": [f"n0{r + 1}#{r}" for r in range(ranks)], "ips": 20.0, "reference_ips": 12.5,
        "scaling_efficiency": 0.8, "ranks": [{"rank": r, "node": f"n0{r + 1}", "node_rank": r} for r in range(ranks)]}}
    shutil.rmtree(bench / "run-1")
    (bench / "task-0" / "run-1").mkdir(parents=True)
    (bench / "task-0" / "run-1" / "result.json").write_text(json.dumps(result))
    (bench / "tasks.tsv").write_text(lines)
    return job


DONE = JobState("7", "COMPLETED", "n[01-02]", "", "0:0")


def test_the_verdict_names_every_task_and_rank_and_the_scaling(tmp_path: Path) -> None:
    reading = results.read(dp_job(tmp_path), DONE, "")
    assert reading.bench == {"bench-rn50": "PASS"}, reading.detail
    assert reading.tasks == ["bench-rn50 task 0 on n01 exit 3 (step 7.0)", "bench-rn50 task 1 on n02 exit 0 (step 7.0)",
                             "bench-rn50 rank 0 on n01#0", "bench-rn50 rank 1 on n02#1"]
    assert reading.scaling == {"bench-rn50 fp32": 0.8}
    assert "bench-rn50 on 2 task(s) (task 0 on n01" in reading.detail, reading.detail
    assert "fp32 scaling efficiency 0.80" in reading.detail


@pytest.mark.parametrize(("ranks", "lines", "why"), [
    (2, "0\tn01\t3\t7.0\n", "1 of the job's 2 tasks recorded their end"),
    (1, "0\tn01\t3\t7.0\n1\tn02\t0\t7.0\n", "its report holds 1 rank(s) of the job's 2 tasks"),
])
def test_a_missing_task_or_rank_is_not_proven(tmp_path: Path, ranks: int, lines: str, why: str) -> None:
    reading = results.read(dp_job(tmp_path, ranks, lines), DONE, "")
    assert reading.bench == {"bench-rn50": "NOT PROVEN"} and reading.status == "NOT PROVEN", reading.detail
    assert f"; NOT PROVEN: {why}" in reading.detail, reading.detail


def test_the_gates_outcome_names_a_data_parallel_jobs_nodes_tasks_and_scaling() -> None:
    cell = Cell(key="k", status="PASS", detail="d", profile="cpu", hardware="cpu", runner="slurm", job="slurm job 7",
                node="n01", nodes=["n01", "n02"], facts={"tasks": "2"}, scaling={"bench-rn50 fp32": 0.8},
                finished="now")
    _, outcome = gates.outcome({"cpu": cell})
    assert outcome.detail == "cpu: PASS (slurm job 7 on n01,n02, 2 tasks, bench-rn50 fp32 scaling efficiency 0.80)"
    one = cell.model_copy(update={"nodes": None, "scaling": None})
    assert gates.outcome({"cpu": one})[1].detail == "cpu: PASS (slurm job 7 on n01)"


def test_each_benchmark_of_a_multi_task_job_keeps_its_own_description_tasks_and_verdict(tmp_path: Path) -> None:
    """Two benchmarks of one two-task job: the tasks of both are listed, each detail starts with its benchmark's own
    description; a missing task leaves a benchmark that did not run NOT RUN (its own verdict, not NOT PROVEN)."""
    job = dp_job(tmp_path)
    bench = job.local / "attempt-1" / "bench"
    shutil.copytree(bench / "bench-rn50", bench / "bench-hgnet")
    job = Placed(JobSpec(**{**job.spec.__dict__, "benches": (("bench-rn50", ()), ("bench-hgnet", ()))}), job.local)
    (job.local / "attempt-1" / "steps.tsv").write_text("validate\t0\t5\nbench-rn50\t0\t40\nbench-hgnet\t0\t40\n")
    reading = results.read(job, DONE, "")
    assert reading.bench == {"bench-rn50": "PASS", "bench-hgnet": "PASS"}, reading.detail
    assert [t.split()[0] for t in reading.tasks] == ["bench-rn50"] * 4 + ["bench-hgnet"] * 4
    parts = reading.detail.split("; ")
    assert any(p.startswith("bench-rn50: PASS") for p in parts) and "None" not in reading.detail, reading.detail

    (bench / "bench-hgnet" / "tasks.tsv").write_text("0\tn01\t3\t7.0\n")  # task 1 never recorded its end
    (job.local / "attempt-1" / "steps.tsv").write_text("validate\t0\t5\nbench-rn50\t0\t40\nbench-hgnet\t143\t40\n")
    reading = results.read(job, DONE, "")
    assert reading.bench == {"bench-rn50": "PASS", "bench-hgnet": "NOT RUN"}, reading.detail


def test_a_multi_task_report_whose_results_are_no_mapping_fails_and_does_not_raise(tmp_path: Path) -> None:
    job = dp_job(tmp_path)
    report = job.local / "attempt-1" / "bench" / "bench-rn50" / "task-0" / "run-1" / "result.json"
    report.write_text(json.dumps({**json.loads(report.read_text()), "results": ["not", "a", "mapping"]}))
    reading = results.read(job, DONE, "")
    assert reading.bench == {"bench-rn50": "FAIL"} and "cannot be read" in reading.detail, reading.detail
    report.write_text("{not json")
    reading = results.read(job, DONE, "")  # no exception out of the cell's reading: a FAIL that names the file
    assert reading.bench == {"bench-rn50": "FAIL"} and "cannot be read" in reading.detail, reading.detail
    assert len(reading.tasks) == 2  # the tasks' lines are still there for the notes
