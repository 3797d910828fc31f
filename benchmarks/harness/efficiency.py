"""Figures that carry across machines: the model's achieved FLOP/s over a peak probed in the same process.

Why: img/s on one CPU says little about another (machines of one kind differ 4x, and may be busy),
but the share of the framework's own attainable peak that the model reaches moves much less:
both the benchmark and the probe slow down together on a slower or busier host. So each run
  1. counts the model's FLOPs per image (2 x the multiply-accumulates of its convolutions and
     linear layers), training = 3 x forward (forward, plus the backward passes for activations
     and weights, each about one forward's work);
  2. probes the framework's peak right before and right after each timed phase: the best of a large
     GEMM and a ResNet-like 3x3 convolution, in the benchmark's own dtype and thread count, median of
     a few repetitions (so one lucky repetition on a busy host does not inflate it); the phase is
     compared with the lower of the two, so a burst of other work during it shows in the peak too;
  3. reports efficiency = achieved / probed peak and, on GPUs, MFU = achieved / the data sheet's
     dense peak of the GPU for that precision (from gates.yaml `datasheet_peaks`).
"""

import statistics
import time
from collections.abc import Callable

TRAIN_FLOPS_FACTOR = 3  # forward + backward (grad of activations + grad of weights)
PROBE_REPEATS = 5


def forward_flops(build: Callable, num_classes: int, image_size: int) -> int:
    """FLOPs of one image's forward pass: 2 x the multiply-accumulates of every convolution and linear layer.

    Counted by hand with forward hooks because `paddle.flops` fails in Paddle 3.3.1 with NumPy 2
    (`TypeError: only 0-dimensional arrays can be converted`). Normalisation, activations and
    pooling are left out: well under 1 % of a ResNet's or PP-HGNet's work.
    """
    import numpy as np
    import paddle
    from paddle import nn

    model = build(num_classes, "NCHW")  # FLOPs do not depend on the memory layout
    model.eval()
    macs: list[int] = []

    def conv_hook(layer, _inputs, output):
        kernel = int(np.prod(layer.weight.shape[1:]))  # (in / groups) x kh x kw
        macs.append(kernel * int(np.prod(output.shape[1:])))

    def linear_hook(layer, _inputs, output):
        macs.append(int(layer.weight.shape[0]) * int(np.prod(output.shape[1:])))

    hooks = [layer.register_forward_post_hook(conv_hook if isinstance(layer, nn.Conv2D) else linear_hook)
             for layer in model.sublayers() if isinstance(layer, nn.Conv2D | nn.Linear)]
    with paddle.no_grad():
        model(paddle.zeros([1, 3, image_size, image_size]))
    for hook in hooks:
        hook.remove()
    return 2 * sum(macs)


def _median_rate(run: Callable[[], object], flops: float, sync: Callable[[], None], repeats: int) -> float:
    run()
    sync()  # warm-up: kernel selection, allocation
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        sync()
        rates.append(flops / (time.perf_counter() - start))
    return statistics.median(rates)


def probe_peak(device: str, dtype: str = "float32", repeats: int = PROBE_REPEATS) -> dict:
    """The framework's attainable FLOP/s here: a GEMM and a 3x3 convolution, median of `repeats`."""
    import paddle

    gpu = device == "gpu"
    sync = paddle.device.cuda.synchronize if gpu else (lambda: None)
    n = 8192 if gpu else 1024
    a = paddle.randn([n, n]).astype(dtype)
    b = paddle.randn([n, n]).astype(dtype)
    gemm = _median_rate(lambda: paddle.matmul(a, b), 2.0 * n**3, sync, repeats)
    batch, channels, size = (64, 256, 56) if gpu else (4, 256, 28)
    x = paddle.randn([batch, channels, size, size]).astype(dtype)
    w = paddle.randn([channels, channels, 3, 3]).astype(dtype)
    conv_flops = 2.0 * batch * channels * channels * 9 * size * size
    conv = _median_rate(lambda: paddle.nn.functional.conv2d(x, w, padding=1), conv_flops, sync, repeats)
    return {"dtype": dtype, "gemm_flops": gemm, "conv_flops": conv, "peak_flops": max(gemm, conv),
            "method": f"median of {repeats}: matmul {n}x{n}, conv2d 3x3 {channels}ch {size}px batch {batch}"}


def probe_dtype(precision: str) -> str:
    return {"amp": "float16", "amp-o2": "float16", "bf16": "bfloat16"}.get(precision, "float32")


def annotate(result: dict, flops_per_sample: float, peak: dict | None, datasheet_tflops: float | None) -> dict:
    """Add achieved TFLOP/s, efficiency against the probed peak and MFU to a throughput result."""
    achieved = result["ips"] * flops_per_sample
    result["flops_per_sample"] = flops_per_sample
    result["achieved_tflops"] = achieved / 1e12
    if peak:
        result["peak_tflops"] = peak["peak_flops"] / 1e12
        result["efficiency"] = achieved / peak["peak_flops"]
    if datasheet_tflops:
        result["mfu"] = achieved / (datasheet_tflops * 1e12)
    return result
