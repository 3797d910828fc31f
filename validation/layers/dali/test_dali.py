"""The dali layer: a DALI pipeline runs on the CPU operators, and on GPU hosts with "mixed" decoding."""

import pytest


@pytest.mark.needs("dali")
@pytest.mark.check("func.dali-cpu-pipeline", component="dali")
def test_dali_cpu_pipeline(run_probe) -> None:
    result = run_probe("dali_pipeline", "--device", "cpu")
    assert result["shape"] == [4, 3, 64, 64], f"expected batches of shape [4, 3, 64, 64], found {result['shape']}"
    assert result["finite"] and result["std"] > 0.1, f"expected normalised pixel data, found std {result['std']:.3f}"


@pytest.mark.gpu
@pytest.mark.exclusive
@pytest.mark.needs("dali")
@pytest.mark.check("gpu.dali-mixed-decode", component="dali")
def test_dali_gpu_pipeline(gpu, run_probe) -> None:
    result = run_probe("dali_pipeline", "--device", "gpu")
    assert result["shape"] == [4, 3, 64, 64], f"expected [4, 3, 64, 64] from GPU decoding, found {result['shape']}"
