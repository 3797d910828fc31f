"""Watching Paddle's launcher from the process that started it: rank 0's output, a dead rank, a stalled rendezvous.

Why: a data-parallel run must end, never hang: a rank that dies leaves the others blocked in an all-reduce, and a
node that never joins leaves the rest waiting at the rendezvous. Paddle's launcher (--max_restart 0) stops its pod
when one of its ranks fails; this watch bounds that and the rendezvous by the times below, stops the launcher's
whole process group when they pass, and prints one line naming the rank and the node. A SIGTERM or SIGINT to the
launching process goes to the launcher's group, and the launching process waits for rank 0's INTERRUPTED report.
"""

import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ngc_common.exit_codes import ExitCode

RANK_FAILURE_S = 30.0  # a rank that dies ends every rank of its node within this (the launcher's stop, then a kill)
RENDEZVOUS_S = 300.0  # every rank of this node has joined the group within this, or the run ends (nodes start apart)
STOP_WAIT_S = 6.0  # a stop waits this long for the ranks' reports (within ngc_common.stop.GRACE_S)
JOINED = "joined."  # a rank writes its pid into <log dir>/joined.<rank> once it is in the group (launch.join)
FAILED_RE = re.compile(r"Container rank (\d+) status failed .* code (-?\d+) log (\S+)")  # Paddle launcher's line


@dataclass
class Watched:
    """How the launcher ended: its exit code, and the one line saying why where the watch ended it or a rank died."""

    code: int
    problem: str | None = None


def start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """The launcher in a process group of its own (the watch ends all of it), its output into `log`, with the stop
    signals unblocked (ngc_common.stop blocks them in this process, and the mask is inherited across exec)."""
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_unblock_stop_signals)


def _unblock_stop_signals() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})


def joined(logs: Path) -> dict[int, int]:
    """This node's ranks that joined the group: rank -> pid (the launcher starts each in a session of its own, so
    the pid is also its process group)."""
    found = {}
    for path in logs.glob(f"{JOINED}*"):
        with contextlib.suppress(OSError, ValueError):
            found[int(path.name.removeprefix(JOINED))] = int(path.read_text().strip())
    return found


def rank_groups(logs: Path) -> list[int]:
    return list(joined(logs).values())


class FirstGone(threading.Thread):
    """Which of this node's ranks ended first: a rank that dies takes its peers down within milliseconds (gloo aborts
    on the closed connection), faster than the launcher looks, so the watch waits on each rank's pidfd."""

    def __init__(self, logs: Path) -> None:
        super().__init__(name="ngc-first-gone", daemon=True)
        self.logs, self.ranks, self.done = logs, [], threading.Event()

    def run(self) -> None:
        fds: dict[int, int] = {}  # pidfd -> rank
        while not self.done.is_set():
            for rank, pid in joined(self.logs).items():
                if rank not in fds.values():
                    with contextlib.suppress(OSError):
                        fds[os.pidfd_open(pid)] = rank
            ready = select.select(list(fds), [], [], 0.2)[0] if fds else time.sleep(0.2) or []
            if ready:
                self.ranks = sorted(fds[fd] for fd in ready)
                self.done.set()
        for fd in fds:
            os.close(fd)


def stop_group(proc: subprocess.Popen, logs: Path, signum: int, wait_s: float) -> None:
    """Send `signum` to the launcher's group and each rank's, wait up to `wait_s` for the launcher and the ranks to
    end, then kill what is left."""
    groups = [proc.pid, *rank_groups(logs)]
    _signal(groups, signum)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and (proc.poll() is None or any(_alive(g) for g in groups[1:])):
        time.sleep(0.1)
    _signal(groups, signal.SIGKILL)
    proc.wait()


def _signal(groups: list[int], signum: int) -> None:
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signum)


def _alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def failed_rank(launcher_log: Path) -> tuple[int, int, str] | None:
    """(rank, exit code, its log) of the first rank the launcher saw fail, from its own output."""
    with contextlib.suppress(OSError):
        found = FAILED_RE.search(launcher_log.read_text(errors="replace"))
        if found:
            return int(found.group(1)), int(found.group(2)), found.group(3)
    return None


def watch(proc: subprocess.Popen, logs: Path, launcher_log: Path, ranks_here: int, where: str,
          poll_s: float = 0.2) -> Watched:
    """Follow rank 0's log to stdout until the launcher ends; end it where a rank died or the rendezvous stalled.
    `where`: the nodes asked for, for the rendezvous line."""
    started, offset, failed_at = time.monotonic(), 0, None
    node = socket.gethostname()
    gone = FirstGone(logs)
    gone.start()
    while True:
        ended = proc.poll() is not None
        offset = _copy(logs / "workerlog.0", offset)
        if ended:
            break
        now = time.monotonic()
        failed = failed_rank(launcher_log)
        if failed and failed_at is None:
            failed_at = now
        if failed_at is not None and now - failed_at > RANK_FAILURE_S:
            stop_group(proc, logs, signal.SIGKILL, 0)
            break
        count = len(list(logs.glob(f"{JOINED}*")))
        if failed is None and count < ranks_here and now - started > RENDEZVOUS_S:
            stop_group(proc, logs, signal.SIGTERM, STOP_WAIT_S)
            return Watched(ExitCode.FAIL, f"the ranks did not all join the group within {RENDEZVOUS_S:g} s "
                           f"({count} of {ranks_here} on node {node} joined; {where}); every rank here was stopped; "
                           "fix: start every node with the same --nnodes and --master, the master reachable")
        time.sleep(poll_s)
    gone.done.set()
    failed = failed_rank(launcher_log)
    if failed and failed[1] != 0:  # the launcher names the first failed rank it lists; the watch saw which went first
        rank, code, log = failed
        if gone.ranks and rank not in gone.ranks:
            rank, code, log = gone.ranks[0], None, str(logs / f"workerlog.{gone.ranks[0]}")
        how = "died" if code is None else f"ended with exit {code}"
        return Watched(ExitCode.FAIL, f"rank {rank} on node {node} {how} (its log: {log}); every rank was stopped "
                                      f"within {RANK_FAILURE_S:g} s")
    return Watched(proc.returncode)


def _copy(path: Path, offset: int) -> int:
    """Write what `path` gained since `offset` to stdout; the new offset."""
    if not path.is_file():
        return offset
    with open(path, "rb") as log:
        log.seek(offset)
        chunk = log.read()
    sys.stdout.buffer.write(chunk)
    sys.stdout.flush()
    return offset + len(chunk)
