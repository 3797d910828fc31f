"""The hardware a run finds (GPUs, CPU threads, bf16, what the image ships), and handing the choice to Paddle.

Why: one command serves a 2-core CPU container and an 8-GPU node; run_config.resolve fits the run to
what detect() finds here. A GPU image started without a GPU is told so rather than benchmarked as if
it were a CPU image. The thread count and device chosen are handed to Paddle here (set_threads before
it loads, use_device once the run is resolved).
"""

import contextlib
import os

from benchmarks.harness import cpus, library_noise
from benchmarks.harness.run_config import Hardware, RunConfig


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


def set_threads(requested: int | None) -> tuple[int, str]:
    """Fix the CPU thread count, then import Paddle (OpenMP reads OMP_NUM_THREADS once, at load).
    Returns (threads, why that many).

    Paddle prints a warning at import whenever OMP_NUM_THREADS > 1 (a note for data-parallel runs);
    we set it on purpose, so those two lines are dropped; anything else Paddle prints passes through.
    """
    threads, threads_from = cpus.threads_to_use(requested)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    library_noise.filtered_stderr(_import_paddle, library_noise.without_thread_note)
    return threads, threads_from


def _import_paddle() -> None:
    with contextlib.suppress(ImportError):  # reported where Paddle is used, with the reason
        import paddle  # noqa: F401


def detect(threads: tuple[int, str], wants_bf16: bool = False) -> Hardware:
    """The hardware this run found (Paddle loaded): GPUs, the threads chosen, the image's components, bf16."""
    from benchmarks.harness.environment import image_manifest

    bf16 = False
    if wants_bf16:
        import paddle

        bf16 = bool(paddle.amp.is_bfloat16_supported())
    return Hardware(visible_gpus(), threads[0], threads[1], image_manifest().get("components") or None, bf16)


def use_device(config: RunConfig) -> None:
    """Point Paddle at the device chosen, and give the CPU math library's own pool (MKL/OpenBLAS) the threads."""
    import paddle

    if hasattr(paddle.base.core, "set_num_threads"):
        paddle.base.core.set_num_threads(config.threads)
    paddle.set_device("gpu:0" if config.gpu else "cpu")


def gpu_image_without_gpu(config: RunConfig, manifest: dict) -> str | None:
    """Why a run proves nothing about this image: a GPU flavor on a host (or container) without a GPU."""
    if not manifest.get("cuda") or config.gpus_available > 0:
        return None
    return (f"the {manifest.get('flavor', 'GPU')} flavor is a GPU image, but no GPU is visible in this container: "
            "its GPU gates did not run; fix: run it on a GPU host with --gpus all (or --gpus 0 to benchmark "
            "its CPU path anyway, still not a proof of the image)")


def hardware_key(device: str, gpu_names: list[str], gpus: int, cpu: str, threads: int) -> str:
    """What a baseline must have run on to be comparable: the GPU model and count, or the CPU and its threads."""
    if device == "gpu" and gpu_names:
        return f"{gpus}x {gpu_names[0]}"
    return f"{cpu}, {threads} threads"
