"""Stopping the image's commands: `timeout`, `docker stop` and Ctrl-C (SIGINT) end a run with its report.

PID 1 is tini (-g), which hands the signal to the command; the benchmark writes result.json with the verdict
INTERRUPTED into its run's folder (bind-mounted here), prints one line and exits 143 (SIGINT: 130); validate
keeps the earlier report. An exit of 143 from `docker stop -t 10` is itself the proof that the command ended
before Docker's SIGKILL (which reads 137); nothing here measures time, the timeouts only guard against a hang.
"""

import json
import subprocess
from pathlib import Path

from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine
from perf import bench_stop
from perf.bench_stop import EARLIER_REPORT, INFERRING, STARTUP_GUARD_S, STOP_GRACE_S, TIMEOUT_EXIT, run_args
from tests.integration.conftest import Built

PADDLE_HANDLER = "SIGTERM received by PID"  # what Paddle's own handler printed when it took the signal
FAST_STEPS = ("--batch-size", "2", "--image-size", "32", "--infer-image-size", "32")


def started(built: Built, work: Path, *command: str, until: tuple[str, ...]) -> tuple[str, list[str]]:
    """A container running COMMAND, once its output has a line starting with one of `until`; (name, lines)."""
    return bench_stop.start_until(built.image, work, command, until)


def the_result(work: Path) -> dict:
    results = sorted((work / "out").glob("*/result.json"))
    assert len(results) == 1, f"expected the run's result.json, found {results}"
    assert not list((work / "out").glob("*/.*.partial")), "a half-written report was left"
    return json.loads(results[0].read_text())


def assert_interrupted(result: dict, signal_name: str, during: str) -> None:
    assert result["verdict"] == "INTERRUPTED" and result["passed"] is False and result["gates"] == []
    assert result["verdict_reasons"][0].startswith(f"stopped by {signal_name} during {during}"), result


def test_timeout_ends_a_run_with_124_and_an_interrupted_report(built: Built, tmp_path: Path) -> None:
    cmd = ["timeout", "40", *engine.command("run", "--rm", *run_args(tmp_path), built.image, "bench-rn50",
                                            "--output", "/workspace/out", "--mode", "train", "--steps", "100000",
                                            *FAST_STEPS)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=55)  # the limit: 40 s + 15
    assert proc.returncode == TIMEOUT_EXIT, (proc.returncode, proc.stderr[-2000:])
    assert PADDLE_HANDLER not in proc.stdout + proc.stderr
    assert "bench-rn50: stopped by SIGTERM: verdict INTERRUPTED (exit 143); partial results: " in proc.stderr
    result = the_result(tmp_path)
    assert result["verdict"] == "INTERRUPTED" and result["verdict_reasons"][0].startswith("stopped by SIGTERM")


def test_docker_stop_mid_training_exits_143_with_the_report(built: Built, tmp_path: Path) -> None:
    name, _ = started(built, tmp_path, "bench-rn50", "--output", "/workspace/out", "--mode", "train",
                      "--steps", "100000", *FAST_STEPS, until=("train ",))
    engine.docker("stop", "-t", str(STOP_GRACE_S), name, timeout=STARTUP_GUARD_S)
    code, output = bench_stop.wait_exit(name)
    assert code == ExitCode.TERMINATED, output[-2000:]  # 137 would mean Docker had to kill it
    assert PADDLE_HANDLER not in output
    stop_lines = [line for line in output.splitlines() if "stopped by" in line]
    assert len(stop_lines) == 1 and stop_lines[0].startswith("bench-rn50: stopped by SIGTERM: verdict INTERRUPTED")
    result = the_result(tmp_path)
    assert_interrupted(result, "SIGTERM", "training (last logged: train ")
    assert "train" not in result["results"]  # the phase did not finish: no figures pretend it did
    assert "Verdict: INTERRUPTED" in next((tmp_path / "out").glob("rn50-*/result.md")).read_text()


def test_docker_stop_mid_inference_exits_143_with_the_report(built: Built, tmp_path: Path) -> None:
    name, _ = started(built, tmp_path, "bench-rn50", "--output", "/workspace/out", "--mode", "infer",
                      "--infer-iters", "100000", "--batch-sizes", "1", *FAST_STEPS,
                      until=INFERRING)  # the inference phase has begun
    engine.docker("stop", "-t", str(STOP_GRACE_S), name, timeout=STARTUP_GUARD_S)
    code, output = bench_stop.wait_exit(name)
    assert code == ExitCode.TERMINATED, output[-2000:]
    assert PADDLE_HANDLER not in output
    result = the_result(tmp_path)
    assert_interrupted(result, "SIGTERM", "inference")
    assert "infer" not in result["results"] or not result["results"]["infer"], result["results"]


def test_sigint_mid_inference_exits_130_with_the_report(built: Built, tmp_path: Path) -> None:
    name, _ = started(built, tmp_path, "bench-hgnet", "--output", "/workspace/out", "--mode", "infer",
                      "--infer-iters", "100000", "--batch-sizes", "1", *FAST_STEPS,
                      until=INFERRING)  # the inference phase has begun
    engine.docker("kill", "-s", "INT", name)
    code, output = bench_stop.wait_exit(name)
    assert code == ExitCode.INTERRUPTED, output[-2000:]
    assert_interrupted(the_result(tmp_path), "SIGINT", "inference")


def test_docker_stop_of_validate_keeps_the_earlier_report(built: Built, tmp_path: Path) -> None:
    report = tmp_path / "report"
    report.mkdir(parents=True)
    earlier = EARLIER_REPORT
    (report / "validation.json").write_text(earlier)
    name, _ = started(built, tmp_path, "validate", "--output", "/workspace/report",
                      until=("== validate: parallel phase",))
    engine.docker("stop", "-t", str(STOP_GRACE_S), name, timeout=STARTUP_GUARD_S)
    code, output = bench_stop.wait_exit(name)
    assert code == ExitCode.TERMINATED, output[-2000:]
    assert "validate: stopped by SIGTERM: verdict INTERRUPTED (exit 143); no report written; earlier reports in " \
           "/workspace/report were kept" in output
    assert (report / "validation.json").read_text() == earlier
    assert not list(report.glob(".validate-*")), "the interrupted run's scratch reports were left"
