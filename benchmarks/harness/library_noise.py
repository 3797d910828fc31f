"""What Paddle prints on every data-parallel run that tells a benchmark's reader nothing, dropped by its exact text.

Why: rank 0's console is the run's report; Paddle's init_parallel_env writes a "Modified FLAGS detected" block of every
FLAGS_* differing from its default (the harness sets some on purpose), and BatchNorm warns at its first training step
that it "now always tracks global mean and variance" (a note on an API change, for every model with BatchNorm). Only
those texts go: anything else Paddle writes (an error, another warning) passes through, as hardware.set_threads does
for the import's thread note.
"""

import contextlib
import io
import sys
import warnings
from collections.abc import Callable
from typing import TypeVar

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


def quiet_flags_banner(call: Callable[[], T]) -> T:
    """call() with its Python stderr read: the modified-FLAGS block dropped, every other line written on (an
    exception too: its lines first, then it propagates)."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            return call()
    finally:
        kept = without_flags_banner(captured.getvalue())
        if kept:
            print("\n".join(kept), file=sys.stderr, flush=True)


def quiet_batchnorm_note() -> None:
    """Drop BatchNorm's training note (a UserWarning of that exact text); other warnings stay as configured."""
    warnings.filterwarnings("ignore", message=BN_TRACKING, category=UserWarning)
