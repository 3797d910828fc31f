"""A TensorRT figure carries the precision TensorRT built, read from its engine inspector, or is refused.

TensorRT is not on this host: a fake `tensorrt` module stands in for the TensorRT 10 Python API calls that
benchmarks/harness/tensorrt_python.py's TensorRTEngine makes, and returns the inspector JSON a DETAILED build gives.
"""

import json
import sys
import types
from pathlib import Path

import pytest

from benchmarks.harness import trt_precision
from benchmarks.harness.paddle_engines import NotAvailable
from benchmarks.harness.tensorrt_python import TensorRTEngine

FP16_CONV = "Channel major FP16 format where channel % 8 == 0"
FP32 = "Row major linear FP32"
INT8_CONV = "Channel major INT8 format where channel % 32 == 0"


def layer(kind: str, parameter: str, datatype: str) -> dict:
    return {"Name": f"{parameter} 1", "LayerType": kind, "ParameterType": parameter,
            "Inputs": [{"Name": "in", "Location": "Device", "Dimensions": [8, 64, 56, 56],
                        "Format/Datatype": datatype}],
            "Outputs": [{"Name": "out", "Location": "Device", "Dimensions": [8, 64, 56, 56],
                         "Format/Datatype": FP32}]}


def information(*layers: dict) -> str:
    return json.dumps({"Layers": list(layers), "Bindings": ["x", "out"]})


def test_compute_layers_are_counted_by_the_precision_of_their_input() -> None:
    info = information(layer("CaskConvolution", "Convolution", FP16_CONV),
                       layer("CaskGemmConvolution", "Convolution", INT8_CONV),
                       layer("CaskGemm", "MatrixMultiply", FP32),
                       layer("Reformat", "Reformat", FP16_CONV),  # not a compute layer
                       layer("PointWiseV2", "PointWise", FP16_CONV))
    assert trt_precision.compute_layer_precisions(info) == {"fp16": 1, "int8": 1, "fp32": 1}


def test_a_precision_no_compute_layer_runs_in_is_refused() -> None:
    all_fp32 = trt_precision.compute_layer_precisions(information(layer("CaskConvolution", "Convolution", FP32)))
    with pytest.raises(ValueError, match=r"TensorRT built no FP16 compute layer \(1 fp32\): not reported as fp16"):
        trt_precision.checked("fp16", all_fp32)
    assert trt_precision.checked("fp32", all_fp32) == {"fp32": 1}
    names_only = json.dumps({"Layers": ["conv1", "conv2"], "Bindings": ["x", "out"]})  # LAYER_NAMES_ONLY build
    with pytest.raises(ValueError, match="listed no compute layer"):
        trt_precision.checked("fp16", trt_precision.compute_layer_precisions(names_only))
    assert trt_precision.checked("fp32", trt_precision.compute_layer_precisions(names_only)) == {}


def fake_tensorrt(engine_information: str, calls: list) -> types.ModuleType:
    """The TensorRT 10 Python API as far as TensorRTEngine uses it; each call that matters is recorded."""
    trt = types.ModuleType("tensorrt")
    trt.ProfilingVerbosity = types.SimpleNamespace(DETAILED="DETAILED", LAYER_NAMES_ONLY="LAYER_NAMES_ONLY")
    trt.LayerInformationFormat = types.SimpleNamespace(JSON="JSON", ONELINE="ONELINE")
    trt.MemoryPoolType = types.SimpleNamespace(WORKSPACE="WORKSPACE")
    trt.BuilderFlag = types.SimpleNamespace(FP16="FP16", INT8="INT8")

    class Logger:
        WARNING = 2

        def __init__(self, level: int) -> None:
            self.level = level

    class Config:
        profiling_verbosity = "LAYER_NAMES_ONLY"

        def set_memory_pool_limit(self, pool, size) -> None:
            calls.append(("workspace", size))

        def set_flag(self, flag) -> None:
            calls.append(("flag", flag))

        def add_optimization_profile(self, profile) -> None:
            calls.append(("profile", profile.shapes))

    class Profile:
        def set_shape(self, name, *shapes) -> None:
            self.shapes = (name, *shapes)

    class Network:
        def get_input(self, _i):
            return types.SimpleNamespace(name="x")

    class Builder:
        def __init__(self, logger) -> None:
            self.config = Config()

        def create_network(self, flags):
            return Network()

        def create_builder_config(self):
            return self.config

        def create_optimization_profile(self):
            return Profile()

        def build_serialized_network(self, network, config):
            calls.append(("built with verbosity", config.profiling_verbosity))
            return b"plan"

    class Inspector:
        execution_context = None

        def get_engine_information(self, fmt):
            calls.append(("inspected", fmt, self.execution_context is not None))
            return engine_information

    class Engine:
        def create_execution_context(self):
            return types.SimpleNamespace(set_input_shape=lambda name, shape: calls.append(("input", name, shape)))

        def get_tensor_name(self, i):
            return "out"

        def create_engine_inspector(self):
            return Inspector()

    class Runtime:
        def __init__(self, logger) -> None:
            pass

        def deserialize_cuda_engine(self, plan):
            return Engine()

    class OnnxParser:
        def __init__(self, network, logger) -> None:
            pass

        def parse(self, data) -> bool:
            return True

    trt.Logger, trt.Builder, trt.Runtime, trt.OnnxParser = Logger, Builder, Runtime, OnnxParser
    return trt


def test_tensorrt_engine_builds_detailed_and_reports_the_layers_precision(tmp_path: Path, monkeypatch) -> None:
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"onnx")
    calls: list = []
    info = information(layer("CaskConvolution", "Convolution", FP16_CONV), layer("CaskGemm", "Gemm", FP32))
    monkeypatch.setitem(sys.modules, "tensorrt", fake_tensorrt(info, calls))
    engine = TensorRTEngine(onnx, "fp16", 8, 224, "NCHW")
    assert ("flag", "FP16") in calls and ("built with verbosity", "DETAILED") in calls
    assert ("inspected", "JSON", True) in calls  # with the execution context: formats resolved
    assert engine.layer_precisions == {"fp16": 1, "fp32": 1}


def test_tensorrt_engine_that_kept_every_layer_fp32_is_not_an_fp16_figure(tmp_path: Path, monkeypatch) -> None:
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"onnx")
    info = information(layer("CaskConvolution", "Convolution", FP32))
    monkeypatch.setitem(sys.modules, "tensorrt", fake_tensorrt(info, []))
    with pytest.raises(NotAvailable, match="TensorRT built no FP16 compute layer"):
        TensorRTEngine(onnx, "fp16", 8, 224, "NCHW")


def with_trt8(trt: types.ModuleType) -> types.ModuleType:
    """The fake as TensorRT 8.6 (what gpu-cu118 ships): its explicit-batch network flag."""
    trt.__version__ = "8.6.1"
    trt.NetworkDefinitionCreationFlag = types.SimpleNamespace(EXPLICIT_BATCH=0)
    return trt


@pytest.mark.parametrize("version, flags", [("10.5.0", 0), ("8.6.1", 1)])
def test_the_onnx_network_is_explicit_batch_in_tensorrt_8_and_10(tmp_path: Path, monkeypatch, version: str,
                                                                 flags: int) -> None:
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"onnx")
    calls: list = []
    trt = with_trt8(fake_tensorrt(information(layer("CaskConvolution", "Convolution", FP32)), calls))
    trt.__version__ = version
    created = []
    original = trt.Builder.create_network
    monkeypatch.setattr(trt.Builder, "create_network", lambda self, f: created.append(f) or original(self, f))
    monkeypatch.setitem(sys.modules, "tensorrt", trt)
    TensorRTEngine(onnx, "fp32", 8, 224, "NCHW")
    assert created == [flags]


def test_one_engine_serves_the_batch_sweep_through_its_optimization_profile(tmp_path: Path, monkeypatch) -> None:
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"onnx")
    calls: list = []
    monkeypatch.setitem(sys.modules, "tensorrt", with_trt8(fake_tensorrt(
        information(layer("CaskConvolution", "Convolution", FP32)), calls)))
    TensorRTEngine(onnx, "fp32", 256, 224, "NCHW", min_batch=1)
    profile = next(c[1] for c in calls if c[0] == "profile")
    assert profile == ("x", (1, 3, 224, 224), (256, 3, 224, 224), (256, 3, 224, 224))  # min 1, opt = max = 256


def test_paddle_trt_engines_are_read_back_with_the_inspector(tmp_path: Path, monkeypatch) -> None:
    from benchmarks.harness.tensorrt_python import paddle_trt_layer_precisions

    calls: list = []
    info = information(layer("CaskConvolution", "Convolution", FP16_CONV), layer("CaskGemm", "Gemm", FP32))
    trt = with_trt8(fake_tensorrt(info, calls))
    trt.TensorIOMode = types.SimpleNamespace(INPUT="INPUT", OUTPUT="OUTPUT")
    engine_class = type(trt.Runtime(None).deserialize_cuda_engine(b""))
    engine_class.num_io_tensors = 2
    engine_class.get_tensor_name = lambda self, i: ["x", "out"][i]
    engine_class.get_tensor_mode = lambda self, name: "INPUT" if name == "x" else "OUTPUT"
    engine_class.get_tensor_profile_shape = lambda self, name, profile: [(1, 3, 64, 64), (8, 3, 64, 64),
                                                                         (8, 3, 64, 64)]
    monkeypatch.setitem(sys.modules, "tensorrt", trt)
    with pytest.raises(NotAvailable, match="Paddle-TRT serialized no engine"):
        paddle_trt_layer_precisions(tmp_path, "fp16")
    (tmp_path / "_opt_cache").mkdir()
    for key in ("a", "b"):  # one engine per TensorRT subgraph
        (tmp_path / "_opt_cache" / f"trt_serialized_{key}").write_bytes(b"plan")
    assert paddle_trt_layer_precisions(tmp_path, "fp16") == {"fp16": 2, "fp32": 2}
    assert ("input", "x", (8, 3, 64, 64)) in calls and ("inspected", "JSON", True) in calls
    with pytest.raises(NotAvailable, match="TensorRT built no INT8 compute layer"):
        paddle_trt_layer_precisions(tmp_path, "int8")


class NamedIOContext:
    """An IExecutionContext of TensorRT 8.6 (what gpu-cu118 ships) / 10 as far as a batch needs it: the name-based
    I/O API only (no execute_async_v2, no bindings list, which TensorRT 10 removed)."""

    def __init__(self, calls: list, ok: bool = True) -> None:
        self.calls, self.ok, self.shapes = calls, ok, {}

    def set_input_shape(self, name: str, shape: tuple) -> bool:
        self.shapes[name] = shape
        self.calls.append(("set_input_shape", name, shape))
        return True

    def get_tensor_shape(self, name: str) -> tuple:
        return (self.shapes["x"][0], 1000)

    def set_tensor_address(self, name: str, address: int) -> bool:
        self.calls.append(("set_tensor_address", name, address))
        return True

    def execute_async_v3(self, stream_handle: int) -> bool:
        self.calls.append(("execute_async_v3", stream_handle))
        return self.ok


def fake_paddle_gpu(calls: list) -> types.ModuleType:
    """paddle as far as TensorRTEngine.__call__ uses it: GPU tensors with a data pointer, the current stream (arrays
    stand in as objects with a shape: NumPy is not on this host)."""

    class Tensor:
        def __init__(self, shape: tuple, where: str) -> None:
            self.shape, self.where = tuple(shape), where

        def data_ptr(self) -> int:
            return 0x1000 if self.where == "input" else 0x2000

        def numpy(self):
            return types.SimpleNamespace(shape=self.shape)

    paddle = types.ModuleType("paddle")
    paddle.CUDAPlace = lambda device: ("gpu", device)
    paddle.to_tensor = lambda x, place: calls.append(("to_tensor", place)) or Tensor(x.shape, "input")
    paddle.empty = lambda shape, dtype: Tensor(shape, "output")
    paddle.device = types.SimpleNamespace(cuda=types.SimpleNamespace(
        current_stream=lambda: types.SimpleNamespace(cuda_stream=77), synchronize=lambda: calls.append(("sync",))))
    return paddle


def test_a_batch_runs_by_tensor_name_on_paddles_stream(monkeypatch) -> None:
    """TensorRTEngine.__call__: the batch's shape set, both buffers by tensor name (Paddle's GPU pointers), the
    engine enqueued on Paddle's current stream with execute_async_v3, synchronized before the output is read."""
    calls: list = []
    monkeypatch.setitem(sys.modules, "paddle", fake_paddle_gpu(calls))
    engine = TensorRTEngine.__new__(TensorRTEngine)  # the built engine's state, without building one
    engine.context, engine.input_name, engine.output_name = NamedIOContext(calls), "x", "out"
    out = engine(types.SimpleNamespace(shape=(4, 3, 8, 8)))
    assert out.shape == (4, 1000)
    assert calls == [("set_input_shape", "x", (4, 3, 8, 8)), ("to_tensor", ("gpu", 0)),
                     ("set_tensor_address", "x", 0x1000), ("set_tensor_address", "out", 0x2000),
                     ("execute_async_v3", 77), ("sync",)]
    engine.context = NamedIOContext([], ok=False)
    with pytest.raises(NotAvailable, match="execute_async_v3 refused the batch"):
        engine(types.SimpleNamespace(shape=(1, 3, 8, 8)))


def test_a_tensorrt_without_the_named_io_api_is_not_run(monkeypatch) -> None:
    from benchmarks.harness.tensorrt_python import import_tensorrt

    old = types.ModuleType("tensorrt")
    old.__version__ = "8.4.3.1"
    monkeypatch.setitem(sys.modules, "tensorrt", old)
    with pytest.raises(NotAvailable, match=r"TensorRT 8.4.3.1 predates the name-based I/O API"):
        import_tensorrt()
    old.__version__ = "8.6.1"
    assert import_tensorrt() is old
