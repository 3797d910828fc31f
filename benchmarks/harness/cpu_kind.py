"""The CPU kind a run's kernels see: vendor + the widest vector ISA they may use (e.g. intel-avx512, amd-avx2).

Standard library and ngc_common only: the host's perf scripts import it too.

The long form: docs/design-notes.md, section `benchmarks/harness/cpu_kind.py`.
"""

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from ngc_common import emulation

ISA_LEVELS = ("baseline", "sse4", "avx", "avx2", "avx512")  # narrowest to widest
# The CPU flags each level needs (x86): AVX-512 as oneDNN's avx512_core uses it (F, BW, VL, DQ).
LEVEL_FLAGS = {"sse4": {"sse4_1", "sse4_2"}, "avx": {"avx"}, "avx2": {"avx2", "fma"},
               "avx512": {"avx512f", "avx512bw", "avx512vl", "avx512dq"}}
VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd", "HygonGenuine": "hygon"}
# Arm: /proc/cpuinfo's `CPU implementer` and `CPU part` name the core (Neoverse V2 is NVIDIA Grace's, V1 AWS
# Graviton3's, N1 Graviton2's and Ampere Altra's); its `Features` the vector units, widest first.
ARM_IMPLEMENTERS = {"0x41": "arm", "0x4e": "nvidia", "0xc0": "ampere", "0x48": "hisilicon", "0x61": "apple"}
ARM_CORES = {("0x41", "0xd0c"): "neoverse-n1", ("0x41", "0xd40"): "neoverse-v1", ("0x41", "0xd49"): "neoverse-n2",
             ("0x41", "0xd4f"): "neoverse-v2", ("0x41", "0xd8e"): "neoverse-n3", ("0x41", "0xd84"): "neoverse-v3"}
ARM_ISA_FEATURES = (("sve2", "sve2"), ("sve", "sve"), ("asimd", "neon"))
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
    if emulation.detect(cpuinfo, arch).emulated:  # the CPU described is the host's, not the one the code runs on
        return CpuKind("emulated", arch.lower())
    if arch.startswith(("aarch64", "arm")):
        return arm_kind(fields, arch.lower())
    if arch not in ("x86_64", "AMD64", "i686"):
        return CpuKind(arch.lower(), arch.lower())
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


def arm_kind(fields: dict[str, str], machine: str = "aarch64") -> CpuKind:
    """An Arm CPU's kind: the core (neoverse-v2) where known, else the implementer (or `arm`), and its widest vector
    unit (sve2, sve, neon; the machine where /proc/cpuinfo lists none); e.g. neoverse-v2-sve2 for NVIDIA Grace.
    Reported, not gated, until a floor is measured on it."""
    implementer = fields.get("CPU implementer", "").lower()
    part = fields.get("CPU part", "").lower()
    vendor = ARM_CORES.get((implementer, part)) or ARM_IMPLEMENTERS.get(implementer, "arm")
    features = set(fields.get("Features", "").split())
    isa = next((name for flag, name in ARM_ISA_FEATURES if flag in features), machine)
    return CpuKind(vendor, isa)


if __name__ == "__main__":
    print(detect().explain())
