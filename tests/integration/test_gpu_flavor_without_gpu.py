"""The gpu-cu118 flavor (builds from PyPI alone) on this host, which has no GPU: its commands start, and
its benchmarks say NOT PROVEN with exit 3 and the reason, never PASS and never a traceback."""

from pathlib import Path

import pytest

from tests.integration.test_bench_rn50 import bench

COMMANDS = ("bench-rn50", "bench-hgnet")


@pytest.mark.parametrize("command", COMMANDS)
def test_benchmark_of_a_gpu_flavor_without_a_gpu_is_not_proven(built_cu118: str, tmp_path: Path,
                                                              command: str) -> None:
    proc, result = bench(built_cu118, tmp_path, command=command)
    assert proc.returncode == 3, proc.stdout[-1500:] + proc.stderr[-1500:]
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr[-2000:]
    assert result["verdict"] == "NOT PROVEN" and not result["passed"]
    assert "is a GPU image, but no GPU is visible" in result["verdict_reasons"][0]
    assert proc.stdout.rstrip().splitlines()[-1].startswith("== verdict: NOT PROVEN: the gpu-cu118 flavor")
    markdown = next((tmp_path / "out").glob("*/result.md")).read_text()
    assert "**Verdict: NOT PROVEN**" in markdown


@pytest.fixture(scope="module")
def smoke(built_cu118: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    """Each benchmark's --smoke run in gpu-cu118, run once: command -> (process, result.json)."""
    return {command: bench(built_cu118, tmp_path_factory.mktemp(command), "--smoke", command=command)
            for command in COMMANDS}


@pytest.mark.parametrize("command", COMMANDS)
def test_shipped_commands_start_in_the_gpu_flavor(smoke: dict, command: str) -> None:
    proc, result = smoke[command]
    assert proc.returncode == 0 and result["verdict"] == "SMOKE", proc.stderr[-2000:]
    assert result["environment"]["flavor"] == "gpu-cu118" and result["config"]["device"] == "cpu"


def test_its_cpu_path_on_request_is_still_not_proven(built_cu118: str, tmp_path: Path) -> None:
    proc, result = bench(built_cu118, tmp_path, "--gpus", "0", "--mode", "infer", "--batch-sizes", "1",
                         "--infer-iters", "2")
    assert proc.returncode == 3 and result["verdict"] == "NOT PROVEN", proc.stdout[-1500:]
    assert result["results"]["infer"]["paddle-inference"]["fp32"]["bs1"]["ips"] > 0
    bad, _ = bench(built_cu118, tmp_path / "bad", "--gpus", "1")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --gpus 1 asked for, but 0 CUDA GPU(s)")


def test_its_smoke_run_feeds_training_through_dali_and_says_why_tensorrt_is_not_run(smoke: dict) -> None:
    """gpu-cu118 ships DALI 1.34 (nvidia-dali-cuda110 from PyPI): --smoke trains on generated JPEGs through its CPU
    pipeline here; the TensorRT rows (Paddle-TRT, TensorRT's Python API) are N/A with the reasons: the lock left
    the tensorrt layer out (NVIDIA's tar unreachable where it was locked), and there is no GPU."""
    proc, result = smoke["bench-rn50"]
    assert proc.returncode == 0 and result["verdict"] == "SMOKE", proc.stderr[-2000:]
    assert result["environment"]["versions"]["dali"] == "1.34.0"
    assert result["results"]["train"]["tf32" if result["config"]["device"] == "gpu" else "fp32"]["input"] == \
        "dali cpu pipeline (generated JPEGs)"
    infer = result["results"]["infer"]
    for backend, what in (("paddle-trt", "Paddle-TRT"), ("tensorrt", "TensorRT")):
        row = infer[backend]["fp32"]
        assert row["status"] == "not available", row
        assert row["reason"].startswith("TensorRT is not in this image (layer tensorrt left out of this image: "), row
        assert row["reason"].endswith(f"; {what} needs a GPU"), row
        assert f"infer {backend} fp32: N/A - TensorRT is not in this image" in proc.stdout
    assert "ips" in infer["paddle-inference"]["fp32"]["bs1"]


def test_its_stack_resolves_and_agrees_with_what_paddle_was_built_against(cu118_validated) -> None:
    """The library walk (every shared object of CUDA, cuDNN, NCCL, DALI and Paddle resolves its DT_NEEDED inside the
    image), the names Paddle 2.6 dlopen()s (libcudnn.so, libcublas.so... open), the versions, Paddle's own report of
    its CUDA, cuDNN and TensorRT compile version, against the manifest, and DALI's CPU pipeline (DALI 1.34 here); the
    GPU checks are skipped with the reason, so the verdict is NOT PROVEN (the suite run once, cu118_validated)."""
    _image, proc, report, _folder = cu118_validated
    assert proc.returncode == 3, proc.stdout[-3000:]
    status = {c["id"]: c for c in report["checks"]}
    for check in ("link.cudnn", "link.nccl", "link.cublas", "link.dali", "link.paddle", "link.runtime.cudnn",
                  "link.runtime.nccl", "link.runtime.cublas", "link.runtime.cufft", "link.runtime.curand",
                  "link.runtime.cusolver", "link.runtime.cusparse", "link.runtime.cuda-nvrtc", "version.dali",
                  "version.paddle-cuda", "version.paddle-cudnn", "version.paddle-trt-compile",
                  "func.dali-paddle-plugin", "func.dali-cpu-pipeline"):
        assert status[check]["status"] == "passed", status.get(check)
    assert status["version.paddle-tensorrt"]["status"] == "skipped"
    assert "layer tensorrt left out of this image" in status["func.tensorrt-import"]["message"]
    assert report["verdict"] == "NOT PROVEN" and "gpu.dali-mixed-decode" in " ".join(report["verdict_reasons"])
