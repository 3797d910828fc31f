"""Fit a run to the hardware found: defaults (device, batch, sizes, precisions, back ends, threads), refusals.

Why: one command serves a 2-core CPU container and an 8-GPU node. What it cannot honour on this
hardware is a one-line error (exit 2), and a GPU image started without a GPU is told so rather
than benchmarked as if it were a CPU image. The thread count and device chosen are also handed to
Paddle here (set_threads before it loads, use_device once the defaults are filled in).
"""

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path

from benchmarks.harness import cpus
from benchmarks.harness.spec import ModelSpec
from ngc_common.errors import InputError


def visible_gpus() -> int:
    if os.environ.get("NGC_PADDLE_CPU_ONLY") == "1":
        return 0
    import paddle

    if not paddle.is_compiled_with_cuda():
        return 0
    try:
        return paddle.device.cuda.device_count()
    except Exception:
        return 0


PADDLE_THREAD_WARNING = ("WARNING: OMP_NUM_THREADS set to", "PLEASE USE OMP_NUM_THREADS WISELY.")


def set_threads(args: argparse.Namespace) -> None:
    """Fix the CPU thread count, then import Paddle (OpenMP reads OMP_NUM_THREADS once, at load).

    Paddle prints a warning at import whenever OMP_NUM_THREADS > 1 (a note for data-parallel runs);
    we set it on purpose, so those two lines are dropped; anything else Paddle prints passes through.
    """
    args.threads, args.threads_from = cpus.threads_to_use(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            import paddle  # noqa: F401
    except ImportError:
        pass  # reported where Paddle is used, with the reason
    finally:
        kept = [line for line in captured.getvalue().splitlines() if not line.startswith(PADDLE_THREAD_WARNING)]
        if kept:
            print("\n".join(kept), file=sys.stderr)


def smoke_defaults(args: argparse.Namespace, spec: ModelSpec) -> None:
    """--smoke: one tiny training step and one inference call through the whole command, in seconds."""
    args.mode, args.steps, args.warmup, args.batch_size, args.image_size = "all", 1, 0, 2, 64
    args.infer_image_size, args.batch_sizes, args.infer_iters, args.num_classes = 64, [1], 1, 10
    args.backends = args.backends or spec.backends_cpu[:1]
    args.infer_precision = args.infer_precision or ["fp32"]


def resolve(args: argparse.Namespace, spec: ModelSpec) -> argparse.Namespace:
    """Fill defaults for the hardware found; refuse what it cannot do with one line and the fix."""
    if args.smoke:
        smoke_defaults(args, spec)
    available = visible_gpus()
    args.gpus_available, args.gpus_given = available, args.gpus is not None
    if args.gpus is None:
        args.gpus = min(available, 1) if args.smoke else available
    if args.gpus > available:
        raise InputError(f"--gpus {args.gpus} asked for, but {available} CUDA GPU(s) are visible"
                       f"{' (cpu flavor, or the container was started without --gpus all)' if not available else ''}"
                       "; fix: lower --gpus or run on a GPU host with the NVIDIA Container Toolkit")
    gpu = args.gpus > 0
    args.device = "gpu" if gpu else "cpu"
    args.batch_size = args.batch_size or (spec.gpu_batch if gpu else 16)
    args.image_size = args.image_size or (224 if gpu else 128)
    args.infer_image_size = args.infer_image_size or spec.infer_image_size or args.image_size
    args.precision = args.precision or (["tf32", "amp"] if gpu else ["fp32"])
    args.infer_precision = args.infer_precision or (["fp32", "fp16", "int8"] if gpu else ["fp32"])
    args.backends = args.backends or shipped_backends(spec.backends_gpu if gpu else spec.backends_cpu)
    args.batch_sizes = args.batch_sizes or ([1, 8, 64, 256] if gpu else [1, 8])
    args.steps = args.steps or (100 if gpu else 8)
    args.warmup = args.warmup if args.warmup is not None else (30 if gpu else 2)
    args.infer_iters = args.infer_iters or (200 if gpu else 20)
    args.data_format = args.data_format or ("NHWC" if gpu else "NCHW")
    if args.smoke and gpu:
        args.precision = ["tf32"]
    if not gpu:
        wrong = [p for p in args.precision if p in ("tf32", "amp", "amp-o2")]
        if wrong:
            raise InputError(f"--precision {wrong[0]} needs a GPU; fix: use fp32 (or bf16 where the CPU supports it)")
    if "bf16" in args.precision:
        import paddle

        if not paddle.amp.is_bfloat16_supported():
            raise InputError("--precision bf16 is not supported on this device; fix: use fp32/tf32 or amp")
    if args.data and not Path(args.data).is_dir():
        raise InputError(f"--data {args.data}: no such folder; fix: mount an ImageNet-style folder or drop --data")
    if args.baseline and not Path(args.baseline).is_file():
        raise InputError(f"--baseline {args.baseline}: no such file; fix: point at a result.json of an earlier run")
    if args.asp and any(p in ("amp-o2",) for p in args.precision):
        raise InputError("--asp with amp-o2 is not supported by Paddle's ASP; fix: use amp (O1) with --asp")
    return args


def use_device(args: argparse.Namespace) -> None:
    """Point Paddle at the device chosen, and give the CPU math library's own pool (MKL/OpenBLAS) the threads."""
    import paddle

    if hasattr(paddle.base.core, "set_num_threads"):
        paddle.base.core.set_num_threads(args.threads)
    paddle.set_device("gpu:0" if args.device == "gpu" else "cpu")


BACKEND_NEEDS = {"paddle-trt": "tensorrt", "tensorrt": "tensorrt", "onnxruntime": "onnxruntime"}


def shipped_backends(backends: list[str]) -> list[str]:
    """The default back ends this image can run: one whose component the flavor does not ship (TensorRT in
    gpu-cu118) is left out rather than reported as missing evidence. Asked for by name, it is tried."""
    from benchmarks.harness.environment import image_manifest

    components = image_manifest().get("components")
    if not components:
        return backends
    return [b for b in backends if BACKEND_NEEDS.get(b, "paddle") in components]


def gpu_image_without_gpu(args: argparse.Namespace, manifest: dict) -> str | None:
    """Why a run proves nothing about this image: a GPU flavor on a host (or container) without a GPU."""
    if not manifest.get("cuda") or args.gpus_available > 0:
        return None
    return (f"the {manifest.get('flavor', 'GPU')} flavor is a GPU image, but no GPU is visible in this container: "
            "its GPU gates did not run; fix: run it on a GPU host with --gpus all (or --gpus 0 to benchmark "
            "its CPU path anyway, still not a proof of the image)")


def hardware_key(device: str, gpu_names: list[str], gpus: int, cpu: str, threads: int) -> str:
    """What a baseline must have run on to be comparable: the GPU model and count, or the CPU and its threads."""
    if device == "gpu" and gpu_names:
        return f"{gpus}x {gpu_names[0]}"
    return f"{cpu}, {threads} threads"
