"""Inference back ends shared by the models, over a batch-size sweep, with output agreement.

paddle-inference: Paddle Inference on the CPU (oneDNN, on the run's CPU threads) or the GPU (FP32,
FP16; INT8 only through TensorRT). paddle-trt: Paddle Inference with the TensorRT subgraph engine
(FP32/FP16; INT8 calibrated first, then the deployed predictor that loads the table is timed). onnxruntime: paddle2onnx
export run in ONNX Runtime. tensorrt: the same ONNX model built into an engine with the TensorRT
Python API. A back end the image or the host cannot run returns "not available" with the reason.
"""

import tempfile
from pathlib import Path

import numpy as np

from benchmarks.harness.timing import StepTimer


class NotAvailable(Exception):
    """The back end cannot run here; str() says why."""


def export(model, image_size: int, data_format: str, folder: Path) -> tuple[Path, Path]:
    """paddle.jit.save with a dynamic batch; returns (model file, params file)."""
    import paddle

    shape = [None, 3, image_size, image_size] if data_format == "NCHW" else [None, image_size, image_size, 3]
    model.eval()
    prefix = folder / "model"
    paddle.jit.save(model, str(prefix), input_spec=[paddle.static.InputSpec(shape, "float32", "x")])
    for suffix in (".json", ".pdmodel"):
        if prefix.with_suffix(suffix).exists():
            return prefix.with_suffix(suffix), prefix.with_suffix(".pdiparams")
    raise NotAvailable(f"paddle.jit.save wrote no model under {folder}")


def input_batch(batch: int, image_size: int, data_format: str, seed: int = 0) -> np.ndarray:
    shape = (batch, 3, image_size, image_size) if data_format == "NCHW" else (batch, image_size, image_size, 3)
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


# ---- Paddle Inference and Paddle-TRT -------------------------------------------------------------

def _trt_available(device: str) -> None:
    import paddle

    if device != "gpu":
        raise NotAvailable("Paddle-TRT needs a GPU")
    try:
        from paddle.inference import get_trt_compile_version, get_trt_runtime_version
    except ImportError as exc:
        raise NotAvailable("this Paddle build has no TensorRT support") from exc
    compiled, runtime = tuple(get_trt_compile_version()), tuple(get_trt_runtime_version())
    if not paddle.is_compiled_with_cuda() or compiled[0] == 0:
        raise NotAvailable("this Paddle build has no TensorRT support")
    if runtime[0] == 0:
        raise NotAvailable(f"TensorRT runtime (libnvinfer.so.{compiled[0]}) not found in this image")
    if runtime[0] != compiled[0]:
        raise NotAvailable(f"Paddle is built for TensorRT {compiled[0]}.x but the image has {runtime[0]}.x")


def _predictor(files: tuple[Path, Path], device: str, precision: str, trt: bool, batch: int, threads: int,
               calibrate: bool = False, cache: Path | None = None):
    from paddle import inference

    config = inference.Config(str(files[0]), str(files[1]))
    if device == "gpu":
        if not trt and precision == "int8":
            raise NotAvailable("Paddle Inference runs INT8 on GPUs only through TensorRT: use --backends paddle-trt")
        half = precision == "fp16" and not trt
        config.enable_use_gpu(1024, 0, inference.PrecisionType.Half if half else inference.PrecisionType.Float32)
        if trt:
            mode = {"fp32": inference.PrecisionType.Float32, "fp16": inference.PrecisionType.Half,
                    "int8": inference.PrecisionType.Int8}[precision]
            if cache is not None:  # where the INT8 calibration table is written, then read back
                config.set_optim_cache_dir(str(cache))
            config.enable_tensorrt_engine(workspace_size=1 << 30, max_batch_size=batch, min_subgraph_size=3,
                                          precision_mode=mode, use_static=False, use_calib_mode=calibrate)
    else:
        if precision != "fp32":
            raise NotAvailable(f"Paddle Inference on the CPU runs fp32 here, not {precision}")
        config.disable_gpu()
        config.enable_mkldnn()
        config.set_cpu_math_library_num_threads(threads)
    config.disable_glog_info()
    return inference.create_predictor(config)


def _run_predictor(predictor, x: np.ndarray) -> np.ndarray:
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.reshape(list(x.shape))
    handle.copy_from_cpu(x)
    predictor.run()
    return predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()


CALIBRATION_BATCHES = 8


def calibrate_int8(files, bs: int, image_size: int, data_format: str, threads: int, cache: Path) -> Path:
    """Paddle-TRT's calibrate-then-deploy: a calibration predictor sees CALIBRATION_BATCHES batches and writes
    its table (trt_calib_*) into `cache` when it is destroyed; a second predictor with the same config
    finds the table there and builds its INT8 engine from it (that one is timed)."""
    import gc

    calibrator = _predictor(files, "gpu", "int8", True, bs, threads, calibrate=True, cache=cache)
    for seed in range(CALIBRATION_BATCHES):
        _run_predictor(calibrator, input_batch(bs, image_size, data_format, seed))
    del calibrator
    gc.collect()
    tables = sorted(cache.rglob("trt_calib_*"))
    if not tables:
        raise NotAvailable(f"Paddle-TRT INT8 calibration wrote no table under {cache}")
    return tables[-1]


def paddle_backend(files, device: str, precision: str, trt: bool, batches: list[int], image_size: int,
                   data_format: str, warmup: int, iters: int, threads: int = 1) -> dict:
    if trt:
        _trt_available(device)
    results = {}
    for bs in batches:
        x = input_batch(bs, image_size, data_format)
        cache, timed = None, None
        if trt and precision == "int8":
            cache = files[0].parent / f"trt-int8-bs{bs}"
            table = calibrate_int8(files, bs, image_size, data_format, threads, cache)
            timed = f"the deployed INT8 predictor, loading calibration table {table.name} ({CALIBRATION_BATCHES} " \
                    "calibration batches)"
        # Paddle-TRT loads trt_calib_* only with use_calib_mode on: the deployed predictor uses the same
        # config as the calibrating one and, finding the table in `cache`, builds the INT8 engine from it.
        predictor = _predictor(files, device, precision, trt, bs, threads, calibrate=cache is not None, cache=cache)
        timing = StepTimer(warmup, iters, bs).run(lambda _i, p=predictor, x=x: _run_predictor(p, x))
        results[f"bs{bs}"] = timing.summary() | ({"timed": timed} if timed else {})
    return results


# ---- ONNX: ONNX Runtime and the TensorRT Python API ----------------------------------------------

def onnx_model(files: tuple[Path, Path], folder: Path) -> Path:
    try:
        import paddle2onnx
    except ImportError as exc:
        raise NotAvailable("paddle2onnx is not in this image") from exc
    target = folder / "model.onnx"
    if not target.exists():
        paddle2onnx.export(model_filename=str(files[0]), params_filename=str(files[1]), save_file=str(target))
    return target


ORT_ERRORS_ONLY = 3  # ONNX Runtime's severity levels: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal


def ort_session(onnx_file: Path, providers: list[str]):
    """An ONNX Runtime session that logs errors only: at warning level ORT prints a line per initializer that
    paddle2onnx's export leaves unused ("Removing initializer ..."), hundreds per model, which buried the run's
    own output; real errors still show (and raise)."""
    import onnxruntime as ort

    ort.set_default_logger_severity(ORT_ERRORS_ONLY)
    options = ort.SessionOptions()
    options.log_severity_level = ORT_ERRORS_ONLY
    return ort.InferenceSession(str(onnx_file), sess_options=options, providers=providers)


def onnxruntime_backend(onnx_file: Path, device: str, precision: str, batches: list[int], image_size: int,
                        data_format: str, warmup: int, iters: int) -> dict:
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise NotAvailable("onnxruntime is not in this image") from exc
    if precision != "fp32":
        raise NotAvailable(f"the ONNX export is FP32; {precision} is not run in ONNX Runtime")
    providers = ["CPUExecutionProvider"]
    if device == "gpu" and "CUDAExecutionProvider" in ort.get_available_providers():
        providers.insert(0, "CUDAExecutionProvider")
    session = ort_session(onnx_file, providers)
    name = session.get_inputs()[0].name
    results = {}
    for bs in batches:
        x = input_batch(bs, image_size, data_format)
        timing = StepTimer(warmup, iters, bs).run(lambda _i, x=x: session.run(None, {name: x}))
        results[f"bs{bs}"] = timing.summary()
    return results


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
        config = builder.create_builder_config()
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 1 << 30)
        if precision == "fp16":
            config.set_flag(trt.BuilderFlag.FP16)
        elif precision != "fp32":
            raise NotAvailable(f"{precision} is not run through the TensorRT Python API")
        name = network.get_input(0).name
        shape = (batch, 3, image_size, image_size) if data_format == "NCHW" else (batch, image_size, image_size, 3)
        profile = builder.create_optimization_profile()
        profile.set_shape(name, shape, shape, shape)
        config.add_optimization_profile(profile)
        serialized = builder.build_serialized_network(network, config)
        if serialized is None:
            raise NotAvailable("TensorRT could not build an engine for this model")
        self.engine = trt.Runtime(logger).deserialize_cuda_engine(serialized)
        self.context = self.engine.create_execution_context()
        self.input_name, self.output_name = name, self.engine.get_tensor_name(1)
        self.context.set_input_shape(name, shape)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import paddle

        inp = paddle.to_tensor(x, place=paddle.CUDAPlace(0))
        out = paddle.empty(list(self.context.get_tensor_shape(self.output_name)), dtype="float32")
        self.context.set_tensor_address(self.input_name, inp.data_ptr())
        self.context.set_tensor_address(self.output_name, out.data_ptr())
        self.context.execute_async_v3(paddle.device.cuda.current_stream().cuda_stream)
        paddle.device.cuda.synchronize()
        return out.numpy()


def tensorrt_backend(onnx_file: Path, device: str, precision: str, batches: list[int], image_size: int,
                     data_format: str, warmup: int, iters: int) -> dict:
    if device != "gpu":
        raise NotAvailable("TensorRT needs a GPU")
    results = {}
    for bs in batches:
        engine = TensorRTEngine(onnx_file, precision, bs, image_size, data_format)
        x = input_batch(bs, image_size, data_format)
        timing = StepTimer(warmup, iters, bs).run(lambda _i, e=engine, x=x: e(x))
        results[f"bs{bs}"] = timing.summary()
    return results


# ---- the sweep ------------------------------------------------------------------------------------

def rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-12))


def run_all(model, backends: list[str], precisions: list[str], batches: list[int], image_size: int,
            data_format: str, device: str, warmup: int, iters: int, log, threads: int = 1) -> dict:
    """Every back end x precision over the batch sweep, plus FP32 output agreement with Paddle Inference."""
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="ngc-bench-") as tmp:
        folder = Path(tmp)
        files = export(model, image_size, data_format, folder)
        for backend in backends:
            out[backend] = {}
            for precision in precisions:
                try:
                    if backend in ("paddle-inference", "paddle-trt"):
                        result = paddle_backend(files, device, precision, backend == "paddle-trt", batches,
                                                image_size, data_format, warmup, iters, threads)
                    elif backend == "onnxruntime":
                        result = onnxruntime_backend(onnx_model(files, folder), device, precision, batches,
                                                     image_size, data_format, warmup, iters)
                    elif backend == "tensorrt":
                        result = tensorrt_backend(onnx_model(files, folder), device, precision, batches,
                                                  image_size, data_format, warmup, iters)
                    else:
                        raise NotAvailable(f"unknown back end {backend!r}")
                except NotAvailable as exc:
                    result = {"status": "not available", "reason": str(exc)}
                out[backend][precision] = result
                for bs, r in result.items() if "status" not in result else []:
                    log(f"infer {backend} {precision} {bs}", {"ips": r["ips"], "latency_ms": r["latency_ms"]["mean"]})
                if "status" in result:
                    log(f"infer {backend} {precision}", {"status": result["status"], "reason": result["reason"]})
        out["agreement"] = agreement(files, folder, backends, image_size, data_format, device, threads)
    return out


def agreement(files, folder: Path, backends: list[str], image_size: int, data_format: str, device: str,
              threads: int = 1) -> dict:
    x = input_batch(2, image_size, data_format, seed=42)
    reference = _run_predictor(_predictor(files, device, "fp32", False, 2, threads), x)
    found = {}
    for backend in backends:
        try:
            if backend == "onnxruntime":
                session = ort_session(onnx_model(files, folder), ["CPUExecutionProvider"])
                found[backend] = rel_diff(reference, session.run(None, {session.get_inputs()[0].name: x})[0])
            elif backend == "tensorrt" and device == "gpu":
                found[backend] = rel_diff(reference, TensorRTEngine(onnx_model(files, folder), "fp32", 2,
                                                                    image_size, data_format)(x))
            elif backend == "paddle-trt" and device == "gpu":
                _trt_available(device)
                found[backend] = rel_diff(reference, _run_predictor(
                    _predictor(files, device, "fp32", True, 2, threads), x))
        except (NotAvailable, ImportError):
            continue
    return found
