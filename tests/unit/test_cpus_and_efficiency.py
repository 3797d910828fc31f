"""CPU thread budget from cgroup files, thread precedence, efficiency arithmetic, the validation verdict."""

import sys
from pathlib import Path

import pytest

from benchmarks.harness import cpus, efficiency

REPO = Path(__file__).resolve().parents[2]


def test_cgroup_v2_quota(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cpus.cfs_quota(tmp_path) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpus.cfs_quota(tmp_path) is None


def test_cgroup_v1_quota(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpus.cfs_quota(tmp_path) == 1.0
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cpus.cfs_quota(tmp_path) is None
    assert cpus.cfs_quota(tmp_path / "missing") is None


@pytest.mark.parametrize(("affinity", "quota", "threads"), [
    (2, None, 2), (2, 1.5, 1), (8, 2.5, 2), (2, 0.5, 1), (1, 4.0, 1),
])
def test_threads_are_the_cpuset_capped_by_the_rounded_down_quota(affinity: int, quota: float | None,
                                                                 threads: int) -> None:
    assert cpus.CpuBudget(affinity, quota).threads == threads


def test_thread_precedence() -> None:
    assert cpus.threads_to_use(3, {"OMP_NUM_THREADS": "2"}) == (3, "--threads")
    assert cpus.threads_to_use(None, {"OMP_NUM_THREADS": "5"}) == (5, "OMP_NUM_THREADS")
    started = {"OMP_NUM_THREADS": "2", "NGC_PADDLE_THREADS_FROM": "detected"}
    assert cpus.threads_to_use(None, started) == (2, "detected at start-up")
    threads, origin = cpus.threads_to_use(None, {"OMP_NUM_THREADS": "zero"})
    assert origin == "detected" and threads == cpus.budget().threads >= 1


def test_efficiency_and_mfu_arithmetic() -> None:
    result = efficiency.annotate({"ips": 10.0}, flops_per_sample=8e9, peak={"peak_flops": 200e9},
                                 datasheet_tflops=0.16)
    assert result["achieved_tflops"] == pytest.approx(0.08)
    assert result["efficiency"] == pytest.approx(0.4) and result["mfu"] == pytest.approx(0.5)
    both = efficiency.annotate({"ips": 10.0}, 8e9, {"peak_flops": 400e9, "kinds": {"paddle": 100e9, "blas": 400e9}},
                               None, "paddle")
    assert both["efficiency"] == pytest.approx(0.2) and both["efficiency_paddle"] == pytest.approx(0.8)
    bare = efficiency.annotate({"ips": 1.0}, 1e9, None, None)
    assert "efficiency" not in bare and "mfu" not in bare
    assert efficiency.probe_dtype("amp") == "float16" and efficiency.probe_dtype("tf32") == "float32"
    assert efficiency.probe_dtype("amp-o2") == "float16" and efficiency.probe_dtype("bf16") == "bfloat16"


def test_validation_verdict_needs_gpu_evidence_in_gpu_flavors() -> None:
    sys.path.insert(0, str(REPO / "validation"))
    try:
        from ngc_report import markdown, verdict
    finally:
        sys.path.remove(str(REPO / "validation"))
    checks = [{"id": "gpu.amp-step", "component": "paddle", "status": "skipped", "gpu": True,
               "message": "no NVIDIA GPU visible", "duration_s": 0.0},
              {"id": "version.paddle", "component": "paddle", "status": "passed", "gpu": False, "message": "ok",
               "duration_s": 0.1}]
    counts = {"passed": 1, "failed": 0, "error": 0, "skipped": 1}
    summary = {"release": "26.12", "flavor": "gpu-cu118", "gpu_flavor": True, "counts": counts, "checks": checks,
               "duration_s": 1.0}
    result, reasons = verdict(summary)
    assert result == "NOT PROVEN" and "gpu.amp-step" in reasons[0] and "no NVIDIA GPU visible" in reasons[0]
    assert "not run (GPU)" in markdown(summary) and "NOT PROVEN" in markdown(summary)
    assert verdict({**summary, "flavor": "cpu", "gpu_flavor": False}) == ("PASS", [])
    failed = {**summary, "counts": {**counts, "failed": 1}}
    assert verdict(failed)[0] == "FAIL"
    assert verdict({**summary, "checks": []})[0] == "FAIL"  # nothing ran is not a pass
    absent = {"id": "gpu.tensorrt-engine", "component": "tensorrt", "status": "skipped", "gpu": True,
              "not_applicable": True, "message": "flavor gpu-cu118 ships no tensorrt", "duration_s": 0.0}
    on_gpu_host = {**summary, "checks": [absent, checks[1]], "counts": {**counts, "skipped": 1}}
    assert verdict(on_gpu_host) == ("PASS", [])  # a component the flavor does not ship is not missing evidence


def test_each_probe_kind_says_why_it_cannot_run_here() -> None:
    from benchmarks.harness import roofline

    def why(kind: str, device: str, dtype: str) -> str:
        with pytest.raises(roofline.NotAvailable) as info:
            roofline.PROBES[kind](device, dtype, 1, 2)
        return str(info.value)

    assert why("cublas", "cpu", "float32") == "cuBLAS needs a GPU (this run is on the CPU)"
    assert why("blas", "cpu", "float16") == "NumPy has no BLAS kernel for float16"
    assert why("blas", "gpu", "float32").startswith("the host BLAS is probed on CPU runs only")
    assert why("paddle-inference", "cpu", "bfloat16").startswith("Paddle Inference runs float32 on the CPU")
    assert roofline.own_kind("train", "cpu") == "paddle" and roofline.own_kind("paddle-inference", "cpu") == \
        "paddle-inference"
    assert roofline.own_kind("paddle-inference", "gpu") == "paddle" and roofline.own_kind("onnxruntime", "cpu") is None


def test_an_efficiency_of_exactly_one_is_a_figure_and_above_it_a_probe_failure_naming_its_peak() -> None:
    """The ceiling is strict: work that reaches the probed peak exactly is 100 %, a hair above is no figure. The
    peaks are reported in TFLOP/s beside the efficiencies."""
    peak = {"peak_flops": 400e9, "kinds": {"paddle": 100e9, "blas": 400e9}}
    at = efficiency.annotate({"ips": 50.0}, 8e9, peak, None, "paddle")
    assert at["efficiency"] == pytest.approx(1.0) and "efficiency_failure" not in at
    assert at["peak_tflops"] == pytest.approx(0.4) and at["paddle_peak_tflops"] == pytest.approx(0.1)
    assert "efficiency_paddle" not in at
    assert at["efficiency_paddle_failure"].startswith("probe failure: achieved 0.4 TFLOP/s is 400 % of Paddle's own "
                                                      "kernels' peak probed (paddle) (0.1 TFLOP/s)")
    above = efficiency.annotate({"ips": 50.0}, 8.01e9, peak, None, "blas")
    assert "efficiency" not in above and "of the hardware peak probed (fastest kernel)" in above["efficiency_failure"]
