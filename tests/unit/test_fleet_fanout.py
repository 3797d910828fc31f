"""The fan-out's rules, with a fake place whose jobs end as each test says (real job folders, real readers):
PASS only from a job that ran every gate on the profile's hardware; a job that ends without a verdict is requeued
once, then NOT RUN; no place: NOT PROVEN; a node with another GPU: N/A; an interrupt cancels what runs and keeps
what finished; a cell that passed with the same inputs is not run again."""

import json
from pathlib import Path

import pytest
import yaml

from ngc_paddle.release.fleet import fanout, fleet_schema
from ngc_paddle.release.fleet.cells import Cell
from ngc_paddle.release.fleet.fanout import FanOut, Target
from ngc_paddle.release.fleet.runners.interface import JobState, NoPlace, Placed, Runner
from ngc_paddle.release.stages import gates as gates_stage
from tests.unit.fuzz_support import bench_result

DIGEST = "sha256:" + "ab" * 32
IMAGE = f"127.0.0.1:5019/ngc-paddle@{DIGEST}"
VALIDATION = {"counts": {"passed": 40, "failed": 0, "skipped": 3, "error": 0}, "verdict": "PASS", "verdict_reasons": []}


def finished(job: Placed, gpu: str = "", validate_rc: int = 0, bench_verdict: str = "PASS", outcome: str = "done",
             digest: str = DIGEST) -> None:
    """Write what payload.sh leaves in an attempt's folder."""
    folder = job.local / f"attempt-{job.attempt}"
    (folder / "validation").mkdir(parents=True, exist_ok=True)
    names = ";".join([gpu] * job.spec.gpus) if gpu else ""
    count = job.spec.gpus if gpu else 0
    (folder / "facts.txt").write_text(f"hostname=node{job.attempt}\ngpu_names={names}\ngpu_count={count}"
                                      f"\ndriver=550.54\ncuda=12.4\nimage_digest={digest}\n")
    steps = [f"validate\t{validate_rc}\t30"]
    (folder / "validation" / "validation.json").write_text(json.dumps(VALIDATION))
    for command, _ in job.spec.benches:
        result = folder / "bench" / command / "run-1" / "result.json"
        result.parent.mkdir(parents=True)
        result.write_text(json.dumps({**bench_result("rn50"), "verdict": bench_verdict,
                                      "passed": bench_verdict in ("PASS", "SMOKE")}))
        steps.append(f"{command}\t{ {'PASS': 0, 'FAIL': 1}.get(bench_verdict, 3)}\t40")
    (folder / "steps.tsv").write_text("\n".join(steps) + "\n")
    (folder / "outcome").write_text(outcome + "\n")


class FakePlace(Runner):
    """Each job's story: a list of (state, what to leave in its folder) per attempt, played one poll at a time."""

    kind = "slurm"

    def __init__(self, profile: str, stories: dict[str, list[list[tuple[str, dict | None]]]],
                 reason: str | None = None) -> None:
        super().__init__(profile)
        self.stories, self.reason = stories, reason
        self.jobs: dict[str, Placed] = {}
        self.step: dict[str, int] = {}
        self.submitted: list[str] = []
        self.requeued: list[str] = []
        self.cancelled: list[str] = []

    def probe(self) -> str | None:
        return self.reason

    def submit(self, jobs: list[Placed]) -> list[str]:
        handles = []
        for job in jobs:
            handle = str(100 + len(self.jobs))
            self.jobs[handle], self.step[handle] = job, 0
            self.submitted.append(job.spec.cell)
            handles.append(handle)
        return handles

    def states(self, handles: list[str]) -> dict[str, JobState]:
        found = {}
        for handle in handles:
            job = self.jobs[handle]
            story = self.stories[job.spec.flavor][job.attempt - 1]
            state, leave = story[min(self.step[handle], len(story) - 1)]
            self.step[handle] += 1
            if leave is not None and state != "PENDING":
                finished(job, **leave)
            found[handle] = JobState(handle, state, "node1", "Resources" if state == "PENDING" else "",
                                     "0:9" if state == "FAILED" else "0:0")
        return found

    def requeue(self, handle: str, job: Placed) -> str:
        self.requeued.append(handle)
        self.step[handle] = 0
        return handle

    def cancel(self, handles: list[str]) -> None:
        self.cancelled += handles


@pytest.fixture
def run(tmp_path: Path, repo: Path, monkeypatch):
    """Run a fan-out of `profiles` (fleet file data) with fake places; the cells, what was said, the store."""
    monkeypatch.setattr(fanout, "HEARTBEAT_S", 0.0)
    said: list[str] = []
    store: dict[tuple[str, str], dict] = {}

    def go(profiles: dict, places: dict[str, FakePlace], flavors=(("cpu", False),), stored=None,
           interrupt_after: int | None = None, background: bool = False) -> dict[str, Cell]:
        path = tmp_path / "fleet.yaml"
        path.write_text(yaml.safe_dump({"profiles": profiles}))
        fleet = fleet_schema.load(path, repo)
        monkeypatch.setattr(fanout, "for_profile", lambda name, profile, run_id: places[name])
        polls = {"n": 0}

        def sleep(_s: float) -> None:  # Ctrl-C after that many looks at the jobs
            polls["n"] += 1
            if interrupt_after is not None and polls["n"] >= interrupt_after:
                raise KeyboardInterrupt

        fan = FanOut(fleet, repo, ("bench-rn50",), said.append,
                     store=lambda f, p, c: store.__setitem__((f, p), c.model_dump(mode="json")),
                     stored=lambda f, p: (stored or {}).get((f, p)), poll_s=0)
        fan.root, fan.sleep = tmp_path, sleep  # job folders below the test's folder
        fan.start([Target(f, gpu, IMAGE, tmp_path / "release" / f / "gates", *built) for f, gpu, *built in flavors],
                  background)
        if background:
            said.append(f"watched in the background: {fan.watcher is not None and fan.watcher.is_alive()}")
        return fan.wait()

    go.said, go.store = said, store
    return go


CPU = {"cpu": {"slurm": {"partition": "cpu"}}}


def test_a_job_that_ran_every_gate_passes_with_its_node(run) -> None:
    place = FakePlace("cpu", {"cpu": [[("PENDING", None), ("RUNNING", None), ("COMPLETED", {})]]})
    cell = run(CPU, {"cpu": place})["cpu@cpu"]
    assert cell.status == "PASS" and cell.validation == "PASS" and cell.bench == {"bench-rn50": "PASS"}
    assert cell.job == "job 100" and cell.node == "node1" and cell.facts["cuda"] == "12.4" and not cell.attempts
    assert cell.detail.startswith("validate PASS (40 passed, 0 failed, 3 skipped); bench-rn50: PASS (")
    said = "\n".join(run.said)
    assert "cpu@cpu: job 100 submitted" in said and "cpu@cpu: job 100 queued (Resources)" in said
    assert "cpu@cpu: job 100 running on node1" in said and "cpu@cpu: job 100 done on node1 (no GPU)" in said
    assert run.store[("cpu", "cpu")]["status"] == "PASS"  # kept at once: an interrupt later does not lose it


def test_a_job_that_dies_is_requeued_once_then_not_run_never_pass(run) -> None:
    dies = [("RUNNING", None), ("FAILED", None)]  # killed mid-run: no outcome written
    place = FakePlace("cpu", {"cpu": [dies, dies]})
    cell = run(CPU, {"cpu": place})["cpu@cpu"]
    assert place.requeued == ["100"] and cell.status == "NOT RUN"
    assert [a.state for a in cell.attempts] == ["FAILED (exit 0:9)", "FAILED (exit 0:9)"]
    assert "attempt 1: job 100 FAILED (exit 0:9) on node1: no outcome written; attempt 2:" in cell.detail
    assert any("requeued (attempt 2 of 2)" in line for line in run.said)


def test_a_requeued_job_that_then_runs_counts_with_its_first_failure_named(run) -> None:
    place = FakePlace("cpu", {"cpu": [[("RUNNING", None), ("TIMEOUT", None)], [("RUNNING", None), ("COMPLETED", {})]]})
    cell = run(CPU, {"cpu": place})["cpu@cpu"]
    assert cell.status == "PASS" and len(cell.attempts) == 1 and cell.attempts[0].state == "TIMEOUT"
    assert "(after a requeue: attempt 1: job 100 TIMEOUT" in cell.detail


def test_an_image_that_will_not_start_is_not_run(run) -> None:
    start_failed = [("FAILED", {"outcome": "start-failed: cannot get IMAGE: manifest unknown"})]
    cell = run(CPU, {"cpu": FakePlace("cpu", {"cpu": [start_failed, start_failed]})})["cpu@cpu"]
    assert cell.status == "NOT RUN" and "cannot get IMAGE: manifest unknown" in cell.detail


def test_a_profile_without_a_place_is_not_proven_and_nothing_is_submitted(run) -> None:
    place = FakePlace("cpu", {}, reason="partition 'empty' has no nodes (sinfo)")
    cell = run(CPU, {"cpu": place})["cpu@cpu"]
    assert cell.status == "NOT PROVEN" and cell.detail == "partition 'empty' has no nodes (sinfo)"
    assert place.submitted == [] and cell.job is None


def test_a_job_that_can_never_start_is_cancelled_and_not_proven(run) -> None:
    class Hopeless(FakePlace):
        def states(self, handles):
            return {h: JobState(h, "PENDING", reason="PartitionConfig") for h in handles}

    place = Hopeless("cpu", {})
    cell = run(CPU, {"cpu": place})["cpu@cpu"]
    assert cell.status == "NOT PROVEN" and "pending reason is PartitionConfig" in cell.detail
    assert place.cancelled == ["100"]


def test_a_node_with_another_gpu_gives_na(run) -> None:
    profiles = {"A100-80GB": {"slurm": {"partition": "gpu", "gres": "gpu:1"}, "flavors": ["gpu"]}}
    place = FakePlace("A100-80GB", {"gpu": [[("COMPLETED", {"gpu": "NVIDIA A10"})]]})
    cell = run(profiles, {"A100-80GB": place}, flavors=(("gpu", True),))["gpu@A100-80GB"]
    assert cell.status == "N/A" and cell.detail.startswith("node node1 has NVIDIA A10, not A100-80GB")
    place = FakePlace("A100-80GB", {"gpu": [[("COMPLETED", {"gpu": "NVIDIA A100-SXM4-80GB"})]]})
    assert run(profiles, {"A100-80GB": place}, flavors=(("gpu", True),))["gpu@A100-80GB"].status == "PASS"
    no_gpu = FakePlace("A100-80GB", {"gpu": [[("COMPLETED", {"outcome": "no-gpu: vm gave the job 0 NVIDIA GPU(s)"})]]})
    cell = run(profiles, {"A100-80GB": no_gpu}, flavors=(("gpu", True),))["gpu@A100-80GB"]
    assert cell.status == "N/A" and cell.detail == "vm gave the job 0 NVIDIA GPU(s)" and not no_gpu.requeued


def test_another_image_than_the_candidate_is_not_a_verdict(run) -> None:
    place = FakePlace("cpu", {"cpu": [[("COMPLETED", {"digest": "sha256:" + "0" * 64})]]})
    cell = run(CPU, {"cpu": place})["cpu@cpu"]
    assert cell.status == "NOT RUN" and "not the candidate" in cell.detail


def test_the_worst_step_is_the_cells_verdict(run) -> None:
    place = FakePlace("cpu", {"cpu": [[("COMPLETED", {"bench_verdict": "FAIL"})]]})
    assert run(CPU, {"cpu": place})["cpu@cpu"].status == "FAIL"
    place = FakePlace("cpu", {"cpu": [[("COMPLETED", {"bench_verdict": "SMOKE"})]]})
    cell = run(CPU, {"cpu": place})["cpu@cpu"]
    assert cell.status == "NOT PROVEN" and "a --smoke run measures no gate" in cell.detail
    place = FakePlace("cpu", {"cpu": [[("COMPLETED", {"validate_rc": 2})]]})
    assert run(CPU, {"cpu": place})["cpu@cpu"].detail.startswith("validate FAIL (the validation suite could not run")


def test_all_profiles_are_submitted_before_any_is_waited_on(run) -> None:
    profiles = {**CPU, "cpu-b": {"hardware": "cpu", "slurm": {"partition": "b"}}}
    a = FakePlace("cpu", {"cpu": [[("RUNNING", None)] * 3 + [("COMPLETED", {})]]})
    b = FakePlace("cpu-b", {"cpu": [[("COMPLETED", {})]]})
    cells = run(profiles, {"cpu": a, "cpu-b": b})
    assert set(cells) == {"cpu@cpu", "cpu@cpu-b"} and {c.status for c in cells.values()} == {"PASS"}
    submitted = [i for i, line in enumerate(run.said) if "submitted" in line]
    first_done = next(i for i, line in enumerate(run.said) if " done " in line)
    assert len(submitted) == 2 and max(submitted) < first_done


def test_an_interrupt_cancels_what_runs_and_keeps_what_finished(run) -> None:
    profiles = {**CPU, "cpu-b": {"hardware": "cpu", "slurm": {"partition": "b"}}}
    a = FakePlace("cpu", {"cpu": [[("COMPLETED", {})]]})
    b = FakePlace("cpu-b", {"cpu": [[("RUNNING", None)] * 50]})
    with pytest.raises(KeyboardInterrupt):
        run(profiles, {"cpu": a, "cpu-b": b}, interrupt_after=2)
    assert b.cancelled == ["100"] and a.cancelled == []
    assert run.store[("cpu", "cpu")]["status"] == "PASS"
    assert run.store[("cpu", "cpu-b")]["status"] == "NOT RUN" and "rerun to resume" in run.store[("cpu", "cpu-b")][
        "detail"]


def test_a_cell_that_passed_with_the_same_inputs_is_not_run_again(run) -> None:
    first = FakePlace("cpu", {"cpu": [[("COMPLETED", {})]]})
    cell = run(CPU, {"cpu": first})["cpu@cpu"]
    again = FakePlace("cpu", {})
    kept = run(CPU, {"cpu": again}, stored={("cpu", "cpu"): cell.model_dump(mode="json")})["cpu@cpu"]
    assert again.submitted == [] and kept == cell and any("PASS kept" in line for line in run.said)
    changed = FakePlace("cpu", {"cpu": [[("COMPLETED", {})]]})  # another profile setting: another key
    run({"cpu": {"slurm": {"partition": "cpu", "time": "10"}}}, {"cpu": changed},
        stored={("cpu", "cpu"): cell.model_dump(mode="json")})
    assert changed.submitted == ["cpu@cpu"]
    failed = FakePlace("cpu", {"cpu": [[("COMPLETED", {})]]})  # only a PASS is kept
    run(CPU, {"cpu": failed}, stored={("cpu", "cpu"): {**cell.model_dump(mode="json"), "status": "NOT RUN"}})
    assert failed.submitted == ["cpu@cpu"]


def test_a_flavor_no_profile_proves_is_not_proven(run) -> None:
    cells = run(CPU, {"cpu": FakePlace("cpu", {})}, flavors=(("gpu", True),))
    assert cells["gpu@-"].status == "NOT PROVEN" and "no profile of the fleet proves gpu (a GPU flavor)" in \
        cells["gpu@-"].detail


def test_a_flavors_verdict_from_its_cells(run) -> None:
    place = FakePlace("cpu", {"cpu": [[("COMPLETED", {})]]})
    cells = run(CPU, {"cpu": place})
    key, outcome = gates_stage.outcome({"cpu": cells["cpu@cpu"]})
    assert outcome.status == "passed" and outcome.detail == "cpu: PASS (job 100 on node1)"
    assert outcome.stored["profiles"]["cpu"]["status"] == "PASS" and key
    unproven = Cell(key="k", status="NOT PROVEN", detail="partition 'a' has no nodes", profile="a", hardware="cpu",
                    runner="slurm", finished="2026-12-04T00:00:00+00:00")
    _, outcome = gates_stage.outcome({"cpu": cells["cpu@cpu"], "a": unproven})
    assert outcome.status == "not proven" and "a: NOT PROVEN: partition 'a' has no nodes" in outcome.detail


def test_no_place_from_sbatch_is_not_proven(run) -> None:
    class Refusing(FakePlace):
        def submit(self, jobs):
            raise NoPlace("Slurm refused the job: Requested node configuration is not available")

    cell = run(CPU, {"cpu": Refusing("cpu", {})})["cpu@cpu"]
    assert cell.status == "NOT PROVEN" and "Requested node configuration" in cell.detail


def test_jobs_watched_in_the_background_while_the_caller_works(run) -> None:
    place = FakePlace("cpu", {"cpu": [[("RUNNING", None)] * 20 + [("COMPLETED", {})]]})
    cell = run(CPU, {"cpu": place}, background=True)["cpu@cpu"]
    assert cell.status == "PASS" and "watched in the background: True" in run.said
    slow = FakePlace("cpu", {"cpu": [[("RUNNING", None)] * 10_000]})
    with pytest.raises(KeyboardInterrupt):  # the background watcher's interrupt reaches the caller, jobs cancelled
        run(CPU, {"cpu": slow}, background=True, interrupt_after=5)
    assert slow.cancelled == ["100"] and run.store[("cpu", "cpu")]["status"] == "NOT RUN"


ARM64 = {"grace": {"hardware": "cpu", "platform": "linux/arm64", "slurm": {"partition": "gh200"}}}
PENDING = {"linux/arm64": "the sbsa wheels are not reachable"}


def test_a_flavor_not_built_for_the_profiles_platform_is_not_sent_there(run) -> None:
    amd64_only, both = FakePlace("grace", {}), FakePlace("grace", {"cpu": [[("COMPLETED", {})]]})
    cells = run({**ARM64, **CPU}, {"grace": amd64_only, "cpu": FakePlace("cpu", {"cpu": [[("COMPLETED", {})]]})},
                flavors=(("cpu", False, ("linux/amd64",), PENDING),))
    cell = cells["cpu@grace"]
    assert amd64_only.submitted == [] and cell.status == "N/A" and cell.off_platform and cell.runner == "-"
    assert cell.detail == ("cpu is built for linux/amd64, not linux/arm64 (the profile's platform): the sbsa wheels "
                           "are not reachable; nothing was sent")
    assert "cpu@grace: N/A: cpu is built for linux/amd64, not linux/arm64" in "\n".join(run.said)
    # the flavor claims no arm64 image: the cell is shown, and its verdict is the amd64 profile's
    _, outcome = gates_stage.outcome({"grace": cell, "cpu": cells["cpu@cpu"]})
    assert outcome.status == "passed" and "grace: N/A: cpu is built for linux/amd64" in outcome.detail
    cells = run(ARM64, {"grace": both}, flavors=(("cpu", False, ("linux/amd64", "linux/arm64")),))
    assert both.submitted == ["cpu@grace"] and cells["cpu@grace"].status == "PASS"
    assert both.jobs["100"].spec.platform == "linux/arm64"  # the job refuses a node of another machine


def test_a_flavor_whose_only_profiles_are_off_platform_is_not_proven(run) -> None:
    cells = run(ARM64, {"grace": FakePlace("grace", {})}, flavors=(("cpu", False, ("linux/amd64",)),))
    assert cells["cpu@grace"].status == "N/A" and cells["cpu@-"].status == "NOT PROVEN"
    assert "no profile of the fleet proves cpu (a cpu flavor) on its platforms (linux/amd64)" in cells["cpu@-"].detail
    _, outcome = gates_stage.outcome({"grace": cells["cpu@grace"]})
    assert outcome.status == "not proven"
