"""Build and run a TensorRT engine (TensorRT Python API), and Paddle-TRT on a saved model through the API its
program needs: a PIR `.json` program (Paddle 3's default) through paddle.tensorrt.convert then a plain
Config + enable_use_gpu; a legacy `.pdmodel` through Config.enable_tensorrt_engine (Paddle Inference 3.x
docs: that method applies to `.pdmodel` programs only)."""

import json
import tempfile
from pathlib import Path

import numpy as np

from ngc_common.tensorrt_api import network_flags  # the TensorRT 8/10 differences, shared with the benchmarks

SHAPE = [1, 3, 16, 16]


def tensorrt_engine() -> dict:
    """A one-layer network (y = relu(x)) built into an engine and run with Paddle-allocated buffers: an
    explicit-batch network (what execute_async_v3 runs; TensorRT 8's create_network(0) would be implicit-batch)."""
    import paddle
    import tensorrt as trt

    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(network_flags(trt))
    x = network.add_input("x", trt.float32, (4, 16))
    relu = network.add_activation(x, trt.ActivationType.RELU)
    network.mark_output(relu.get_output(0))
    config = builder.create_builder_config()
    serialized = builder.build_serialized_network(network, config)
    engine = trt.Runtime(logger).deserialize_cuda_engine(serialized)
    context = engine.create_execution_context()
    data = np.linspace(-1, 1, 64, dtype="float32").reshape(4, 16)
    inp = paddle.to_tensor(data, place=paddle.CUDAPlace(0))
    out = paddle.zeros([4, 16], dtype="float32").cuda()
    context.set_tensor_address("x", inp.data_ptr())
    context.set_tensor_address(engine.get_tensor_name(1), out.data_ptr())
    ok = context.execute_async_v3(paddle.device.cuda.current_stream().cuda_stream)
    paddle.device.cuda.synchronize()
    return {"tensorrt": trt.__version__, "executed": bool(ok),
            "max_error": float(np.abs(out.numpy() - np.maximum(data, 0)).max())}


def paddle_trt_config(model: Path, params: Path, folder: Path):
    """(Config, engine name) for Paddle-TRT FP32 on this saved program."""
    from paddle import inference

    if model.suffix == ".json":
        from paddle.tensorrt.export import Input, PrecisionMode, TensorRTConfig, convert

        prefix = folder / "trt" / "net"
        convert(str(model), TensorRTConfig(inputs=[Input(min_input_shape=SHAPE, optim_input_shape=SHAPE,
                                                         max_input_shape=SHAPE, name="x")],
                                           min_subgraph_size=1, save_model_dir=str(prefix),
                                           precision_mode=PrecisionMode.FP32))
        if b"tensorrt_engine" not in prefix.with_suffix(".json").read_bytes():
            raise RuntimeError("paddle.tensorrt.convert put no layer of the network in TensorRT")
        config = inference.Config(str(prefix.with_suffix(".json")), str(prefix.with_suffix(".pdiparams")))
        config.enable_use_gpu(256, 0)
        return config, "paddle-trt-pir"
    config = inference.Config(str(model), str(params))
    config.enable_use_gpu(256, 0)
    config.enable_tensorrt_engine(workspace_size=1 << 28, max_batch_size=1, min_subgraph_size=1,
                                  precision_mode=inference.PrecisionType.Float32, use_static=False,
                                  use_calib_mode=False)
    return config, "paddle-trt-legacy"


def paddle_trt() -> dict:
    """The same small model through Paddle-TRT, FP32, against Paddle's own output."""
    import paddle
    from paddle import inference

    net = paddle.nn.Sequential(paddle.nn.Conv2D(3, 8, 3, padding=1), paddle.nn.ReLU(), paddle.nn.Flatten(),
                               paddle.nn.Linear(8 * 16 * 16, 10))
    net.eval()
    x = np.random.default_rng(0).normal(size=SHAPE).astype("float32")
    reference = net(paddle.to_tensor(x)).numpy()
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "net"
        paddle.jit.save(net, str(prefix), input_spec=[paddle.static.InputSpec(SHAPE, "float32", "x")])
        model = prefix.with_suffix(".json") if prefix.with_suffix(".json").exists() else prefix.with_suffix(".pdmodel")
        config, engine = paddle_trt_config(model, prefix.with_suffix(".pdiparams"), Path(tmp))
        predictor = inference.create_predictor(config)
        predictor.get_input_handle(predictor.get_input_names()[0]).copy_from_cpu(x)
        predictor.run()
        out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    return {"paddle_trt_engine": engine,
            "paddle_trt_max_rel_error": float(np.abs(out - reference).max() / np.abs(reference).max())}


if __name__ == "__main__":
    print(json.dumps({**tensorrt_engine(), **paddle_trt()}))
