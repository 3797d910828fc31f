"""Step timing: warm-up steps, then measured steps; throughput and latency percentiles.

Why: every benchmark reports the same figures the same way (DLE method): throughput = global
batch / mean step time over the measured steps; latency percentiles over per-step times. Pure
Python so the arithmetic is unit-tested on any host.

The long form: docs/design-notes.md, section `benchmarks/harness/timing.py`.
"""

import contextlib
import contextvars
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ngc_common.errors import InputError

PERCENTILES = (50, 90, 95, 99)
PLANTED_SLOWDOWN_ENV = "NGC_PADDLE_BENCH_PLANTED_SLOWDOWN"
PHASES = ("train", "infer")  # what a StepTimer times; the planted slowdown may name one
SLICE_S = 2.0  # measured seconds between two interleaved probes


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class Timing:
    """Per-step durations (seconds) of the measured steps of one run."""

    batch: int
    durations: list[float] = field(default_factory=list)

    @property
    def mean_s(self) -> float:
        return sum(self.durations) / len(self.durations)

    @property
    def throughput(self) -> float:
        """Samples per second: global batch / mean step time."""
        return self.batch / self.mean_s

    def latency_ms(self) -> dict[str, float]:
        ms = [d * 1000 for d in self.durations]
        return {"mean": sum(ms) / len(ms), **{f"p{q}": percentile(ms, q) for q in PERCENTILES}}

    def summary(self) -> dict:
        return {"ips": self.throughput, "batch": self.batch, "steps": len(self.durations),
                "latency_ms": self.latency_ms()}


def planted_slowdowns(text: str) -> dict[str, float]:
    """The test hook's factor per phase from its value: `F` (every phase) or `train=F,infer=F`. Anything else
    (not a number from 1 to 100, an unknown phase, a phase named twice) is bad input, refused loudly."""
    fix = f"fix: unset it, or give F or {'=F,'.join(PHASES)}=F with F from 1 to 100 (a test hook)"
    out = dict.fromkeys(PHASES, 1.0)
    if not text:
        return out
    parts = [p.strip() for p in text.split(",")]
    named = [p.partition("=") for p in parts]
    if len(parts) == 1 and not named[0][1]:
        named = [(phase, "=", parts[0]) for phase in PHASES]
    seen: set[str] = set()
    for phase, sep, value in named:
        try:
            factor = float(value) if sep else 0.0
        except ValueError:
            factor = 0.0
        if phase not in PHASES or phase in seen or not 1.0 <= factor <= 100.0:
            raise InputError(f"{PLANTED_SLOWDOWN_ENV}={text!r}: {phase or value!r} is not a phase=factor; {fix}")
        seen.add(phase)
        out[phase] = factor
    return out


def planted_slowdown(phase: str) -> float:
    """The test hook's factor for `phase` (1.0: none)."""
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}: one of {', '.join(PHASES)}")
    return planted_slowdowns(os.environ.get(PLANTED_SLOWDOWN_ENV, ""))[phase]


class Interleaver:
    """Calls `probe()` between slices of measured steps: before the first, whenever `slice_s` of measured time
    has passed since the last probe, and after the last (unless a probe just ran)."""

    def __init__(self, probe: Callable[[], object], slice_s: float = SLICE_S) -> None:
        self.probe, self.slice_s = probe, slice_s
        self.since = 0.0

    def start(self) -> None:
        self.probe()
        self.since = 0.0

    def stepped(self, seconds: float) -> None:
        self.since += seconds
        if self.since >= self.slice_s:
            self.probe()
            self.since = 0.0

    def finish(self) -> None:
        if self.since > 0:
            self.probe()
            self.since = 0.0


_INTERLEAVERS: contextvars.ContextVar[tuple[Interleaver, ...]] = contextvars.ContextVar("interleavers", default=())


@contextlib.contextmanager
def interleave(probe: Callable[[], object], slice_s: float = SLICE_S) -> Iterator[Interleaver]:
    """Every StepTimer run inside the block interleaves `probe` with its measured steps (nested blocks: each
    probe of every block, e.g. one per dtype of an inference sweep)."""
    interleaver = Interleaver(probe, slice_s)
    token = _INTERLEAVERS.set((*_INTERLEAVERS.get(), interleaver))
    try:
        yield interleaver
    finally:
        _INTERLEAVERS.reset(token)


class StepTimer:
    """Runs `step(i)` for warm-up + measured steps and times each measured one.

    `sync` is called inside the timed region after each step (e.g. a CUDA synchronize), so
    asynchronous device work is counted in the step that issued it. `phase` (train or infer) is what the
    steps are, for the planted-slowdown test hook.
    """

    def __init__(self, warmup: int, steps: int, batch: int, sync: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter, *, phase: str) -> None:
        if steps < 1 or warmup < 0:
            raise ValueError(f"need steps >= 1 and warmup >= 0, got steps={steps} warmup={warmup}")
        self.warmup, self.steps, self.batch = warmup, steps, batch
        self.sync = sync or (lambda: None)
        self.clock = clock
        self.phase = phase
        self.slowdown = planted_slowdown(phase)
        self.sleep = time.sleep

    def run(self, step: Callable[[int], object], on_step: Callable[[int, float, object], None] | None = None) -> Timing:
        timing = Timing(self.batch)
        interleavers = _INTERLEAVERS.get()
        if self.slowdown > 1:
            print(f"note: {PLANTED_SLOWDOWN_ENV}: every timed {self.phase} step is slowed {self.slowdown:g}x "
                  "(a test hook of the gate-power scripts; these figures are not the image's)", file=sys.stderr)
        for i in range(self.warmup + self.steps):
            if i == self.warmup:
                for interleaver in interleavers:
                    interleaver.start()
            start = self.clock()
            out = step(i)
            self.sync()
            if self.slowdown > 1:
                self.sleep((self.clock() - start) * (self.slowdown - 1))
            elapsed = self.clock() - start
            if i >= self.warmup:
                timing.durations.append(elapsed)
                for interleaver in interleavers:
                    interleaver.stepped(elapsed)
            if on_step is not None:
                on_step(i, elapsed, out)
        for interleaver in interleavers:
            interleaver.finish()
        return timing
