"""What differs between the DALI releases the flavors ship, in one place: 1.34 (gpu-cu118: nvidia-dali-cuda110, the
last CUDA 11 wheel on PyPI) and 2.4 (cpu, gpu: nvidia-dali-cuda120).

The graph API the benchmarks use (fn.readers.file, fn.decoders.image[_random_crop] with device "cpu" or "mixed",
fn.resize, fn.crop_mirror_normalize, fn.random.coin_flip, pipeline_def with device_id=None for a pipeline without
a GPU) is the same in both; the differences that matter here:
- Building: DALI 1.x needs `Pipeline.build()` before `run()`; 2.x builds on first use (and accepts build()).
- The Paddle plugin (nvidia.dali.plugin.paddle.DALIGenericIterator) hands back Paddle *LoDTensors*
  (`paddle.framework.core.LoDTensor`, filled by feed_ndarray in 1.34, by copy or DLPack in 2.4), not dygraph
  `paddle.Tensor`s: `to_paddle` wraps them (no copy on the same place) so the training loop gets one kind.
- Decoders: 2.2+ decode with nvImageCodec by default, 1.34 with its own nvJPEG / libjpeg-turbo decoders; same
  operators and arguments, so nothing is switched on the version (named so a figure is read with it in mind).
- CPU pipelines feed Paddle as NumPy in both: the plugin asks for a CUDA place and stream unconditionally.
"""

from typing import Any


def major(version: str) -> int:
    return int(version.split(".")[0])


def dali_major() -> int:
    import nvidia.dali

    return major(nvidia.dali.__version__)


def built(pipe: Any) -> Any:
    """The pipeline, built: required before run() in DALI 1.x, harmless in 2.x."""
    pipe.build()
    return pipe


def to_paddle(value: Any) -> Any:
    """An output of DALIGenericIterator as a dygraph paddle.Tensor (the plugin gives LoDTensors in 1.34 and 2.4)."""
    import paddle

    return value if isinstance(value, paddle.Tensor) else paddle.to_tensor(value)
