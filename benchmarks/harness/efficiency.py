"""Figures that carry across machines: the model's achieved FLOP/s over peaks probed in the same run.

The long form: docs/design-notes.md, section `benchmarks/harness/efficiency.py`.
"""

from collections.abc import Callable

from ngc_common.bench_result import PEAK_RECHECKED

TRAIN_FLOPS_FACTOR = 3  # forward + backward (grad of activations + grad of weights)
PROBE_REPEATS = 3  # per probe; a phase takes the median of its interleaved probes
MAX_EFFICIENCY = 1.0


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


def probe_dtype(precision: str) -> str:
    return {"amp": "float16", "amp-o2": "float16", "bf16": "bfloat16"}.get(precision, "float32")


def _ratio(result: dict, name: str, achieved: float, peak: float, what: str) -> None:
    ratio = achieved / peak
    if ratio > MAX_EFFICIENCY:
        result[f"{name}_failure"] = (
            f"probe failure: achieved {achieved / 1e12:.4g} TFLOP/s is {ratio * 100:.0f} % of {what} "
            f"({peak / 1e12:.4g} TFLOP/s); a peak the workload exceeds is not a peak, so no figure is reported")
    else:
        result[name] = ratio


def annotate(result: dict, flops_per_sample: float, peak: dict | None, datasheet_tflops: float | None,
             own_kind: str | None = None) -> dict:
    """Add achieved TFLOP/s, efficiency of the hardware and of Paddle's own kernels (`own_kind`'s probe, see
    roofline.OWN_KIND; none for engines that are not Paddle's) and MFU to a throughput result."""
    achieved = result["ips"] * flops_per_sample
    result["flops_per_sample"] = flops_per_sample
    result["achieved_tflops"] = achieved / 1e12
    if peak:
        result["peak_tflops"] = peak["peak_flops"] / 1e12
        again = f", rechecked with {peak['rechecked']} more probes" if peak.get("rechecked") else ""
        if again:
            result[PEAK_RECHECKED] = peak["rechecked"]
        _ratio(result, "efficiency", achieved, peak["peak_flops"],
               f"the hardware peak probed ({peak.get('hardware_kind', 'fastest kernel')}{again})")
        own = peak.get("kinds", {}).get(own_kind or "")
        if own:
            result["paddle_peak_tflops"] = own / 1e12
            _ratio(result, "efficiency_paddle", achieved, own,
                   f"Paddle's own kernels' peak probed ({own_kind}{again})")
    if datasheet_tflops:
        result["mfu"] = achieved / (datasheet_tflops * 1e12)
    return result
