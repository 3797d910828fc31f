"""Function of the paddle layer: Paddle's own check, training that learns, data-parallel on the CPU (two processes,
gloo: the GPU one is test_gpu's NCCL check), and the export/inference path."""

import pytest


@pytest.mark.check("func.paddle-run-check", component="paddle")
def test_paddle_run_check(host, budget) -> None:
    result = host.run(f"timeout {budget(300)} python -W ignore -c 'import paddle; paddle.utils.run_check()'")
    output = result.stdout + result.stderr
    assert result.rc == 0 and "PaddlePaddle is installed successfully" in output, (
        f"expected paddle.utils.run_check() to succeed, found exit {result.rc}: {output.strip().splitlines()[-1:]}"
    )


@pytest.mark.slow
@pytest.mark.check("func.train-loss-decreases", component="paddle")
def test_training_steps_reduce_loss(run_probe) -> None:
    result = run_probe("train_steps")
    assert result["finite"], "expected finite losses, found NaN/inf"
    assert result["last"] < 0.5 * result["first"], (
        f"expected the loss to halve over {result['steps']} steps, found {result['first']:.3f} -> {result['last']:.3f}"
    )


@pytest.mark.slow
@pytest.mark.needs("paddle2onnx", "onnxruntime")
@pytest.mark.check("func.inference-onnx-agree", component="paddle2onnx")
def test_jit_save_inference_and_onnx_agree(run_probe) -> None:
    result = run_probe("export_roundtrip")
    assert result["shape"] == [2, 10], f"expected output [2, 10], found {result['shape']}"
    assert result["runtime_install"] is None, (
        f"expected export to need no packages beyond the image's, found: {result['runtime_install']}"
    )
    assert result["inference_vs_dygraph"] < 1e-4, (
        f"expected Paddle Inference within 1e-4 of dygraph, found {result['inference_vs_dygraph']:.2e}"
    )
    assert result["onnxruntime_vs_dygraph"] < 1e-4, (
        f"expected ONNX Runtime within 1e-4 of dygraph, found {result['onnxruntime_vs_dygraph']:.2e}"
    )


@pytest.mark.check("func.cpu-data-parallel", component="paddle")
def test_two_cpu_processes_all_reduce_and_agree_after_a_step(run_probe) -> None:
    result = run_probe("cpu_collective", timeout=180)
    assert result["allreduce_ok"], f"expected the gloo all-reduce sum {result['expected']}, found {result['sum']}"
    assert result["data_differ"], "expected each rank to train on its own batch, found the same batch on both"
    assert result["params_equal"], (
        f"expected equal parameters on both ranks after a data-parallel step, found checksums {result['checksums']}"
    )
