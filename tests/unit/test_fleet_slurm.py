"""The Slurm client reads Slurm's own commands: a profile without a place is NOT PROVEN before anything is submitted,
sbatch gets the profile's options, states come from squeue then scontrol (or sacct once the controller forgot).

The commands' outputs here are those Slurm 22.05 printed on the project's one-node test cluster (and sacct's
documented -P format); the integration tests run the real commands."""

import subprocess
from pathlib import Path

import pytest

from ngc_paddle.release.fleet.fleet_schema import SlurmPlace
from ngc_paddle.release.fleet.runners.interface import NoPlace, SubmitFailed
from ngc_paddle.release.fleet.runners.slurm_commands import Slurm, SlurmError, _gpus_offered


class Fake:
    """Answers each Slurm command with a canned (returncode, stdout, stderr) and records the calls."""

    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        self.answers = answers
        self.calls: list[list[str]] = []

    def __call__(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(args))
        rc, out, err = self.answers.get(args[0], (0, "", ""))
        return subprocess.CompletedProcess(list(args), rc, out, err)


def probe(answer: tuple[int, str, str], **place) -> str | None:
    return Slurm(Fake({"sinfo": answer})).probe(SlurmPlace(**{"partition": "gpu", **place}))


def test_a_profile_without_a_place_is_named_with_slurms_words() -> None:
    assert probe((0, "1|idle|gpu:2|none\n", "")) is None
    assert probe((0, "", "")) == "partition 'gpu' has no nodes (sinfo)"
    assert probe((0, "0|n/a|(null)|none\n", "")) == "partition 'gpu' has no nodes (sinfo)"
    assert probe((1, "", "sinfo: error: invalid partition specified: gpu\n")) == \
        "partition 'gpu' does not exist on this cluster (sinfo)"
    assert probe((0, "1|idle|gpu:2|none\n", ""), gres="gpu:4") == \
        "no node of partition 'gpu' has gres gpu:4 (its nodes offer: gpu:2)"
    assert probe((0, "2|idle|gpu:a100:8(S:0-1)|none\n", ""), gres="gpu:h100:1") == \
        "no node of partition 'gpu' has gres gpu:h100:1 (its nodes offer: gpu:a100:8(S:0-1))"
    assert probe((0, "2|drain|gpu:8|Kernel panic\n1|down*|gpu:8|Not responding\n", ""), gres="gpu:8") == \
        "no node of partition 'gpu' can take a job now: 2 drain (Kernel panic); 1 down* (Not responding) (sinfo)"
    assert probe((0, "2|drain|gpu:8|x\n1|mix|gpu:8|none\n", ""), gres="gpu:8") is None
    with pytest.raises(SlurmError, match=r"sinfo failed: .*Unable to contact slurm controller.*scontrol ping"):
        probe((1, "", "sinfo: error: Unable to contact slurm controller (connect failure)\n"))


def test_gres_strings_as_sinfo_prints_them() -> None:
    assert _gpus_offered("gpu:2", None) == 2
    assert _gpus_offered("gpu:a100:4,gpu:v100:2", None) == 6
    assert _gpus_offered("gpu:a100:4,gpu:v100:2", "v100") == 2
    assert _gpus_offered("(null)", None) == 0 and _gpus_offered("mps:100,gpu:1(S:0)", None) == 1


def test_sbatch_gets_the_profiles_options_and_a_job_array_where_flavors_share_it(tmp_path: Path) -> None:
    fake = Fake({"sbatch": (0, "4711\n", "")})
    place = SlurmPlace(partition="a100", account="dl", qos="rel", constraint="a100_80gb", gres="gpu:8",
                       cpus_per_task=64, mem="480G", time="02:00:00")
    assert Slurm(fake).submit(tmp_path / "job.sh", place, "ngc-gates-cpu-A100", tmp_path) == "4711"
    args = fake.calls[0]
    assert args[:2] == ["sbatch", "--parsable"] and args[-1] == str(tmp_path / "job.sh")
    for option in ("--partition=a100", "--account=dl", "--qos=rel", "--constraint=a100_80gb", "--gres=gpu:8",
                   "--cpus-per-task=64", "--mem=480G", "--time=02:00:00", "--requeue", "--open-mode=append",
                   f"--chdir={tmp_path}", f"--output={tmp_path}/slurm-%j.out", "--export=ALL"):
        assert option in args
    assert not [a for a in args if a.startswith("--array")]
    fake = Fake({"sbatch": (0, "4712;cluster2\n", "")})
    assert Slurm(fake).submit(tmp_path / "a.sh", SlurmPlace(partition="cpu"), "n", tmp_path, tasks=3) == "4712"
    assert "--array=0-2" in fake.calls[0] and f"--output={tmp_path}/slurm-%A_%a.out" in fake.calls[0]
    assert not [a for a in fake.calls[0] if a.startswith(("--gres", "--account", "--qos"))]


def test_a_refused_submission_says_why() -> None:
    place = SlurmPlace(partition="gpu", gres="gpu:4")
    refused = "sbatch: error: Batch job submission failed: Requested node configuration is not available\n"
    with pytest.raises(NoPlace, match=r"Slurm refused the job: Batch job submission failed: Requested node "
                                      r"configuration is not available \(partition 'gpu', gres gpu:4\)"):
        Slurm(Fake({"sbatch": (1, "", refused)})).submit(Path("/j.sh"), place, "n", Path("/"))
    with pytest.raises(SubmitFailed, match="sbatch refused the job: Batch job submission failed: Invalid account"):
        Slurm(Fake({"sbatch": (1, "", "sbatch: error: Batch job submission failed: Invalid account or "
                                      "account/partition combination specified\n")})).submit(
            Path("/j.sh"), place, "n", Path("/"))


SQUEUE = "57|RUNNING|vm|None|2026-12-04T01:02:03|2026-12-04T02:02:03\n58_0|PENDING||Resources|N/A|N/A\n" \
         "58_1|FAILED|vm|JobLaunchFailure|2026-12-04T01:00:00|2026-12-04T01:00:05\n"
SCONTROL = ("JobId=60 ArrayJobId=58 ArrayTaskId=1 JobName=ngc-gates UserId=root(0) JobState=FAILED "
            "Reason=JobLaunchFailure Dependency=(null) Requeue=1 Restarts=1 BatchFlag=1 ExitCode=0:9 "
            "StartTime=2026-12-04T01:00:00 EndTime=2026-12-04T01:00:05 NodeList=vm BatchHost=vm\n")


def test_states_come_from_squeue_and_scontrol() -> None:
    fake = Fake({"squeue": (0, SQUEUE, ""), "scontrol": (0, SCONTROL, "")})
    states = Slurm(fake).states(["57", "58_0", "58_1"])
    assert fake.calls[0][:6] == ["squeue", "-h", "-r", "-t", "all", "-j"] and fake.calls[0][6] == "57,58"
    assert states["57"].state == "RUNNING" and states["57"].node == "vm" and not states["57"].finished
    assert states["58_0"].reason == "Resources"
    failed = states["58_1"]  # ended: its details from scontrol
    assert (failed.state, failed.reason, failed.exit_code, failed.restarts, failed.node) == \
        ("FAILED", "JobLaunchFailure", "0:9", 1, "vm") and failed.finished
    assert fake.calls[1] == ["scontrol", "show", "job", "-o", "58_1"]


def test_a_job_the_controller_forgot_is_read_from_sacct() -> None:
    fake = Fake({"squeue": (0, "", ""), "scontrol": (1, "", "slurm_load_jobs error: Invalid job id specified\n"),
                 "sacct": (0, "91|NODE_FAIL|1:0|gpu07|2026-12-01T10:00:00|2026-12-01T10:20:00|None\n", "")})
    state = Slurm(fake).states(["91"])["91"]
    assert (state.state, state.node, state.exit_code) == ("NODE_FAIL", "gpu07", "1:0") and state.finished
    assert fake.calls[2][:5] == ["sacct", "-n", "-P", "-X", "-j"]
    fake = Fake({"squeue": (0, "", ""), "scontrol": (1, "", ""), "sacct": (1, "", "accounting storage is disabled")})
    assert Slurm(fake).states(["92"]) == {}  # unknown: the fan-out counts it as a job that ended without a verdict


FAILED_SCRIPT = ("JobId=61 JobName=ngc-gates-cpu-cpu UserId=root(0) JobState=FAILED Reason=NonZeroExitCode "
                 "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=75:0 "
                 "StartTime=2026-12-04T01:00:00 EndTime=2026-12-04T01:00:01 NodeList=vm BatchHost=vm\n")


def test_a_batch_script_that_exited_non_zero_is_failed() -> None:
    fake = Fake({"squeue": (0, "61|FAILED|vm|NonZeroExitCode|2026-12-04T01:00:00|2026-12-04T01:00:01\n", ""),
                 "scontrol": (0, FAILED_SCRIPT, "")})
    state = Slurm(fake).states(["61"])["61"]
    assert (state.state, state.exit_code, state.reason) == ("FAILED", "75:0", "NonZeroExitCode") and state.finished
    fake = Fake({"squeue": (0, "", ""), "scontrol": (1, "", ""),
                 "sacct": (0, "61|FAILED|75:0|vm|2026-12-04T01:00:00|2026-12-04T01:00:01|None\n", "")})
    state = Slurm(fake).states(["61"])["61"]
    assert (state.state, state.exit_code) == ("FAILED", "75:0") and state.finished


def test_a_job_squeue_no_longer_knows_is_read_from_scontrol_or_sacct() -> None:
    """squeue asked for one job past the controller's MinJobAge exits 1; that is no failure of the cluster."""
    forgot = (1, "", "slurm_load_jobs error: Invalid job id specified\n")
    fake = Fake({"squeue": forgot, "scontrol": (1, "", "slurm_load_jobs error: Invalid job id specified\n"),
                 "sacct": (0, "61|FAILED|75:0|vm|2026-12-04T01:00:00|2026-12-04T01:00:01|None\n", "")})
    state = Slurm(fake).states(["61"])["61"]
    assert (state.state, state.exit_code, state.node) == ("FAILED", "75:0", "vm") and state.finished
    with pytest.raises(SlurmError, match=r"squeue failed: .*Unable to contact slurm controller"):
        Slurm(Fake({"squeue": (1, "", "squeue: error: Unable to contact slurm controller (connect failure)\n")})) \
            .states(["61"])


def test_requeue_and_cancel_are_slurms_own() -> None:
    fake = Fake({"scontrol": (0, "", "")})
    assert Slurm(fake).requeue("57_1") and fake.calls == [["scontrol", "requeue", "57_1"]]
    Slurm(fake).cancel(["57_0", "57_1"])
    assert fake.calls[-1] == ["scancel", "57_0", "57_1"]
    assert not Slurm(Fake({"scontrol": (1, "", "Requested operation is presently disabled")})).requeue("3")


def test_flavors_that_share_a_profile_go_in_one_job_array(tmp_path: Path) -> None:
    from ngc_paddle.release.fleet.payload import JobSpec
    from ngc_paddle.release.fleet.runners.interface import Placed
    from ngc_paddle.release.fleet.runners.slurm import SlurmRunner

    fake = Fake({"sbatch": (0, "300\n", "")})
    runner = SlurmRunner("A100-80GB", SlurmPlace(partition="a100", gres="gpu:8"), Slurm(fake))
    jobs = []
    for flavor in ("gpu", "gpu-cu118"):
        local = tmp_path / flavor / "gates" / "A100-80GB" / "run1"
        (local / "inputs").mkdir(parents=True)
        jobs.append(Placed(JobSpec(flavor, "A100-80GB", "A100-80GB", f"r/x@sha256:{'a' * 64}", local, gpus=8,
                                   gres="gpu:8"), local))
    assert runner.submit(jobs) == ["300_0", "300_1"]
    assert len(fake.calls) == 1 and "--array=0-1" in fake.calls[0]
    script = Path(fake.calls[0][-1])
    assert script.name == "array-A100-80GB.sh" and "  1) NGC_CELL=gpu-cu118@A100-80GB " in script.read_text()
    assert runner.describe("300_1") == "slurm job 300_1"


def test_a_shared_folder_elsewhere_gets_the_inputs_and_gives_the_results_back(tmp_path: Path) -> None:
    from ngc_paddle.release.fleet.payload import JobSpec
    from ngc_paddle.release.fleet.runners.interface import Placed
    from ngc_paddle.release.fleet.runners.slurm import SlurmRunner

    shared = tmp_path / "lustre"
    runner = SlurmRunner("cpu", SlurmPlace(partition="cpu", shared_dir=str(shared)), Slurm(Fake({"sbatch": (0, "7\n",
                                                                                                           "")})))
    runner.root = tmp_path / "repo"
    local = runner.root / "build" / "release" / "26.12" / "cpu" / "gates" / "cpu" / "run1"
    (local / "inputs").mkdir(parents=True)
    (local / "inputs" / "baseline-bench-rn50.json").write_text("{}")
    node = runner.node_folder(local)
    assert node == shared / "build" / "release" / "26.12" / "cpu" / "gates" / "cpu" / "run1"
    job = Placed(JobSpec("cpu", "cpu", "cpu", f"r/x@sha256:{'a' * 64}", node), local)
    assert runner.submit([job]) == ["7"]
    assert (node / "inputs" / "baseline-bench-rn50.json").is_file() and (node / "job.sh").is_file()
    (node / "attempt-1").mkdir()
    (node / "attempt-1" / "outcome").write_text("done\n")
    runner.fetch("7", job)
    assert (local / "attempt-1" / "outcome").read_text() == "done\n" and not node.exists()
