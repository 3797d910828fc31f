"""The peaks of each timed phase, probed interleaved with it: probe, slice of steps, probe, slice, ..., probe.

Why: on a host whose other work comes and goes, a peak probed once before a phase measures another load
than the phase saw (under load the GEMM probe swung from 33 to 8 GFLOP/s, and the efficiency rose as the
host got busier). Interleaved in short slices (timing.interleave, timing.SLICE_S of measured time each),
load hits the workload and its peaks alike. Each probe measures every kind of roofline.probe_all; a phase
is compared with the median of its probes per kind: the highest kind is "the hardware", the kind its
engine runs on (roofline.OWN_KIND) "Paddle's own kernels". Every probe is kept for the report
(result.json `results.peak`).

The long form: docs/design-notes.md, section `benchmarks/harness/peaks.py`.
"""

import contextlib
import statistics
from collections.abc import Callable, Iterable, Iterator

from benchmarks.harness import roofline, timing

RECHECK_PROBES = 3  # probes taken at once when a phase's work beat its peak


def outran(peak: dict, achieved: float, own_kinds: Iterable[str | None]) -> bool:
    """Whether `achieved` FLOP/s is above the phase's hardware peak or a peak of one of `own_kinds` (the kinds an
    efficiency of this phase is measured against)."""
    ceilings = [peak.get("peak_flops")] + [peak.get("kinds", {}).get(kind) for kind in own_kinds if kind]
    return any(ceiling and achieved > ceiling for ceiling in ceilings)


def phase_peaks(probes: list[dict[str, dict]]) -> dict:
    """{"peak_flops": the highest kind's median, "kinds": {kind: median}} over one phase's probes (kind -> figures);
    {} when no kind ran."""
    medians = {}
    for kind in roofline.KINDS:
        rates = [p[kind]["peak_flops"] for p in probes if "peak_flops" in p.get(kind, {})]
        if rates:
            medians[kind] = statistics.median(rates)
    if not medians:
        return {}
    best = max(medians, key=medians.__getitem__)
    return {"peak_flops": medians[best], "hardware_kind": best, "kinds": medians, "probes": len(probes)}


class Peaks:
    """The peaks per dtype of one run's phases: every probe, and per dtype the lowest phase peak per kind.
    `skip`: why no probe runs (an emulated run: its peak would be the emulator's, and no efficiency of it proves
    anything; under qemu one probe of a smoke run took 6-8 minutes of a 14-minute run): each probe is logged as
    `not run` with it, and the phases have no peak and no efficiency."""

    def __init__(self, device: str, world: int, repeats: int, threads: int = 1, skip: str | None = None) -> None:
        self.device, self.world, self.repeats, self.threads, self.skip = device, world, repeats, threads, skip
        self.found: dict[str, dict] = {}  # dtype -> every probe, each kind's method, the lowest phase peaks

    def probe(self, dtype: str, label: str, log: Callable) -> dict[str, dict]:
        if self.skip:  # logged, not kept: results.peak holds measured peaks only (ngc_common.bench_result)
            kinds = {kind: {"status": "not run", "reason": self.skip} for kind in roofline.KINDS}
            log(f"peak probe {dtype} ({label})", {kind: f"not run: {self.skip}" for kind in kinds})
            return kinds
        kinds = roofline.probe_all(self.device, dtype, self.repeats, self.threads)
        log(f"peak probe {dtype} ({label})", {k: v.get("peak_flops", v.get("status")) for k, v in kinds.items()})
        entry = self.found.setdefault(dtype, {"dtype": dtype, "probes": [], "kinds": {}})
        for kind, figures in kinds.items():
            entry["probes"].append({"phase": label, "kind": kind, **{k: v for k, v in figures.items()
                                                                    if k != "method"}})
            entry["kinds"].setdefault(kind, figures.get("method") or f"{figures['status']}: {figures['reason']}")
        return kinds

    @contextlib.contextmanager
    def around(self, dtype: str, label: str, log: Callable, devices: int | None = None) -> Iterator[dict]:
        """Interleave probes with every timed loop of the block; afterwards it holds the phase's peaks x the
        devices the block ran on (default: every process of the run): phase_peaks, or nothing when no probe
        worked."""
        found: dict = {}
        probes: list[dict[str, dict]] = []
        with timing.interleave(lambda: probes.append(self.probe(dtype, label, log))):
            yield found
        if not probes:  # the block timed nothing: one probe, so the phase still has a peak
            probes.append(self.probe(dtype, label, log))
        peaks = phase_peaks(probes)
        if not peaks:
            return
        scale = devices or self.world
        found.update(peaks, devices=scale, peak_flops=peaks["peak_flops"] * scale,
                     kinds={k: v * scale for k, v in peaks["kinds"].items()})
        entry = self.found[dtype]  # the lowest phase figures: what regressions compare the load by
        lowest = entry.setdefault("kind_peak_flops", {})
        for kind, rate in peaks["kinds"].items():
            lowest[kind] = min(lowest.get(kind, rate), rate)
        # the hardware is the fastest kind of those lowest figures (not the lowest of each phase's fastest:
        # where phases disagree on the fastest kind, that figure belongs to no kind)
        entry["peak_flops"] = max(lowest.values())
        entry["method"] = ("median per kind of the probes interleaved with each phase (every "
                           f"{timing.SLICE_S:g} s of measured steps); the hardware is the highest kind")

    def recheck(self, peak: dict, dtype: str, label: str, log: Callable,
                runs: Iterable[tuple[float, str | None]]) -> bool:
        """When a run of the phase (achieved FLOP/s, the kind its engine runs on) outran the phase's `peak`, probe
        RECHECK_PROBES more times now and keep per kind the higher of the phase's median and the recheck's (x the
        phase's devices); True when it probed. The recheck's probes join the report's; the lowest phase figures
        (what regression comparisons read) are left as they were."""
        beaten = [achieved for achieved, own in runs if peak and outran(peak, achieved, [own])]
        if not beaten:
            return False
        achieved = max(beaten)
        again = phase_peaks([self.probe(dtype, f"{label}, recheck", log) for _ in range(RECHECK_PROBES)])
        kinds = {kind: max(rate, again.get("kinds", {}).get(kind, 0.0) * peak["devices"])
                 for kind, rate in peak["kinds"].items()}  # a kind the phase's own probes lacked stays out
        best = max(kinds, key=kinds.__getitem__)
        peak.update(peak_flops=kinds[best], hardware_kind=best, kinds=kinds,
                    probes=peak["probes"] + RECHECK_PROBES, rechecked=RECHECK_PROBES)
        log(f"peak recheck {dtype} ({label})", {"achieved_flops": achieved, "peak_flops": kinds[best],
                                                "hardware_kind": best})
        return True
