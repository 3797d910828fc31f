"""Stopping on SIGTERM/SIGINT (ngc_common.stop), in a real child process: the report, one line, 143/130.

The child plays a benchmark at its worst: a library that installs its own SIGTERM handler after ours (as
Paddle does at import), a worker thread that never ends (as DALI's and Paddle's pools kept the process alive)
and a main thread that never returns to us. The interrupted run's result.json is checked with the schema every
reader uses (ngc_common.bench_result).
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchmarks.harness import report
from ngc_common import bench_result
from ngc_common.errors import InputError
from ngc_common.exit_codes import ExitCode
from tests.unit.fuzz_support import bench_result as result_fixture

REPO = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 60  # only against a hang of the test itself: nothing here measures time

CHILD = textwrap.dedent("""
    import os, signal, sys, threading, time
    from pathlib import Path
    from ngc_common import stop

    mode, out = sys.argv[1], Path(sys.argv[2])
    stop.GRACE_S = 2.0

    def on_stop(name):
        if mode == "hang":
            print("stopping", flush=True)
            time.sleep(3600)
        if mode == "raise":
            raise OSError("disk full")
        out.write_text(name)
        return f"partial results: {out}"

    stop.install("bench-test", None, block=mode != "plain")
    stop.set_on_stop(on_stop)
    # What Paddle does at import: its own handler (glog's), which printed and let the run go on.
    signal.signal(signal.SIGTERM, lambda *a: print("library handler ran", flush=True))
    threading.Thread(target=threading.Event().wait, daemon=False).start()  # a worker that never ends
    if mode == "fork":
        pid = os.fork()
        if pid == 0:  # a forked worker: the signals are its own again (default: SIGTERM ends it)
            time.sleep(3600)
        print(f"child {pid}", flush=True)
    print("ready", flush=True)
    while True:
        time.sleep(0.05) if mode == "plain" else threading.Event().wait()  # never back in our code
""")


def start(tmp_path: Path, mode: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, mode, str(tmp_path / "stopped.txt")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    while not lines or lines[-1] != "ready":
        line = proc.stdout.readline()
        assert line, f"the child ended before it was ready: {proc.wait(HANG_GUARD_S)} {proc.stderr.read()}"
        lines.append(line.strip())
    proc.started = lines  # type: ignore[attr-defined]
    return proc


def stop_with(proc: subprocess.Popen, signum: int) -> tuple[int, str, str]:
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=HANG_GUARD_S)
    return proc.returncode, out, err


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, ExitCode.TERMINATED), (signal.SIGINT, ExitCode.INTERRUPTED)])
def test_a_signal_writes_the_report_prints_one_line_and_exits_even_with_threads_left(
        tmp_path: Path, signum: int, code: int) -> None:
    proc = start(tmp_path, "block")
    rc, out, err = stop_with(proc, signum)
    name = signal.Signals(signum).name
    assert rc == code
    assert (tmp_path / "stopped.txt").read_text() == name
    assert err == f"bench-test: stopped by {name}: verdict INTERRUPTED (exit {code}); " \
                  f"partial results: {tmp_path / 'stopped.txt'}\n"
    assert "library handler ran" not in out  # ours won over the handler installed after it


def test_a_hanging_report_writer_still_ends_the_process(tmp_path: Path) -> None:
    rc, _out, err = stop_with(start(tmp_path, "hang"), signal.SIGTERM)
    assert rc == ExitCode.TERMINATED  # the watchdog (GRACE_S) ended it
    assert err == "bench-test: stopped by SIGTERM: verdict INTERRUPTED (exit 143); no report written within 2 s\n"
    assert not (tmp_path / "stopped.txt").exists()


def test_a_failing_report_writer_is_named_in_the_line(tmp_path: Path) -> None:
    rc, _out, err = stop_with(start(tmp_path, "raise"), signal.SIGTERM)
    assert rc == ExitCode.TERMINATED
    assert err == "bench-test: stopped by SIGTERM: verdict INTERRUPTED (exit 143); no report written " \
                  "(OSError: disk full)\n"


def test_a_second_signal_does_not_change_the_exit_code(tmp_path: Path) -> None:
    proc = start(tmp_path, "hang")
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout.readline() == "stopping\n"  # the first signal is being handled
    rc, _out, err = stop_with(proc, signal.SIGINT)
    assert rc == ExitCode.TERMINATED and err.count("stopped by") == 1


def test_a_forked_worker_gets_the_signals_back(tmp_path: Path) -> None:
    proc = start(tmp_path, "fork")
    worker = int(next(line for line in proc.started if line.startswith("child ")).split()[1])
    os.kill(worker, signal.SIGTERM)  # blocked in the parent; the worker (unreaped: a zombie) must end on it
    stat = Path(f"/proc/{worker}/stat")
    deadline = time.monotonic() + HANG_GUARD_S
    while stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the forked worker did not end on SIGTERM"
        time.sleep(0.05)
    rc, _out, _err = stop_with(proc, signal.SIGTERM)
    assert rc == ExitCode.TERMINATED


def test_a_plain_handler_serves_a_command_whose_main_thread_waits(tmp_path: Path) -> None:
    """validate's mode: no block, so the pytest it starts keeps the default handling."""
    rc, _out, err = stop_with(start(tmp_path, "plain"), signal.SIGINT)
    assert rc == ExitCode.INTERRUPTED and "stopped by SIGINT" in err


def _interrupted(tmp_path: Path, finished: dict) -> dict:
    data = result_fixture("rn50")
    path = report.interrupted(tmp_path, "rn50", "ResNet50 v1.5 (cpu)", data["config"], data["environment"],
                              {k: data["results"][k] for k in finished}, "SIGTERM", "inference (last logged: x)")
    assert path == tmp_path / "result.json"
    assert not list(tmp_path.glob(".*partial"))  # written atomically
    return json.loads(path.read_text())


def test_an_interrupted_report_is_a_result_json_that_no_reader_takes_for_a_pass(tmp_path: Path) -> None:
    written = _interrupted(tmp_path, {"train": 1})
    parsed = bench_result.parse(tmp_path / "result.json", written)
    assert parsed.verdict == "INTERRUPTED" and parsed.passed is False and parsed.gates == []
    assert list(parsed.results) == ["train"]  # the finished phase's figures, nothing else
    assert parsed.verdict_reasons == ["stopped by SIGTERM during inference (last logged: x); the figures are those "
                                      "of the phases that finished (train), no gate was evaluated"]
    assert "**Verdict: INTERRUPTED**" in (tmp_path / "result.md").read_text()
    with pytest.raises(InputError, match="verdict: an interrupted run"):
        bench_result.read_baseline(tmp_path / "result.json", "rn50")


def test_a_stopped_validate_ends_its_pytest_and_keeps_the_earlier_report(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("validation_run", REPO / "validation" / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    (tmp_path / "validation.json").write_text("earlier")
    scratch = tmp_path / ".validate-x"
    scratch.mkdir()
    (scratch / "parallel.json").write_text("partial")
    pytest_run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    run.RUNNING[:] = [pytest_run]
    assert run.stopped(tmp_path, scratch) == f"no report written; earlier reports in {tmp_path} were kept"
    assert pytest_run.poll() == -signal.SIGTERM
    assert not scratch.exists() and (tmp_path / "validation.json").read_text() == "earlier"
