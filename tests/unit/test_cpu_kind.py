"""benchmarks/harness/cpu_kind.py: the CPU kind a CPU floor holds for, and the gates that follow it."""

from benchmarks.harness import acceptance_gates, cpu_kind

XEON = "vendor_id\t: GenuineIntel\nflags\t\t: fpu sse4_1 sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512dq\n"
EPYC_ZEN2 = "vendor_id\t: AuthenticAMD\nflags\t\t: fpu sse4_1 sse4_2 avx avx2 fma\n"
EPYC_ZEN4 = "vendor_id\t: AuthenticAMD\nflags\t\t: fpu sse4_1 sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512dq\n"


def test_vendor_and_widest_isa_name_the_kind() -> None:
    assert cpu_kind.detect(XEON, {}, "x86_64").name == "intel-avx512"
    assert cpu_kind.detect(EPYC_ZEN2, {}, "x86_64").name == "amd-avx2"
    assert cpu_kind.detect(EPYC_ZEN4, {}, "x86_64").name == "amd-avx512"
    # AVX-512 F alone is not the avx512_core oneDNN's kernels use
    assert cpu_kind.detect(EPYC_ZEN2.replace("fma", "fma avx512f"), {}, "x86_64").name == "amd-avx2"
    assert cpu_kind.detect("", {}, "aarch64").name == "arm-aarch64"


def test_a_cap_on_the_kernels_makes_a_kind_of_its_own() -> None:
    capped = cpu_kind.detect(EPYC_ZEN4, cpu_kind.ISA_CAPS["avx2"], "x86_64")
    assert capped.name == "amd-avx512-capped-avx2" and capped.isa == "avx2"
    assert "ONEDNN_MAX_CPU_ISA=AVX2" in capped.explain() and "MKL_ENABLE_INSTRUCTIONS=AVX2" in capped.explain()
    # NumPy's OpenBLAS cap alone does not change what Paddle's kernels run
    assert cpu_kind.detect(EPYC_ZEN4, {"OPENBLAS_CORETYPE": "Haswell"}, "x86_64").name == "amd-avx512"
    # a cap at or above what the CPU has changes nothing; ALL/DEFAULT set no cap
    assert cpu_kind.detect(EPYC_ZEN2, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"}, "x86_64").name == "amd-avx2"
    assert cpu_kind.detect(XEON, {"ONEDNN_MAX_CPU_ISA": "ALL"}, "x86_64").name == "intel-avx512"
    assert cpu_kind.detect(XEON, {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}, "x86_64").name == "intel-avx512-capped-sse4"


def _table() -> dict:
    floor = {"name": "eff", "metric": "train.fp32.efficiency_paddle", "min": 0.5, "source": "s",
             "when": {"cpu_kind": "amd-avx2"}}
    return {"models": {"m": {"cpu": [floor], "relative": []}}}


def test_a_floor_applies_only_on_its_cpu_kind() -> None:
    results = {"train": {"fp32": {"efficiency_paddle": 0.4}}}
    config = {"precisions": ["fp32"], "cpu_kind": "amd-avx2"}
    verdicts, outcome = acceptance_gates.judge(_table(), "m", "cpu", results, config, None, None, None, None)
    assert [v.status for v in verdicts] == ["FAIL"] and outcome.verdict == "FAIL"
    other = {**config, "cpu_kind": "intel-avx512"}
    verdicts, outcome = acceptance_gates.judge(_table(), "m", "cpu", results, other, None, None, None, None)
    assert [v.status for v in verdicts] == ["N/A"] and outcome.verdict == "NOT PROVEN"
    assert "no CPU efficiency floor for this CPU kind (intel-avx512" in outcome.reasons[0]
    assert "amd-avx2" in outcome.reasons[0]
