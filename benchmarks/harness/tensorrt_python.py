"""The TensorRT Python API path: an engine built from the ONNX export, its precision read back, run on Paddle's
GPU tensors.

Why a module of its own: it is the one back end that is not Paddle's, and the only place that asks TensorRT's
engine inspector which precision each layer was built in (trt_precision), so that a figure never carries a
precision TensorRT did not use. It imports nothing heavy at module level, so its decisions are unit-tested
with a fake `tensorrt` on any host.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.harness import trt_precision
from benchmarks.harness.paddle_engines import NotAvailable

if TYPE_CHECKING:
    import numpy as np


class TensorRTEngine:
    """An engine built from the ONNX model with the TensorRT Python API; buffers are Paddle GPU tensors."""

    def __init__(self, onnx_file: Path, precision: str, batch: int, image_size: int, data_format: str) -> None:
        try:
            import tensorrt as trt
        except ImportError as exc:
            raise NotAvailable("the TensorRT Python bindings are not in this image") from exc
        self.trt = trt
        logger = trt.Logger(trt.Logger.WARNING)
        builder = trt.Builder(logger)
        network = builder.create_network(0)
        parser = trt.OnnxParser(network, logger)
        if not parser.parse(onnx_file.read_bytes()):
            raise NotAvailable(f"TensorRT cannot parse the ONNX model: {parser.get_error(0)}")
        builder_config = builder.create_builder_config()
        builder_config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 1 << 30)
        builder_config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED  # the inspector names each layer's dtype
        if precision == "fp16":
            builder_config.set_flag(trt.BuilderFlag.FP16)
        elif precision != "fp32":
            raise NotAvailable(f"{precision} is not run through the TensorRT Python API")
        name = network.get_input(0).name
        shape = (batch, 3, image_size, image_size) if data_format == "NCHW" else (batch, image_size, image_size, 3)
        profile = builder.create_optimization_profile()
        profile.set_shape(name, shape, shape, shape)
        builder_config.add_optimization_profile(profile)
        serialized = builder.build_serialized_network(network, builder_config)
        if serialized is None:
            raise NotAvailable("TensorRT could not build an engine for this model")
        self.engine = trt.Runtime(logger).deserialize_cuda_engine(serialized)
        self.context = self.engine.create_execution_context()
        self.input_name, self.output_name = name, self.engine.get_tensor_name(1)
        self.context.set_input_shape(name, shape)
        inspector = self.engine.create_engine_inspector()
        inspector.execution_context = self.context  # input shapes set: the layers' formats are resolved
        information = inspector.get_engine_information(trt.LayerInformationFormat.JSON)
        try:
            self.layer_precisions = trt_precision.checked(precision,
                                                          trt_precision.compute_layer_precisions(information))
        except ValueError as exc:
            raise NotAvailable(str(exc)) from exc

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import paddle

        inp = paddle.to_tensor(x, place=paddle.CUDAPlace(0))
        out = paddle.empty(list(self.context.get_tensor_shape(self.output_name)), dtype="float32")
        self.context.set_tensor_address(self.input_name, inp.data_ptr())
        self.context.set_tensor_address(self.output_name, out.data_ptr())
        self.context.execute_async_v3(paddle.device.cuda.current_stream().cuda_stream)
        paddle.device.cuda.synchronize()
        return out.numpy()
