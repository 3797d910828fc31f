"""INT8 for Paddle-TRT: post-training quantization with Paddle's own API, calibrated on real images.

Why: PIR-TRT has no calibrator; TensorRT builds INT8 layers from a program whose quantize/dequantize ops
carry the scales (paddle_engines.plan refuses INT8 on a program without them). So an INT8 run first
quantizes the model with `paddle.quantization.PTQ` (QuantConfig with AbsmaxObserver for activations and
weights: observers inserted by `quantize`, calibration batches run through the observed model, `convert` to
quantize/dequantize layers) and exports that with paddle.jit.save; Paddle-TRT then reads its scales. A legacy
`.pdmodel` export calibrates inside Paddle-TRT instead (use_calib_mode), on the same images. Scales from
random tensors would describe noise, so INT8 needs real images (--data, else --eval-data) and is not run
without them.
"""

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from benchmarks.harness.paddle_engines import NotAvailable, is_quantized

CALIBRATION_BATCHES = 16  # x CALIBRATION_BATCH images through the observers (PaddleSlim's examples use 10-32 batches)
CALIBRATION_BATCH = 16
Calibration = Callable[[int], Iterator[np.ndarray]]  # batch size -> real, preprocessed image batches
NO_IMAGES = ("INT8 needs real images to calibrate its scales (random tensors would describe noise): give --data DIR "
             "or --eval-data DIR (ImageNet-style); INT8 is not run without them")


def calibration_source(folder: str | None, image_size: int, data_format: str, gpu: bool, seed: int = 0
                       ) -> Calibration | None:
    """Evaluation-style batches (resize, centre crop, normalise) of `folder` as NumPy arrays; None without one."""
    if not folder:
        return None

    def batches(batch: int) -> Iterator[np.ndarray]:
        from benchmarks.harness import data

        for images, _labels in data.dali(folder, batch, image_size, data_format, gpu=gpu, train=False, seed=seed):
            yield images.numpy()

    return batches


def ptq_export(model, calibration: Calibration | None, export: Callable, image_size: int, data_format: str,
               folder: Path, batches: list[int]) -> dict[int, tuple[Path, Path]]:
    """The model quantized by paddle.quantization.PTQ on CALIBRATION_BATCHES real batches, exported with `export`
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
    images = calibration(CALIBRATION_BATCH)
    with paddle.no_grad():
        for _ in range(CALIBRATION_BATCHES):
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
