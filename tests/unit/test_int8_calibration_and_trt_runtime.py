"""INT8 calibration sees a fixed number of real images whatever the batch size, and a Paddle that finds no TensorRT
runtime makes Paddle-TRT "not available" with the reason, never a traceback (Paddle and NumPy are not on this host:
a fake paddle stands in for what benchmarks/harness/paddle_engines.py asks it)."""

import sys
import types
from pathlib import Path

import pytest

from benchmarks.harness import paddle_engines, quantization
from benchmarks.harness.paddle_engines import NotAvailable, paddle_trt_available
from benchmarks.harness.quantization import CALIBRATION_IMAGES, Calibration, images_in


def test_calibration_takes_the_same_images_at_every_batch_size() -> None:
    plenty = Calibration(lambda batch: iter(()), available=5000)
    for batch in (1, 8, 64, 256):
        assert plenty.images() == CALIBRATION_IMAGES
        assert (plenty.batches(batch) - 1) * batch < CALIBRATION_IMAGES <= plenty.batches(batch) * batch
    assert plenty.batches(1) == CALIBRATION_IMAGES  # bs1 is no longer 16 images
    few = Calibration(lambda batch: iter(()), available=40)
    assert few.images() == 40 and few.batches(16) == 3
    assert few.described(16) == \
        f"40 real images, all --data holds (fewer than {CALIBRATION_IMAGES}), in 3 batches of 16"


def test_the_images_of_a_folder_are_counted_as_dalis_reader_finds_them(tmp_path: Path) -> None:
    for cls, names in (("n01", ["a.JPEG", "b.jpg", "notes.txt"]), ("n02", ["c.png"])):
        (tmp_path / cls).mkdir()
        for name in names:
            (tmp_path / cls / name).write_bytes(b"x")
    assert images_in(str(tmp_path)) == 3
    assert quantization.calibration_source(None, 224, "NCHW", gpu=False) is None


def fake_paddle(runtime, compiled=(8, 5, 3)) -> types.ModuleType:
    paddle = types.ModuleType("paddle")
    paddle.is_compiled_with_cuda = lambda: True
    inference = types.ModuleType("paddle.inference")
    inference.get_trt_compile_version = lambda: compiled
    inference.get_trt_runtime_version = runtime
    paddle.inference = inference
    return paddle


def missing_libnvinfer():
    raise RuntimeError("(NotFound) TensorRT is needed, but TensorRT dynamic library is not found.\n  Suggestions:\n"
                       "  1. Check if the TensorRT is installed correctly")


@pytest.mark.parametrize("runtime, reason", [
    (missing_libnvinfer, "Paddle finds no TensorRT runtime (libnvinfer.so): (NotFound) TensorRT is needed, but "
                         "TensorRT dynamic library is not found."),
    (lambda: (0, 0, 0), "Paddle finds no TensorRT runtime (libnvinfer.so)"),
    (lambda: (10, 5, 0), "Paddle is built for TensorRT 8.x but the image has 10.x"),
])
def test_a_paddle_without_a_usable_tensorrt_is_not_available_with_the_reason(monkeypatch, runtime, reason) -> None:
    paddle = fake_paddle(runtime)
    monkeypatch.setitem(sys.modules, "paddle", paddle)
    monkeypatch.setitem(sys.modules, "paddle.inference", paddle.inference)
    monkeypatch.setattr(paddle_engines.environment, "left_out", lambda layer: None)  # the image has the layer
    with pytest.raises(NotAvailable) as caught:
        paddle_trt_available("gpu")
    assert str(caught.value) == reason
    monkeypatch.setitem(sys.modules, "paddle", fake_paddle(lambda: (8, 6, 1)))
    monkeypatch.setitem(sys.modules, "paddle.inference", sys.modules["paddle"].inference)
    paddle_trt_available("gpu")  # TensorRT 8.6 beside a Paddle compiled against 8.5: the same major, it runs
