"""The peaks of each timed phase, probed interleaved with it: probe, slice of steps, probe, slice, ..., probe.

Why: on a host whose other work comes and goes, a peak probed once before a phase measures another load
than the phase saw (under load the GEMM probe swung from 33 to 8 GFLOP/s, and the efficiency rose as the
host got busier). Interleaved in short slices (timing.interleave, timing.SLICE_S of measured time each),
load hits the workload and its peaks alike. Each probe measures every kind of roofline.probe_all; a phase
is compared with the median of its probes per kind: the highest kind is "the hardware", the kind its
engine runs on (roofline.OWN_KIND) "Paddle's own kernels". Every probe is kept for the report
(result.json `results.peak`).
"""

import contextlib
import statistics
from collections.abc import Callable, Iterator

from benchmarks.harness import roofline, timing


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
    """The peaks per dtype of one run's phases: every probe, and per dtype the lowest phase peak per kind."""

    def __init__(self, device: str, world: int, repeats: int, threads: int = 1) -> None:
        self.device, self.world, self.repeats, self.threads = device, world, repeats, threads
        self.found: dict[str, dict] = {}  # dtype -> every probe, each kind's method, the lowest phase peaks

    def probe(self, dtype: str, label: str, log: Callable) -> dict[str, dict]:
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
        found.update(peaks, peak_flops=peaks["peak_flops"] * scale,
                     kinds={k: v * scale for k, v in peaks["kinds"].items()})
        entry = self.found[dtype]  # the lowest phase figures: what regressions compare the load by
        entry["peak_flops"] = min(entry.get("peak_flops", peaks["peak_flops"]), peaks["peak_flops"])
        lowest = entry.setdefault("kind_peak_flops", {})
        for kind, rate in peaks["kinds"].items():
            lowest[kind] = min(lowest.get(kind, rate), rate)
        entry["method"] = ("median per kind of the probes interleaved with each phase (every "
                           f"{timing.SLICE_S:g} s of measured steps); the hardware is the highest kind")
