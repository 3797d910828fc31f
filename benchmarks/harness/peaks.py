"""The peak bracket: probe the framework's peak right before and right after each timed phase, keep the lower.

Why: a phase is gated against the lower of its two probes; on a host whose other work comes and
goes, a burst during the phase then shows in one of them too (on an idle host the two agree).
Every probe is kept for the report (result.json `results.peak`). The probe itself is
efficiency.probe_peak.
"""

import contextlib
from collections.abc import Callable, Iterator

from benchmarks.harness import efficiency


class Peaks:
    """The framework's peak per dtype, probed around each timed phase of one run."""

    def __init__(self, device: str, world: int, repeats: int) -> None:
        self.device, self.world, self.repeats = device, world, repeats
        self.found: dict[str, dict] = {}  # dtype -> the probes of every phase, and the lowest peak seen

    def _probe(self, dtype: str, label: str, log: Callable) -> dict:
        try:
            probe = efficiency.probe_peak(self.device, dtype, self.repeats)
        except Exception as exc:  # a dtype the device has no kernels for: report, do not fail the run
            probe = {"dtype": dtype, "status": "not available", "reason": str(exc).splitlines()[0][:200]}
        log(f"peak probe {dtype} ({label})", {k: v for k, v in probe.items() if k != "method"})
        entry = self.found.setdefault(dtype, {"dtype": dtype, "probes": []})
        entry["probes"].append({"phase": label, **probe})
        if "peak_flops" in probe:
            for key in ("gemm_flops", "conv_flops", "peak_flops"):
                entry[key] = min(entry.get(key, probe[key]), probe[key])
            entry["method"] = probe["method"] + "; lower of the probes before and after each phase"
        else:
            entry.setdefault("status", probe["status"])
            entry.setdefault("reason", probe["reason"])
        return probe

    @contextlib.contextmanager
    def around(self, dtype: str, label: str, log: Callable, devices: int | None = None) -> Iterator[dict]:
        """Probe before and after the block; afterwards it holds the lower peak x the devices the block ran
        on (default: every process of the run), or nothing when no probe worked."""
        found: dict = {}
        before = self._probe(dtype, f"before {label}", log)
        yield found
        after = self._probe(dtype, f"after {label}", log)
        peaks = [p["peak_flops"] for p in (before, after) if "peak_flops" in p]
        if peaks:
            found.update({"peak_flops": min(peaks) * (devices or self.world), "before": before.get("peak_flops"),
                          "after": after.get("peak_flops")})
