"""GPU checks of the paddle layer: devices visible, an AMP training step, NCCL all-reduce, a TensorRT engine.

They cover CUDA, NCCL and TensorRT but reach them through Paddle, so the paddle layer owns them
(a layer's checks may only use what is installed up to that layer).

Every check here needs a GPU flavor on a host with a visible NVIDIA GPU and driver; elsewhere
each is reported as skipped with the reason, never as passed. They must not share the GPU with
other work, so they are marked exclusive and run after the parallel phase.
"""

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.exclusive]


@pytest.mark.check("gpu.devices-visible", component="cuda-runtime")
def test_cuda_devices_visible(gpu, run_probe) -> None:
    result = run_probe("gpu_devices")
    assert result["count"] >= 1, "expected at least one CUDA device, found none"
    assert result["matmul_ok"], f"expected a correct matmul on {result['names'][0]}, found a wrong result"


@pytest.mark.check("gpu.amp-step", component="paddle")
def test_amp_training_step(gpu, run_probe) -> None:
    result = run_probe("train_steps", "--device", "gpu", "--amp")
    assert result["finite"], "expected finite AMP losses, found NaN/inf"
    assert result["last"] < 0.5 * result["first"], (
        f"expected the AMP loss to halve, found {result['first']:.3f} -> {result['last']:.3f}"
    )


@pytest.mark.check("gpu.nccl-allreduce", component="nccl")
def test_nccl_allreduce_across_visible_gpus(gpu, run_probe) -> None:
    result = run_probe("gpu_nccl", timeout=280)
    assert result["ok"], f"expected all-reduce sum {result['expected']}, found {result['sum']}"


@pytest.mark.needs("tensorrt")
@pytest.mark.check("gpu.tensorrt-engine", component="tensorrt")
def test_tensorrt_engine_builds_and_runs(gpu, run_probe) -> None:
    result = run_probe("gpu_tensorrt", timeout=280)
    assert result["executed"] and result["max_error"] < 1e-6, f"expected relu(x) from TensorRT, found {result}"
    assert result["paddle_trt_engine"] in ("paddle-trt-pir", "paddle-trt-legacy"), result
    assert result["paddle_trt_max_rel_error"] < 1e-4, (
        f"expected Paddle-TRT FP32 within 1e-4 of Paddle, found {result['paddle_trt_max_rel_error']:.2e}"
    )
