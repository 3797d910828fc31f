"""The CPU kind a run's kernels see: vendor + the widest vector ISA they may use (e.g. intel-avx512, amd-avx2).

Standard library only: the host's perf scripts import it too.

The long form: docs/design-notes.md, section `benchmarks/harness/cpu_kind.py`.
"""

import os
import platform
from dataclasses import dataclass
from pathlib import Path

ISA_LEVELS = ("baseline", "sse4", "avx", "avx2", "avx512")  # narrowest to widest
# The CPU flags each level needs (x86): AVX-512 as oneDNN's avx512_core uses it (F, BW, VL, DQ).
LEVEL_FLAGS = {"sse4": {"sse4_1", "sse4_2"}, "avx": {"avx"}, "avx2": {"avx2", "fma"},
               "avx512": {"avx512f", "avx512bw", "avx512vl", "avx512dq"}}
VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd", "HygonGenuine": "hygon"}
# Environment that caps every math library of the image at one level ("native": none).
ISA_CAPS: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "OPENBLAS_CORETYPE": "Haswell"},
}
# The caps of the libraries Paddle's kernels run on (oneDNN, MKL). OPENBLAS_CORETYPE caps only NumPy's BLAS (a
# probe of the hardware roofline, not a kernel a gated phase runs on), so it is set by ISA_CAPS but not read here.
CAP_VARIABLES = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


@dataclass(frozen=True)
class CpuKind:
    vendor: str  # intel, amd, hygon, arm, or the vendor string lowered
    isa: str  # one of ISA_LEVELS (x86), or the architecture's own name (aarch64, ...)
    capped_by: tuple[str, ...] = ()  # the variables that lowered it

    native: str = ""  # the widest level the CPU has, when a cap lowered it

    @property
    def name(self) -> str:
        """vendor-isa; a capped CPU is a kind of its own (vendor-native-capped-isa): an AVX-512 core capped to
        AVX2 reads other ratios than a core that only has AVX2 (measured: 50 % vs 77 % for RN50 inference)."""
        if self.native and self.native != self.isa:
            return f"{self.vendor}-{self.native}-capped-{self.isa}"
        return f"{self.vendor}-{self.isa}"

    def explain(self) -> str:
        return self.name + (f" (capped by {', '.join(self.capped_by)})" if self.capped_by else "")


def cap_level(variable: str, value: str) -> str | None:
    """The ISA level a cap variable allows, or None when it sets no cap (ALL, DEFAULT, unknown values)."""
    text = value.strip().upper()
    if text.startswith(("AVX512", "AVX10", "AMX")):
        return "avx512"
    if text.startswith("AVX2"):
        return "avx2"
    if text == "AVX":
        return "avx"
    if text.startswith("SSE4") or text == "SSE41":
        return "sse4"
    return None


def widest(flags: set[str]) -> str:
    level = "baseline"
    for name in ISA_LEVELS[1:]:
        if LEVEL_FLAGS[name] <= flags:
            level = name
    return level


def detect(cpuinfo: str | None = None, environ: dict[str, str] | None = None, machine: str | None = None) -> CpuKind:
    """This CPU's kind as the image's kernels see it (arguments: for tests; defaults read this host)."""
    env = os.environ if environ is None else environ
    arch = machine or platform.machine()
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for row in cpuinfo.splitlines():
        key, sep, value = row.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    if arch not in ("x86_64", "AMD64", "i686"):
        return CpuKind("arm" if arch.startswith(("aarch64", "arm")) else arch.lower(), arch.lower())
    vendor_id = fields.get("vendor_id", "unknown")
    vendor = VENDORS.get(vendor_id, vendor_id.lower() or "unknown")
    native = widest(set(fields.get("flags", "").split()))
    level, capped_by = native, []
    for variable in CAP_VARIABLES:
        cap = cap_level(variable, env.get(variable, ""))
        if cap and ISA_LEVELS.index(cap) < ISA_LEVELS.index(native):
            capped_by.append(f"{variable}={env[variable]}")
            level = min(level, cap, key=ISA_LEVELS.index)
    return CpuKind(vendor, level, tuple(capped_by), native if capped_by else "")


if __name__ == "__main__":
    print(detect().explain())
