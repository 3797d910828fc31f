"""Stopping a run on SIGTERM or SIGINT: its own report, one line, exit 143 (130), within seconds, whatever is running.

Why: `docker stop`, `timeout`, `scancel` and a release stage's time limit send SIGTERM and wait about 10 s
before SIGKILL. A benchmark's main thread spends seconds inside Paddle's C++ (a training step, a predictor
call) where Python handlers do not run, Paddle installs glog's failure handler for SIGTERM when it is
imported (it printed `SIGTERM received by PID 1` and the run went on), and worker threads (DALI, Paddle's
pools) can keep an exiting interpreter alive for minutes. So a stop here does not depend on the main thread:

The long form: docs/design-notes.md, section `ngc_common/stop.py`.
"""

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable

from ngc_common.exit_codes import ExitCode

# The signals that stop a run and the exit code each ends in (128 + the signal's number, as a shell reports it).
STOP_SIGNALS = {signal.SIGTERM: ExitCode.TERMINATED, signal.SIGINT: ExitCode.INTERRUPTED}
GRACE_S = 8.0  # docker stop waits 10 s before SIGKILL: the report must be on disk well before
VERDICT = "INTERRUPTED"  # the verdict of a run that was stopped (ngc_common.bench_result)

# on_stop(signal name) writes what the run has to show and returns one phrase for the console line (where the
# report is), or None when there is nothing to write yet.
OnStop = Callable[[str], str | None]

_lock = threading.Lock()
_state: dict = {}


def install(prog: str, on_stop: OnStop | None, *, block: bool) -> None:
    """Stop `prog` on SIGTERM/SIGINT: `on_stop`, one line on stderr, exit 143/130. Call it from the main thread,
    before anything starts a thread (block=True) or a child process (block=False)."""
    _state.update(prog=prog, on_stop=on_stop)
    if _state.get("installed"):
        return
    _state["installed"] = True
    if block:
        signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))
        os.register_at_fork(after_in_child=_unblock)  # a forked worker (a data loader's) ends with the group
        threading.Thread(target=_wait_for_signal, name="ngc-stop", daemon=True).start()
    else:
        for signum in STOP_SIGNALS:
            signal.signal(signum, _handler)


def set_on_stop(on_stop: OnStop) -> None:
    """What a stop writes, from now on (the run's report once its folder exists)."""
    _state["on_stop"] = on_stop


def wait_if_stopping() -> None:
    """A main thread that finished while a stop is under way leaves the end to the stop (its report, its line, its
    exit code), which comes within GRACE_S."""
    if _lock.locked():
        threading.Event().wait(GRACE_S + 5)


def exit_now(code: int) -> None:
    """End a command that ran through: flush and os._exit, so that no worker thread left by a library (DALI's, Paddle's
    pools, waiting on a futex) keeps the process alive after its verdict, as it did for minutes."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: nothing left to flush
            stream.flush()
    os._exit(int(code))


def _unblock() -> None:
    """In a forked child (a data loader's worker): the signals back, with their default handling (SIGTERM ends it,
    SIGINT raises KeyboardInterrupt), whatever a library installed in the parent. It has none of our threads."""
    _state.clear()
    with contextlib.suppress(ValueError):  # forked from a thread that is not the main one: handlers stay
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, set(STOP_SIGNALS))


def _wait_for_signal() -> None:
    signum = signal.sigwait(set(STOP_SIGNALS))
    stop(signum)


def _handler(signum: int, _frame: object) -> None:
    stop(signum)


def stop(signum: int) -> None:
    """Write the run's report (on_stop), print one line and end the process with the signal's exit code."""
    if not _lock.acquire(blocking=False):
        return  # already stopping
    code = STOP_SIGNALS[signal.Signals(signum)]
    name = signal.Signals(signum).name
    watchdog = threading.Timer(GRACE_S, _end, [name, code, f"no report written within {GRACE_S:g} s"])
    watchdog.daemon = True
    watchdog.start()
    try:
        where = _state["on_stop"](name) if _state.get("on_stop") else None
    except Exception as exc:  # the line still goes out and the process still ends
        where = f"no report written ({type(exc).__name__}: {exc})"
    _end(name, code, where)


def _end(name: str, code: ExitCode, where: str | None) -> None:
    """The one line, then the end of the process (whatever its threads are doing)."""
    prog = _state.get("prog", os.path.basename(sys.argv[0]))
    tail = f"; {where}" if where else ""
    try:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            print(f"{prog}: stopped by {name}: verdict {VERDICT} (exit {int(code)}){tail}", file=sys.stderr, flush=True)
    finally:
        os._exit(int(code))
