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
