"""The A/B gate and data-parallel runs: a --procs profile's rounds compare its ranks' summed img/s; a profile of
several Slurm tasks gets no A/B part, and its cell says why (NOT RUN), never a silent single-process comparison."""

from pathlib import Path

import pytest
import yaml

from ngc_paddle.release.ab import plan
from ngc_paddle.release.ab.metrics import of_result
from ngc_paddle.release.ab.reference import Reference
from ngc_paddle.release.fleet import fanout, fleet_schema
from ngc_paddle.release.fleet.fanout import FanOut, Target
from ngc_paddle.release.fleet.payload import JobSpec
from tests.unit.test_fleet_fanout import IMAGE, FakePlace

REFERENCE = Reference("127.0.0.1:5019/ngc-paddle@sha256:" + "cd" * 32, "the previous release", "26.11")


def test_a_data_parallel_rounds_train_figure_is_its_ranks_summed_img_s() -> None:
    result = {"results": {"train": {"fp32": {"ips": 3.0}, "bf16": {"ips": 2.0}},
                          "data_parallel": {"fp32": {"procs": 2, "ips": 3.5, "ranks": []}}}}
    found = {m.key: (m.label, v) for m, v in of_result("bench-rn50", result).items()}
    assert found["bench-rn50:train.fp32.ips"] == ("bench-rn50 train fp32 img/s (summed over 2 ranks)", 3.5)
    assert found["bench-rn50:train.bf16.ips"] == ("bench-rn50 train bf16 img/s", 2.0)  # one process: its own


def test_only_a_profile_of_several_tasks_is_refused_an_ab_with_the_reason() -> None:
    one = JobSpec("cpu", "p", "cpu", IMAGE, Path("/x"), (), (("bench-rn50", ("--procs", "2")),))
    assert plan.not_with_tasks(one) is None
    two = JobSpec("cpu", "p", "cpu", IMAGE, Path("/x"), (), (), nodes=1, tasks_per_node=2)
    assert plan.not_with_tasks(two).startswith("the profile runs 2 tasks (1 node(s) x 2) as one data-parallel run")


def test_a_two_task_job_runs_no_ab_rounds_and_a_procs_job_runs_them_with_its_processes(
        tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump({"profiles": {
        "one": {"hardware": "cpu", "slurm": {"partition": "cpu"}, "bench": {"bench-rn50": ["--procs", "2"]}},
        "two": {"hardware": "cpu", "slurm": {"partition": "cpu", "tasks_per_node": 2}}}}))
    places = {name: FakePlace(name, {"cpu": [[("COMPLETED", {})]]}) for name in ("one", "two")}
    monkeypatch.setattr(fanout, "for_profile", lambda name, profile, run_id: places[name])
    fan = FanOut(fleet_schema.load(path, repo), repo, ("bench-rn50",), lambda line: None, store=lambda *a: None,
                 stored=lambda *a: None, poll_s=0, references=lambda flavor: REFERENCE)
    fan.root, fan.sleep = tmp_path, lambda _s: None
    fan.start([Target("cpu", False, IMAGE, tmp_path / "release" / "cpu" / "gates")])
    one, two = (next(iter(places[n].jobs.values())).spec for n in ("one", "two"))
    assert one.ab_rounds == plan.ROUNDS and one.ab_benches[0][1][:2] == ("--procs", "2")  # the same processes
    assert two.ab_rounds == 0 and two.reference is None
    assert fan.no_reference == {"cpu@two": plan.not_with_tasks(two)}
