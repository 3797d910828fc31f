"""Data-parallel runs without a launcher: the options, the launcher's command, the summary and its schema."""

import json
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from benchmarks.harness import data_parallel, launch, launch_watch, library_noise
from benchmarks.harness.run_config import Hardware, requested, resolve
from benchmarks.rn50.spec import SPEC as RN50
from ngc_common import bench_result
from ngc_common.errors import InputError
from ngc_common.exit_codes import ExitCode
from tests.unit.fuzz_support import bench_result as a_result

CPU = Hardware(gpus_available=0, threads=4, threads_from="test")
GPUS = Hardware(gpus_available=2, threads=16, threads_from="test")


def rank(i: int, ips: float) -> dict:
    return {"rank": i, "node": "n", "node_rank": 0, "shard": [i, 2], "ips": ips, "steps": 2, "lr_peak": 0.004,
            "data_checksum": float(i), "param_checksums": [1.0, 2.0]}


def test_procs_splits_the_cpu_threads_and_the_launcher_runs_the_models_script_on_each() -> None:
    config = resolve(requested(RN50, ["--procs", "2"]), RN50, CPU)
    assert config.procs == 2 and launch.per_rank_threads(config) == 2
    cmd = launch.launcher_command(config, RN50, ["--procs", "2"])
    assert cmd[1:3] == ["-m", "paddle.distributed.launch"] and "--max_restart" in cmd
    assert cmd[cmd.index("--nproc_per_node") + 1] == "2" and cmd[-2:] == ["--threads", "2"]
    assert cmd[cmd.index("--procs") - 1].endswith("benchmarks/rn50/__main__.py")  # a script: -m means legacy mode


def test_gpus_keep_one_process_each_and_refuse_procs() -> None:
    config = resolve(requested(RN50, ["--gpus", "2"]), RN50, GPUS)
    cmd = launch.launcher_command(config, RN50, [])
    assert cmd[cmd.index("--devices") + 1] == "0,1" and "--nproc_per_node" not in cmd and "--threads" not in cmd
    with pytest.raises(InputError, match=r"--procs 2 is for CPU runs.*fix: use --gpus N"):
        resolve(requested(RN50, ["--gpus", "2", "--procs", "2"]), RN50, GPUS)


def test_the_one_process_reference_is_one_gpu_for_the_ranks_steps_or_one_ranks_threads_for_a_few() -> None:
    gpu_argv = ["--gpus", "2", "--steps", "50", "--precision", "amp"]
    gpu = resolve(requested(RN50, gpu_argv), RN50, GPUS)
    cmd = launch.reference_command(RN50, gpu_argv, gpu, "/tmp/ref")
    asked = requested(RN50, cmd[cmd.index("benchmarks.rn50") + 1:])  # the later option wins, as argparse reads it
    assert (asked["gpus"], asked["steps"], asked["mode"], asked["nnodes"], asked["output"]) == (1, 50, "train", 1,
                                                                                               "/tmp/ref")
    assert asked["precision"] == ("amp",) and asked["threads"] is None and asked["procs"] is None
    cpu_argv = ["--procs", "2", "--steps", "50"]
    cpu = resolve(requested(RN50, cpu_argv), RN50, CPU)
    asked = requested(RN50, launch.reference_command(RN50, cpu_argv, cpu, "/tmp/ref")[3:])
    assert (asked["procs"], asked["threads"], asked["steps"]) == (1, 2, launch.REFERENCE_STEPS)


class Launched(Exception):
    """What the stand-in for the launcher raises: the launching process got that far."""


@pytest.mark.parametrize(("argv", "hardware"), [(["--gpus", "2"], GPUS), (["--procs", "2"], CPU)])
def test_a_run_of_several_ranks_hands_them_its_one_process_reference(
        argv: list[str], hardware: Hardware, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = resolve(requested(RN50, [*argv, "--output", str(tmp_path)]), RN50, hardware)
    monkeypatch.setattr("sys.argv", ["bench-rn50", *argv])
    monkeypatch.setattr(launch, "reference_ips", lambda spec, argv, config, log: {"tf32": 990.0})
    handed: dict = {}

    def start(cmd: list[str], env: dict, log: Path) -> None:
        handed.update(env)
        raise Launched

    monkeypatch.setattr(launch_watch, "start", start)
    with pytest.raises(Launched):
        launch.relaunch_distributed(config, RN50)
    assert json.loads(handed[launch.REFERENCE_ENV]) == {"tf32": 990.0}


@pytest.mark.parametrize(("argv", "hardware", "several"), [
    (["--procs", "2"], CPU, "--procs 2"), (["--gpus", "2"], GPUS, "--gpus 2"),
    (["--nnodes", "2", "--master", "10.0.0.1:6000"], CPU, "--nnodes")])
def test_inference_alone_in_several_processes_is_refused_with_one_line(argv: list[str], hardware: Hardware,
                                                                      several: str) -> None:
    with pytest.raises(InputError) as refused:
        resolve(requested(RN50, ["--mode", "infer", *argv]), RN50, hardware)
    assert str(refused.value) == (f"--mode infer with {several}: inference runs in one process on one device "
                                  "(data-parallel runs train); fix: drop it, or use --mode train or all (inference "
                                  "then runs on rank 0)")
    assert refused.value.exit_code == ExitCode.BAD_INPUT


def test_inference_alone_takes_one_gpu_of_many_and_training_takes_them_all() -> None:
    assert resolve(requested(RN50, ["--mode", "infer"]), RN50, GPUS).gpus == 1
    assert resolve(requested(RN50, ["--mode", "all"]), RN50, GPUS).gpus == 2
    assert resolve(requested(RN50, ["--mode", "all", "--procs", "2"]), RN50, CPU).procs == 2


def test_more_processes_than_threads_is_refused_before_anything_starts() -> None:
    config = resolve(requested(RN50, ["--procs", "8"]), RN50, CPU)
    with pytest.raises(InputError, match=r"--procs 8 with 4 CPU thread.*fix: lower --procs"):
        launch.relaunch_distributed(config, RN50)


def test_the_summary_sums_the_ranks_and_scales_against_the_reference() -> None:
    dp = data_parallel.summary([rank(0, 3.0), rank(1, 5.0)], 5.0)
    assert dp["ips"] == 8.0 and dp["procs"] == 2 and math.isclose(dp["scaling_efficiency"], 0.8)
    assert "scaling_efficiency" not in data_parallel.summary([rank(0, 3.0)], None)  # no reference: no figure


def test_a_result_with_data_parallel_figures_reads_and_a_renamed_one_is_refused(tmp_path: Path) -> None:
    result = a_result()
    result["results"]["data_parallel"] = {"fp32": data_parallel.summary([rank(0, 3.0), rank(1, 5.0)], 5.0)}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    assert bench_result.read_baseline(path, "rn50")["results"]["data_parallel"]["fp32"]["ips"] == 8.0
    result["results"]["data_parallel"]["fp32"]["ranks"][1]["img_per_s"] = 1.0
    path.write_text(json.dumps(result))
    with pytest.raises(InputError, match=r"data_parallel\.fp32\.ranks\.1\.img_per_s: is not a rank's figure"):
        bench_result.read_baseline(path, "rn50")


def test_the_reference_a_rank_reads_is_only_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(launch.REFERENCE_ENV, json.dumps({"fp32": 4.5, "bf16": "fast"}))
    assert launch.reference() == {"fp32": 4.5}
    monkeypatch.setenv(launch.REFERENCE_ENV, "{not json")
    assert launch.reference() == {}


def _launcher(tmp_path: Path, script: str) -> tuple[subprocess.Popen, Path, Path]:
    """A stand-in for Paddle's launcher (a shell script), watched as the real one is."""
    logs = tmp_path / "logs"
    logs.mkdir()
    proc = launch_watch.start(["sh", "-c", script], dict(os.environ), logs / "launcher.log")
    return proc, logs, logs / "launcher.log"


def test_a_rendezvous_that_never_completes_ends_the_launcher_with_one_line(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch_watch, "RENDEZVOUS_S", 1.0)
    proc, logs, log = _launcher(tmp_path, "sleep 60")
    started = time.monotonic()
    watched = launch_watch.watch(proc, logs, log, 2, "2 node(s), master 127.0.0.1:1234")
    assert time.monotonic() - started < 1.0 + launch_watch.STOP_WAIT_S and proc.poll() is not None
    assert watched.code == ExitCode.FAIL and watched.problem is not None
    assert watched.problem.startswith("the ranks did not all join the group within 1 s (0 of 2 on node ")
    assert "master 127.0.0.1:1234" in watched.problem and "fix: start every node" in watched.problem


def test_a_dead_rank_the_launcher_leaves_running_is_killed_in_time(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch_watch, "RANK_FAILURE_S", 1.0)
    proc, logs, log = _launcher(tmp_path, "echo 'Container rank 1 status failed cmd [x] code -9 log /l/workerlog.1'; "
                                "sleep 60")
    started = time.monotonic()
    watched = launch_watch.watch(proc, logs, log, 2, "one node")
    assert time.monotonic() - started < 3.0 and proc.poll() is not None
    assert watched.code == ExitCode.FAIL and watched.problem is not None
    assert watched.problem.startswith("rank 1 on node ")
    assert "ended with exit -9 (its log: /l/workerlog.1); every rank was stopped within 1 s" in watched.problem


def test_a_launcher_that_finishes_is_followed_to_the_end(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    proc, logs, log = _launcher(tmp_path, f"sleep 0.3; printf 'train 1/1\\n' > {tmp_path}/logs/workerlog.0")
    watched = launch_watch.watch(proc, logs, log, 1, "one node")
    assert watched == launch_watch.Watched(0) and "train 1/1" in capfd.readouterr().out


BANNER = ("======================= Modified FLAGS detected =======================\n"
          "FLAGS(name='FLAGS_enable_pir_api', current_value=False, default_value=True)\n"
          "=======================================================================\n")


def test_paddles_modified_flags_block_is_dropped_and_every_other_line_passes(capsys: pytest.CaptureFixture) -> None:
    def init() -> int:
        sys.stderr.write("gloo: a line before\n" + BANNER + "W1207 a warning after\n")
        return 7

    assert library_noise.quiet_flags_banner(init) == 7
    assert capsys.readouterr().err == "gloo: a line before\nW1207 a warning after\n"

    def fails() -> None:
        sys.stderr.write(BANNER + "the rendezvous failed\n")
        raise RuntimeError("init_parallel_env failed")

    with pytest.raises(RuntimeError, match="init_parallel_env failed"):
        library_noise.quiet_flags_banner(fails)
    assert capsys.readouterr().err == "the rendezvous failed\n"  # an error is never hidden


def test_paddles_thread_note_at_import_is_dropped_and_every_other_line_passes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from benchmarks.harness import hardware

    fake = tmp_path / "paddle"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "import sys, os\n"
        "sys.stderr.write('WARNING: OMP_NUM_THREADS set to ' + os.environ['OMP_NUM_THREADS'] + ', not 1.\\n'\n"
        "                 'I1207 a note of its own\\n'\n"
        "                 'PLEASE USE OMP_NUM_THREADS WISELY.\\n')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "paddle", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # restored after: set_threads sets it
    assert hardware.set_threads(1)[0] == 1
    assert capsys.readouterr().err == "I1207 a note of its own\n"
    monkeypatch.delitem(sys.modules, "paddle", raising=False)


def test_batchnorms_training_note_is_dropped_and_other_warnings_stay() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        library_noise.quiet_batchnorm_note()
        warnings.warn(library_noise.BN_TRACKING + ".", UserWarning, stacklevel=1)
        warnings.warn("a UserWarning of something else", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["a UserWarning of something else"]


@pytest.mark.parametrize(("emulated", "limit"), [(False, 120), (True, 1200)])
def test_the_cpu_collective_probes_launch_waits_longer_under_emulation_and_a_hang_is_one_line(
        monkeypatch: pytest.MonkeyPatch, emulated: bool, limit: int) -> None:
    """An arm64 validate under qemu on a busy host failed the data-parallel check: the probe's own 120-s limit on the
    launcher, not scaled as every check's budget is, ran out while two emulated ranks imported Paddle."""
    import importlib.util

    from ngc_common import emulation
    path = Path(__file__).resolve().parents[2] / "validation" / "probes" / "cpu_collective.py"
    spec = importlib.util.spec_from_file_location("cpu_collective_probe", path)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    monkeypatch.setattr(emulation, "detect", lambda: emulation.Emulation("aarch64", "x86_64" if emulated else None))
    waited: list[float] = []

    def hang(cmd: list[str], **kwargs: object) -> None:
        waited.append(kwargs["timeout"])
        raise subprocess.TimeoutExpired(cmd, kwargs["timeout"])

    monkeypatch.setattr(probe.subprocess, "run", hang)
    with pytest.raises(SystemExit) as ended:
        probe.launch()
    assert waited == [limit]
    assert str(ended.value) == (f"paddle.distributed.launch --nproc_per_node 2 did not end in {limit} s: a hang in "
                                "the gloo rendezvous or the step (GLOO_SOCKET_IFNAME=lo)")
