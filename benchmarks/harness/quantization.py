"""INT8 for Paddle-TRT: post-training quantization with Paddle's own API, calibrated on real images.

Why: PIR-TRT has no calibrator; TensorRT builds INT8 layers from a program whose quantize/dequantize ops
carry the scales (paddle_engines.plan refuses INT8 on a program without them). So an INT8 run first
quantizes the model with `paddle.quantization.PTQ` (QuantConfig with AbsmaxObserver for activations and
weights: observers inserted by `quantize`, calibration batches run through the observed model, `convert` to
quantize/dequantize layers) and exports that with paddle.jit.save; Paddle-TRT then reads its scales. A legacy
`.pdmodel` export calibrates inside Paddle-TRT instead (use_calib_mode), on the same images. Scales from
random tensors would describe noise, so INT8 needs real images (--data, else --eval-data) and is not run
without them.

The long form: docs/design-notes.md, section `benchmarks/harness/quantization.py`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchmarks.harness.paddle_engines import NotAvailable, is_quantized

if TYPE_CHECKING:  # NumPy is the image's; the counting below is unit-tested on hosts without it
    from pathlib import Path

    import numpy as np

CALIBRATION_IMAGES = 500  # real images through the calibration, at every batch size ("a few hundred")
PTQ_BATCH = 16  # the batch the PTQ observers see the calibration images in
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")  # what DALI's file reader decodes
NO_IMAGES = ("INT8 needs real images to calibrate its scales (random tensors would describe noise): give --data DIR "
             "or --eval-data DIR (ImageNet-style); INT8 is not run without them")


def images_in(folder: str) -> int:
    """The images of an ImageNet-style folder (one subfolder per class), as DALI's file reader finds them."""
    count = 0
    for _root, _dirs, files in os.walk(folder):
        count += sum(1 for name in files if name.lower().endswith(IMAGE_SUFFIXES))
    return count


@dataclass(frozen=True)
class Calibration:
    """Evaluation-style batches (resize, centre crop, normalise) of real images as NumPy arrays, and how many
    images the folder holds: calling it with a batch size gives an endless iterator of batches (DALI loops)."""

    source: Callable[[int], Iterator[np.ndarray]]
    available: int

    def __call__(self, batch: int) -> Iterator[np.ndarray]:
        return self.source(batch)

    def images(self) -> int:
        """How many images the calibration sees: CALIBRATION_IMAGES, or all the folder has where it has fewer."""
        return min(CALIBRATION_IMAGES, self.available) if self.available else CALIBRATION_IMAGES

    def batches(self, batch: int) -> int:
        """Batches of `batch` that carry images() images (the last one filled up by DALI's next epoch)."""
        return max(1, math.ceil(self.images() / batch))

    def described(self, batch: int) -> str:
        fewer = f", all --data holds (fewer than {CALIBRATION_IMAGES})" if self.images() < CALIBRATION_IMAGES else ""
        return f"{self.images()} real images{fewer}, in {self.batches(batch)} batches of {batch}"


def calibration_source(folder: str | None, image_size: int, data_format: str, gpu: bool, seed: int = 0
                       ) -> Calibration | None:
    """The calibration images of `folder`; None without one."""
    if not folder:
        return None

    def batches(batch: int) -> Iterator[np.ndarray]:
        from benchmarks.harness import data

        for images, _labels in data.dali(folder, batch, image_size, data_format, gpu=gpu, train=False, seed=seed):
            yield images.numpy()

    return Calibration(batches, images_in(folder))


def ptq_export(model, calibration: Calibration | None, export: Callable, image_size: int, data_format: str,
               folder: Path, batches: list[int]) -> dict[int, tuple[Path, Path]]:
    """The model quantized by paddle.quantization.PTQ on the calibration's images (Calibration.images(), in batches of
    PTQ_BATCH), exported with `export`
    (inference.export) once per batch size into folder/int8-ptq-bsN: batch size -> (model file, params file) of a
    program with quantize/dequantize ops. Per batch size because Paddle's quantize layer gives each activation a
    persistable value of the activation's shape, which a dynamic batch (-1) cannot have under PIR."""
    if calibration is None:
        raise NotAvailable(NO_IMAGES)
    import paddle
    from paddle.quantization import PTQ, QuantConfig
    from paddle.quantization.observers import AbsmaxObserver

    model.eval()
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(quant_bits=8), weight=AbsmaxObserver(quant_bits=8)))
    observed = ptq.quantize(model, inplace=False)
    images = calibration(PTQ_BATCH)
    with paddle.no_grad():
        for _ in range(calibration.batches(PTQ_BATCH)):
            observed(paddle.to_tensor(next(images)))
    quantized = ptq.convert(observed, inplace=False)
    programs = {}
    for batch in batches:
        target = folder / f"int8-ptq-bs{batch}"
        target.mkdir(parents=True, exist_ok=True)
        programs[batch] = export(quantized, image_size, data_format, target, batch)
        if not is_quantized(programs[batch][0]):
            raise NotAvailable(f"paddle.quantization.PTQ's export {programs[batch][0]} holds no quantize/dequantize "
                               "ops")
    return programs
