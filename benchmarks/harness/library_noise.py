"""What Paddle prints on every data-parallel run that tells a benchmark's reader nothing, dropped by its exact text.

Why: rank 0's console is the run's report; Paddle's init_parallel_env writes a "Modified FLAGS detected" block of every
FLAGS_* differing from its default (the harness sets some on purpose), and BatchNorm warns at its first training step
that it "now always tracks global mean and variance" (a note on an API change, for every model with BatchNorm). Only
those texts go: anything else Paddle writes (an error, another warning) passes through. The import's note on
OMP_NUM_THREADS (hardware.set_threads sets it on purpose) goes the same way.
"""

import contextlib
import io
import sys
import warnings
from collections.abc import Callable
from typing import TypeVar

THREAD_NOTE = ("WARNING: OMP_NUM_THREADS set to", "PLEASE USE OMP_NUM_THREADS WISELY.")  # Paddle's import, > 1 thread
FLAGS_BANNER = "Modified FLAGS detected"  # the block's first line; it ends with a line of '=' alone
BN_TRACKING = "When training, we now always track global mean and variance"

T = TypeVar("T")


def without_flags_banner(text: str) -> list[str]:
    """The lines of `text` outside Paddle's modified-FLAGS block."""
    kept: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("=") and FLAGS_BANNER in line:
            inside = True
        elif inside:
            inside = set(line.strip()) != {"="}
        else:
            kept.append(line)
    return kept


def without_thread_note(text: str) -> list[str]:
    """The lines of `text` but the two of Paddle's import note on OMP_NUM_THREADS."""
    return [line for line in text.splitlines() if not line.startswith(THREAD_NOTE)]


def filtered_stderr(call: Callable[[], T], keep: Callable[[str], list[str]]) -> T:
    """call() with its Python stderr read: the lines keep() returns written on, the rest dropped (an exception
    too: the kept lines first, then it propagates)."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            return call()
    finally:
        kept = keep(captured.getvalue())
        if kept:
            print("\n".join(kept), file=sys.stderr, flush=True)


def quiet_flags_banner(call: Callable[[], T]) -> T:
    """call() with Paddle's modified-FLAGS block dropped from its stderr, every other line written on."""
    return filtered_stderr(call, without_flags_banner)


def quiet_batchnorm_note() -> None:
    """Drop BatchNorm's training note (a UserWarning of that exact text); other warnings stay as configured."""
    warnings.filterwarnings("ignore", message=BN_TRACKING, category=UserWarning)
