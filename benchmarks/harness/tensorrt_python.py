"""The TensorRT Python API path: an engine built from the ONNX export, its precision read back, run on Paddle's
GPU tensors; and the read-back of the engines Paddle-TRT (legacy) serialized, with the same inspector.

Why a module of its own: it is the one back end that is not Paddle's, and the only place that asks TensorRT's
engine inspector which precision each layer was built in (trt_precision), so that a figure never carries a
precision TensorRT did not use. One engine per sweep: an optimization profile from batch 1 to the sweep's
largest (opt = max), its input shape set per batch. It runs with the name-based I/O API (set_input_shape,
set_tensor_address, execute_async_v3), which TensorRT 8.5 introduced and TensorRT 10 keeps as the only one (the
binding-index API, execute_async_v2 with a bindings list, is gone in 10): gpu-cu118 ships TensorRT 8.6.1, gpu
TensorRT 10. Their one other difference here is ngc_common.tensorrt_api.network_flags. It imports nothing heavy at
module level, so its decisions are unit-tested with a fake `tensorrt` on any host.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.harness import trt_precision
from benchmarks.harness.paddle_engines import NotAvailable
from ngc_common.tensorrt_api import NAMED_IO, network_flags, version_of

if TYPE_CHECKING:
    import numpy as np

PADDLE_TRT_ENGINES = "trt_serialized_*"  # what Paddle-TRT writes to its optim cache dir with use_static=True


def import_tensorrt():
    try:
        import tensorrt as trt
    except ImportError as exc:
        raise NotAvailable("the TensorRT Python bindings are not in this image") from exc
    if version_of(trt) < NAMED_IO:
        raise NotAvailable(f"TensorRT {trt.__version__} predates the name-based I/O API (execute_async_v3, TensorRT "
                           f"{NAMED_IO[0]}.{NAMED_IO[1]}) this path runs")
    return trt


def layer_precisions(trt, engine, context, precision: str) -> dict[str, int]:
    """Compute layers per precision, read from the engine inspector with the context's shapes resolved;
    NotAvailable when none runs at `precision` (the figure would carry a precision TensorRT did not use)."""
    inspector = engine.create_engine_inspector()
    inspector.execution_context = context  # input shapes set: the layers' formats are resolved
    information = inspector.get_engine_information(trt.LayerInformationFormat.JSON)
    try:
        return trt_precision.checked(precision, trt_precision.compute_layer_precisions(information))
    except ValueError as exc:
        raise NotAvailable(str(exc)) from exc


def input_shape(batch: int, image_size: int, data_format: str) -> tuple[int, ...]:
    return (batch, 3, image_size, image_size) if data_format == "NCHW" else (batch, image_size, image_size, 3)


class TensorRTEngine:
    """An engine built from the ONNX model with the TensorRT Python API for batches min_batch..`batch`;
    buffers are Paddle GPU tensors."""

    def __init__(self, onnx_file: Path, precision: str, batch: int, image_size: int, data_format: str,
                 min_batch: int = 1) -> None:
        trt = self.trt = import_tensorrt()
        logger = trt.Logger(trt.Logger.WARNING)
        builder = trt.Builder(logger)
        network = builder.create_network(network_flags(trt))
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
        largest = input_shape(batch, image_size, data_format)
        profile = builder.create_optimization_profile()  # the whole sweep in one engine: min, opt, max
        profile.set_shape(name, input_shape(min_batch, image_size, data_format), largest, largest)
        builder_config.add_optimization_profile(profile)
        serialized = builder.build_serialized_network(network, builder_config)
        if serialized is None:
            raise NotAvailable("TensorRT could not build an engine for this model")
        self.engine = trt.Runtime(logger).deserialize_cuda_engine(serialized)
        self.context = self.engine.create_execution_context()
        self.input_name, self.output_name = name, self.engine.get_tensor_name(1)
        self.context.set_input_shape(name, largest)
        self.layer_precisions = layer_precisions(trt, self.engine, self.context, precision)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """One batch through the engine by tensor name (set_input_shape, set_tensor_address, execute_async_v3 on
        Paddle's current CUDA stream): the input copied to the GPU, the output a Paddle GPU tensor of the shape the
        context resolves (the run's device is the GPU: hardware.use_device), read back after a synchronize."""
        import paddle

        self.context.set_input_shape(self.input_name, tuple(x.shape))
        inp = paddle.to_tensor(x, place=paddle.CUDAPlace(0))
        out = paddle.empty(list(self.context.get_tensor_shape(self.output_name)), dtype="float32")
        self.context.set_tensor_address(self.input_name, inp.data_ptr())
        self.context.set_tensor_address(self.output_name, out.data_ptr())
        if not self.context.execute_async_v3(paddle.device.cuda.current_stream().cuda_stream):
            raise NotAvailable("TensorRT's execute_async_v3 refused the batch (see TensorRT's log above)")
        paddle.device.cuda.synchronize()
        return out.numpy()


def paddle_trt_layer_precisions(engine_dir: Path, precision: str) -> dict[str, int]:
    """The compute-layer precisions of the engines Paddle-TRT (legacy, `enable_tensorrt_engine` with
    use_static=True and `enable_tensorrt_inspector`, which builds them DETAILED) serialized under `engine_dir`,
    summed over its subgraphs; NotAvailable when there is none to read or none runs at `precision`."""
    files = sorted(engine_dir.rglob(PADDLE_TRT_ENGINES))
    if not files:
        raise NotAvailable(f"Paddle-TRT serialized no engine under {engine_dir} (use_static): its layer precisions "
                           "cannot be read back")
    trt = import_tensorrt()
    runtime = trt.Runtime(trt.Logger(trt.Logger.WARNING))
    total: dict[str, int] = {}
    for path in files:
        engine = runtime.deserialize_cuda_engine(path.read_bytes())
        if engine is None:
            raise NotAvailable(f"TensorRT cannot deserialize Paddle-TRT's engine {path.name}")
        context = engine.create_execution_context()
        for name in _input_names(trt, engine):  # the largest shape of the engine's profile: formats resolved
            context.set_input_shape(name, tuple(engine.get_tensor_profile_shape(name, 0)[2]))
        for kind, count in layer_precisions(trt, engine, context, "fp32").items():
            total[kind] = total.get(kind, 0) + count
    try:
        return trt_precision.checked(precision, Counter(total))
    except ValueError as exc:
        raise NotAvailable(str(exc)) from exc


def _input_names(trt, engine: Any) -> list[str]:
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    return [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
