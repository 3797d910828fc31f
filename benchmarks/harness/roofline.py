"""Two rooflines per dtype: the fastest kernels the image ships ("the hardware") and Paddle's own kernels.

The long form: docs/design-notes.md, section `benchmarks/harness/roofline.py`.
"""

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

KINDS = ("paddle", "paddle-inference", "blas", "cublas")
# The kernels each engine runs on the CPU: its efficiency "of Paddle's own kernels" is measured against this kind.
# On GPUs Paddle Inference runs the same cuBLAS/cuDNN kernels as dygraph (`paddle`); engines that are not
# Paddle's (ONNX Runtime, TensorRT) get the hardware figure only.
OWN_KIND = {"train": "paddle", "paddle-inference": "paddle-inference"}


def own_kind(engine: str, device: str) -> str | None:
    """The probe kind of the kernels `engine` (train or an inference back end) runs on `device`."""
    kind = OWN_KIND.get(engine)
    return "paddle" if kind and device == "gpu" else kind
CPU_GEMM, GPU_GEMM, BLAS_GEMM = 1024, 8192, 2048
CPU_CONV, GPU_CONV = (4, 256, 28), (64, 256, 56)  # batch, channels, size


class NotAvailable(Exception):
    """This kind of probe cannot run for this device and dtype; str() says why."""


def median_rate(run: Callable[[], object], flops: float, sync: Callable[[], None], repeats: int,
                clock: Callable[[], float] = time.perf_counter) -> float:
    """FLOP/s of `run`, median of `repeats` timed calls after one untimed warm-up (kernel choice, allocation)."""
    run()
    sync()
    rates = []
    for _ in range(repeats):
        start = clock()
        run()
        sync()
        rates.append(flops / max(clock() - start, 1e-12))
    return statistics.median(rates)


def _conv_flops(batch: int, channels: int, size: int) -> float:
    return 2.0 * batch * channels * channels * 9 * size * size


def paddle_kernels(device: str, dtype: str, repeats: int, threads: int) -> dict:
    """Paddle's own dygraph kernels: a GEMM and a 3x3 convolution."""
    import paddle

    gpu = device == "gpu"
    sync = paddle.device.cuda.synchronize if gpu else (lambda: None)
    n = GPU_GEMM if gpu else CPU_GEMM
    a, b = paddle.randn([n, n]).astype(dtype), paddle.randn([n, n]).astype(dtype)
    gemm = median_rate(lambda: paddle.matmul(a, b), 2.0 * n**3, sync, repeats)
    batch, channels, size = GPU_CONV if gpu else CPU_CONV
    x = paddle.randn([batch, channels, size, size]).astype(dtype)
    w = paddle.randn([channels, channels, 3, 3]).astype(dtype)
    conv = median_rate(lambda: paddle.nn.functional.conv2d(x, w, padding=1), _conv_flops(batch, channels, size),
                       sync, repeats)
    return {"gemm_flops": gemm, "conv_flops": conv, "peak_flops": max(gemm, conv),
            "method": f"median of {repeats}: paddle.matmul {n}^3, conv2d 3x3 {channels}ch {size}px batch {batch}"}


def blas(device: str, dtype: str, repeats: int, threads: int) -> dict:
    """The image's BLAS through NumPy's matmul (the threads come from OMP_NUM_THREADS, set before any import)."""
    if device != "cpu":
        raise NotAvailable("the host BLAS is probed on CPU runs only")
    if dtype != "float32":
        raise NotAvailable(f"NumPy has no BLAS kernel for {dtype}")
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((BLAS_GEMM, BLAS_GEMM), dtype=np.float32)
    b = rng.standard_normal((BLAS_GEMM, BLAS_GEMM), dtype=np.float32)
    gemm = median_rate(lambda: a @ b, 2.0 * BLAS_GEMM**3, lambda: None, repeats)
    return {"gemm_flops": gemm, "peak_flops": gemm, "method": f"median of {repeats}: numpy.matmul {BLAS_GEMM}^3"}


class _InferencePrograms:
    """One-layer programs (a Linear as the GEMM, a 3x3 Conv2D) saved once per process, each with its predictor."""

    def __init__(self, threads: int) -> None:
        import paddle
        from paddle import inference

        self.folder = Path(tempfile.mkdtemp(prefix="ngc-roofline-"))
        batch, channels, size = CPU_CONV
        layers = {"gemm": (paddle.nn.Linear(CPU_GEMM, CPU_GEMM, bias_attr=False), [CPU_GEMM, CPU_GEMM]),
                  "conv": (paddle.nn.Conv2D(channels, channels, 3, padding=1, bias_attr=False),
                           [batch, channels, size, size])}
        self.runs: dict[str, Callable[[], object]] = {}
        for name, (layer, shape) in layers.items():
            layer.eval()
            prefix = self.folder / name
            paddle.jit.save(layer, str(prefix), input_spec=[paddle.static.InputSpec(shape, "float32", "x")])
            program = next(prefix.with_suffix(s) for s in (".json", ".pdmodel") if prefix.with_suffix(s).exists())
            config = inference.Config(str(program), str(prefix.with_suffix(".pdiparams")))
            config.disable_gpu()
            config.enable_mkldnn()
            config.set_cpu_math_library_num_threads(threads)
            config.disable_glog_info()
            predictor = inference.create_predictor(config)
            handle = predictor.get_input_handle(predictor.get_input_names()[0])
            handle.reshape(shape)
            handle.copy_from_cpu(paddle.randn(shape).numpy())
            self.runs[name] = predictor.run


_PROGRAMS: dict[int, _InferencePrograms] = {}


def paddle_inference(device: str, dtype: str, repeats: int, threads: int) -> dict:
    """Paddle Inference on the CPU (oneDNN): the same GEMM and convolution as `paddle`, through a predictor."""
    if device != "cpu":
        raise NotAvailable("Paddle Inference's CPU kernels are probed on CPU runs only (GPUs: cublas)")
    if dtype != "float32":
        raise NotAvailable(f"Paddle Inference runs float32 on the CPU here, not {dtype}")
    programs = _PROGRAMS.get(threads) or _PROGRAMS.setdefault(threads, _InferencePrograms(threads))
    gemm = median_rate(programs.runs["gemm"], 2.0 * CPU_GEMM**3, lambda: None, repeats)
    conv = median_rate(programs.runs["conv"], _conv_flops(*CPU_CONV), lambda: None, repeats)
    return {"gemm_flops": gemm, "conv_flops": conv, "peak_flops": max(gemm, conv),
            "method": f"median of {repeats}: oneDNN predictor, Linear {CPU_GEMM}^3 and Conv2D 3x3 "
                      f"{CPU_CONV[1]}ch {CPU_CONV[2]}px batch {CPU_CONV[0]}"}


def cublas(device: str, dtype: str, repeats: int, threads: int) -> dict:
    """cuBLAS through paddle.matmul on GPU 0 (the fastest GEMM a GPU image ships), a large square GEMM."""
    if device != "gpu":
        raise NotAvailable("cuBLAS needs a GPU (this run is on the CPU)")
    import paddle

    if not paddle.is_compiled_with_cuda():
        raise NotAvailable("this Paddle build has no CUDA")
    a = paddle.randn([GPU_GEMM, GPU_GEMM]).astype(dtype)
    b = paddle.randn([GPU_GEMM, GPU_GEMM]).astype(dtype)
    gemm = median_rate(lambda: paddle.matmul(a, b), 2.0 * GPU_GEMM**3, paddle.device.cuda.synchronize, repeats)
    return {"gemm_flops": gemm, "peak_flops": gemm, "method": f"median of {repeats}: cuBLAS {dtype} {GPU_GEMM}^3"}


PROBES: dict[str, Callable[[str, str, int, int], dict]] = {
    "paddle": paddle_kernels, "paddle-inference": paddle_inference, "blas": blas, "cublas": cublas}


def probe_all(device: str, dtype: str, repeats: int, threads: int) -> dict[str, dict]:
    """Every kind once: kind -> its figures, or {"status": "not available", "reason": ...}."""
    found = {}
    for kind, probe in PROBES.items():
        try:
            found[kind] = probe(device, dtype, repeats, threads)
        except NotAvailable as exc:
            found[kind] = {"status": "not available", "reason": str(exc)}
        except Exception as exc:  # a kernel library that fails here: reported, the other kinds still count
            found[kind] = {"status": "failed", "reason": (str(exc).splitlines() or [type(exc).__name__])[0][:200]}
    return found
