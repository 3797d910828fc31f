"""What differs between the DALI releases the flavors ship, in one place: 1.34 (gpu-cu118: nvidia-dali-cuda110, the
last CUDA 11 wheel on PyPI) and 2.4 (cpu, gpu: nvidia-dali-cuda120).

The long form: docs/design-notes.md, section `benchmarks/harness/dali_compat.py`.
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
