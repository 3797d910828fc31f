"""Step timing: warm-up steps, then measured steps; throughput and latency percentiles.

Why: every benchmark reports the same figures the same way (DLE method): throughput = global
batch / mean step time over the measured steps; latency percentiles over per-step times. Pure
Python so the arithmetic is unit-tested on any host.
"""

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

PERCENTILES = (50, 90, 95, 99)


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


class StepTimer:
    """Runs `step(i)` for warm-up + measured steps and times each measured one.

    `sync` is called inside the timed region after each step (e.g. a CUDA synchronize), so
    asynchronous device work is counted in the step that issued it.
    """

    def __init__(self, warmup: int, steps: int, batch: int, sync: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if steps < 1 or warmup < 0:
            raise ValueError(f"need steps >= 1 and warmup >= 0, got steps={steps} warmup={warmup}")
        self.warmup, self.steps, self.batch = warmup, steps, batch
        self.sync = sync or (lambda: None)
        self.clock = clock

    def run(self, step: Callable[[int], object], on_step: Callable[[int, float, object], None] | None = None) -> Timing:
        timing = Timing(self.batch)
        for i in range(self.warmup + self.steps):
            start = self.clock()
            out = step(i)
            self.sync()
            elapsed = self.clock() - start
            if i >= self.warmup:
                timing.durations.append(elapsed)
            if on_step is not None:
                on_step(i, elapsed, out)
        return timing
