"""The A/B gate and data-parallel runs: a round's training figure is the ranks' summed img/s; a profile of several
Slurm tasks runs its rounds as its own run (one container per task in one srun step, the job's master), never as
single-process runs."""

from pathlib import Path

import pytest
import yaml

from ngc_paddle.release.ab import ab_report, plan
from ngc_paddle.release.ab.metrics import of_result
from ngc_paddle.release.ab.reference import Reference
from ngc_paddle.release.fleet import fanout, fleet_schema
from ngc_paddle.release.fleet.fanout import FanOut, Target
from ngc_paddle.release.fleet.payload import JobSpec
from tests.unit.test_ab_payload import CANDIDATE, ab_folder, docker, docker_runs, run
from tests.unit.test_ab_payload import REFERENCE as AB_REFERENCE
from tests.unit.test_fleet_fanout import IMAGE, FakePlace
from tests.unit.test_fleet_tasks import play_tasks

__all__ = ["docker"]  # the fixture: a fake docker that writes each bench run's result.json

REFERENCE = Reference("127.0.0.1:5019/ngc-paddle@sha256:" + "cd" * 32, "the previous release", "26.11")


def test_a_data_parallel_rounds_train_figure_is_its_ranks_summed_img_s() -> None:
    result = {"results": {"train": {"fp32": {"ips": 3.0}, "bf16": {"ips": 2.0}},
                          "data_parallel": {"fp32": {"procs": 2, "ips": 3.5, "ranks": []}}}}
    found = {m.key: (m.label, v) for m, v in of_result("bench-rn50", result).items()}
    assert found["bench-rn50:train.fp32.ips"] == ("bench-rn50 train fp32 img/s (summed over 2 ranks)", 3.5)
    assert found["bench-rn50:train.bf16.ips"] == ("bench-rn50 train bf16 img/s", 2.0)  # one process: its own


def test_a_two_task_jobs_rounds_run_every_task_as_its_own_run_and_compare_rank_0s_figures(
        tmp_path: Path, docker: Path) -> None:
    play_tasks(docker, tmp_path, "n01\\n")
    base = JobSpec(flavor="cpu", profile="cpu", hardware="cpu", image=CANDIDATE, folder=tmp_path / "job",
                   benches=(("bench-rn50", ("--procs", "1")),), validate=False, nodes=1, tasks_per_node=2)
    spec = plan.with_ab(base, AB_REFERENCE, rounds=3, smoke=True, time_validation=False)
    proc = run(tmp_path, docker, spec, SLURM_JOB_ID="4343", SLURM_JOB_NODELIST="n[01-02]", SLURM_JOB_NUM_NODES="1")
    assert proc.returncode == 0, proc.stderr
    ab = [r for r in docker_runs(tmp_path) if "-ab-round-" in r[r.index("--name") + 1]]
    assert len(ab) == 2 * 2 * 4  # two tasks per image per round: a warm-up round and 3
    first = ab[0]
    assert first[first.index("--name") + 1] == "ngc-gates-4343-1-ref-ab-round-00-bench-rn50-task0"
    assert first[first.index("--network") + 1] == "host"
    assert first[first.index(AB_REFERENCE) + 1:] == [
        "bench-rn50", "--output", "/workspace/out/attempt-1/bench-ab/round-00/reference/bench-rn50/task-0",
        "--nnodes", "2", "--master", "127.0.0.1:24343", "--procs", "1", "--smoke"]  # the job's master, every task
    srun = [line for line in (tmp_path / "calls.log").read_text().splitlines() if line.startswith("srun ")]
    assert len(srun) == 1 + 2 * 4  # the job's own run, then one Slurm step per image per round
    tasks = ab_folder(tmp_path) / "round-01" / "candidate" / "bench-rn50.tasks.tsv"
    assert [line.split("\t")[:3] for line in tasks.read_text().splitlines()] == [["0", "n01", "0"], ["1", "n01", "0"]]
    summary = ab_report.analyze(ab_folder(tmp_path), 5, {"hostname": "n01"})
    assert summary["verdict"] == "PASS" and summary["rounds"] == 3, summary["reasons"]
    assert "bench-rn50:train.fp32.ips" in {m["key"] for m in summary["metrics"]}


def test_a_two_task_profile_gets_its_ab_with_its_own_benchmark_options(tmp_path: Path, repo: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump({"profiles": {"two": {"hardware": "cpu", "bench": {"bench-rn50": ["--procs", "2"]},
                                                         "slurm": {"partition": "cpu", "tasks_per_node": 2}}}}))
    place = FakePlace("two", {"cpu": [[("COMPLETED", {})]]})
    monkeypatch.setattr(fanout, "for_profile", lambda name, profile, run_id: place)
    fan = FanOut(fleet_schema.load(path, repo), repo, ("bench-rn50",), lambda line: None, store=lambda *a: None,
                 stored=lambda *a: None, poll_s=0, references=lambda flavor: REFERENCE)
    fan.root, fan.sleep = tmp_path, lambda _s: None
    fan.start([Target("cpu", False, IMAGE, tmp_path / "release" / "cpu" / "gates")])
    spec = next(iter(place.jobs.values())).spec
    assert (spec.tasks, spec.ab_rounds, spec.reference) == (2, plan.ROUNDS, REFERENCE.image)
    assert spec.ab_benches[0][1][:2] == ("--procs", "2") and fan.no_reference == {}
