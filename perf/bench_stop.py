"""How fast do the image's commands stop when told? `docker stop`, `timeout` and Ctrl-C, timed, N rounds.

  python -m perf.bench_stop IMAGE [--runs 3] [--cases stop-training,timeout-40,...] [--no-record]

The long form: docs/design-notes.md, section `perf/bench_stop.py`.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks.harness.run_loop import INFERENCE_STARTED
from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine, image_ref
from perf.measurements import record

STOP_GRACE_S = 10  # docker stop -t: Docker's SIGKILL after this
TIMEOUT_S, TIMEOUT_LIMIT_S = 40, 55  # the issue's `timeout 40` and its limit (40 s + 15 s)
TIMEOUT_EXIT = 124  # timeout(1)'s exit status when it had to signal the command
EARLIER_REPORT = '{"verdict": "PASS", "note": "an earlier complete run"}\n'
KEPT = "earlier report kept"
STARTUP_GUARD_S = 600  # Paddle's import and the first steps on a busy 2-core host
INFERRING = (f"{INFERENCE_STARTED} ",)  # the line that opens the inference phase (before its model is exported)
FAST = ("--batch-size", "2", "--image-size", "32", "--infer-image-size", "32")
TRAIN = ("bench-rn50", "--output", "/workspace/out", "--mode", "train", "--steps", "100000", *FAST)
# (command, the output line that says the phase to interrupt is running, the signal, the exit it must give)
CASES = {
    "stop-training": (TRAIN, ("train ",), "stop", ExitCode.TERMINATED),
    "stop-inference": (("bench-rn50", "--output", "/workspace/out", "--mode", "infer", "--infer-iters", "100000",
                        "--batch-sizes", "1", *FAST), INFERRING, "stop", ExitCode.TERMINATED),
    "sigint-inference": (("bench-hgnet", "--output", "/workspace/out", "--mode", "infer", "--infer-iters", "100000",
                          "--batch-sizes", "1", *FAST), INFERRING, "INT", ExitCode.INTERRUPTED),
    "timeout-40": (TRAIN, (), "timeout", TIMEOUT_EXIT),
    "stop-validate": (("validate", "--output", "/workspace/report"), ("== validate: parallel phase",), "stop",
                      ExitCode.TERMINATED),
}


def run_args(work: Path, name: str | None = None) -> list[str]:
    """docker run flags: the folder mounted at /workspace, written as the invoking user, no network."""
    named = ["--name", name] if name else []
    return [*named, *engine.run_flags(writes_mounts=True), "-e", "NGC_PADDLE_QUIET=1", "-v", f"{work}:/workspace"]


def start_until(image: str, work: Path, command: tuple[str, ...], until: tuple[str, ...],
                platform: str | None = None) -> tuple[str, list[str]]:
    """A detached container running COMMAND (of `platform`'s image, default the host's), returned once its output has
    a line starting with one of `until`: (its name, the lines so far). Raises RuntimeError (container removed) when
    it ends before that line."""
    work.mkdir(parents=True, exist_ok=True)
    name = f"ngc-stop-{uuid.uuid4().hex[:10]}"
    platform_args = ["--platform", platform] if platform else []
    proc = engine.docker("run", "-d", *platform_args, *run_args(work, name), image, *command, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"docker run {' '.join(command)}: {proc.stderr.strip()}")
    lines: list[str] = []
    with engine.stream("logs", "-f", name) as logs:
        for line in logs.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith(until):
                return name, lines
    engine.remove_container(name)
    raise RuntimeError(f"{' '.join(command)} ended before a line starting with {until}: {lines[-5:]}")


def wait_exit(name: str) -> tuple[int, str]:
    """The container's exit code once it stopped, and its whole output; the container removed."""
    try:
        code = int(engine.docker("wait", name, timeout=STARTUP_GUARD_S).stdout.strip())
        logs = engine.docker("logs", name)
        return code, logs.stdout + logs.stderr
    finally:
        engine.remove_container(name)


def verdict_in(work: Path) -> str | None:
    """The verdict of the run's result.json under work/out (None: no report)."""
    found = sorted((work / "out").glob("*/result.json"))
    return json.loads(found[-1].read_text()).get("verdict") if found else None


def measure(image: str, case: str, work: Path) -> dict:
    """One stop of `case`: seconds (from the signal to the exit; for timeout-40 the whole run), exit, verdict."""
    command, until, how, expected = CASES[case]
    earlier = work / "report" / "validation.json"
    if case == "stop-validate":  # the report of an earlier complete run, which the stopped one must keep
        earlier.parent.mkdir(parents=True, exist_ok=True)
        earlier.write_text(EARLIER_REPORT)
    if how == "timeout":
        start = time.monotonic()
        proc = subprocess.run(["timeout", str(TIMEOUT_S), *engine.command("run", "--rm", *run_args(work), image,
                                                                         *command)],
                              capture_output=True, text=True, timeout=STARTUP_GUARD_S)
        seconds, code = time.monotonic() - start, proc.returncode
        ok_time = seconds <= TIMEOUT_LIMIT_S
    else:
        name, _ = start_until(image, work, command, until)
        start = time.monotonic()
        if how == "stop":
            engine.docker("stop", "-t", str(STOP_GRACE_S), name, timeout=STARTUP_GUARD_S)
        else:
            engine.docker("kill", "-s", how, name)
        code, _output = wait_exit(name)
        seconds = time.monotonic() - start
        ok_time = seconds <= STOP_GRACE_S
    if case == "stop-validate":
        verdict = KEPT if earlier.read_text() == EARLIER_REPORT else "earlier report changed"
    else:
        verdict = verdict_in(work)
    ok = code == expected and ok_time and verdict == (KEPT if case == "stop-validate" else "INTERRUPTED")
    return {"case": case, "seconds": seconds, "exit": code, "expected": int(expected), "verdict": verdict, "ok": ok}


def markdown(runs: list[dict], rounds: int) -> str:
    lines = [f"Each case {rounds} time(s) on the built image; seconds from the signal until the container exited "
             f"(timeout-40: the whole `timeout {TIMEOUT_S} docker run`).", "",
             "| case | runs | exit (expected) | seconds: min / median / max | target | report | met |",
             "| --- | ---: | --- | --- | --- | --- | --- |"]
    for case in CASES:
        mine = [r for r in runs if r["case"] == case]
        if not mine:
            continue
        seconds = [r["seconds"] for r in mine]
        exits = ", ".join(sorted({str(r["exit"]) for r in mine}))
        target = f"<= {TIMEOUT_LIMIT_S} s" if case == "timeout-40" else f"<= {STOP_GRACE_S} s (no SIGKILL)"
        reports = ", ".join(sorted({str(r["verdict"] or "no report") for r in mine}))
        lines.append(f"| {case} | {len(mine)} | {exits} ({mine[0]['expected']}) | {min(seconds):.2f} / "
                     f"{statistics.median(seconds):.2f} / {max(seconds):.2f} | {target} | {reports} | "
                     f"{sum(r['ok'] for r in mine)}/{len(mine)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("image")
    p.add_argument("--runs", type=int, default=3, help="rounds of every case (default 3)")
    p.add_argument("--cases", default=",".join(CASES), type=lambda s: s.split(","), help="default: all")
    p.add_argument("--no-record", action="store_true", help="do not write docs/measurements.md")
    options = p.parse_args(argv)
    unknown = [c for c in options.cases if c not in CASES]
    if unknown or options.runs < 1:
        print(f"error: {unknown[0] if unknown else options.runs}: not a case ({', '.join(CASES)}) or a number of "
              "runs >= 1; fix: see --help", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if (code := image_ref.unbuilt_exit(options.image)) is not None:
        return code
    runs = []
    with tempfile.TemporaryDirectory(prefix="perf-stop-") as scratch:
        for round_ in range(1, options.runs + 1):
            for case in options.cases:
                try:
                    run = measure(options.image, case, Path(scratch) / f"{case}-{round_}")
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    print(f"error: {case}: {exc}; fix: run the image's command by hand to see why", file=sys.stderr)
                    return ExitCode.FAIL
                runs.append(run)
                print(f"[{round_}/{options.runs}] {case:<16} exit {run['exit']} (expected {run['expected']}) after "
                      f"{run['seconds']:.2f} s, report {run['verdict'] or '-'}: {'ok' if run['ok'] else 'MISSED'}",
                      flush=True)
    text = markdown(runs, options.runs)
    print("\n" + text)
    met = all(r["ok"] for r in runs)
    if met and not options.no_record:
        record("perf-stop", "Stopping: docker stop, timeout and Ctrl-C, timed", text)
    return ExitCode.PASS if met else ExitCode.FAIL


if __name__ == "__main__":
    sys.exit(main())
