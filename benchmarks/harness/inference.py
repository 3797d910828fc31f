"""Inference back ends shared by the models, over a batch-size sweep, with output agreement.

paddle-inference: Paddle Inference on the CPU (oneDNN, on the run's CPU threads) or the GPU (FP32,
FP16; INT8 only through TensorRT). paddle-trt: Paddle's TensorRT integration, the API its program
needs (paddle_engines: paddle.tensorrt.convert for a PIR `.json` program, enable_tensorrt_engine for
a legacy `.pdmodel` one; INT8 from a PIR program quantized by paddle.quantization.PTQ, or Paddle-TRT's own
calibration of a `.pdmodel`, both on real images). onnxruntime:
paddle2onnx export run in ONNX Runtime. tensorrt: the same ONNX model built into an engine with the
TensorRT Python API. Each figure names the engine that produced it ("engine": "paddle-trt-pir fp16");
a back end the image or the host cannot run returns "not available" with the reason.
"""

import tempfile
from pathlib import Path

import numpy as np

from benchmarks.harness import paddle_engines, quantization, tensorrt_python
from benchmarks.harness.paddle_engines import NotAvailable
from benchmarks.harness.tensorrt_python import TensorRTEngine
from benchmarks.harness.timing import StepTimer


def export(model, image_size: int, data_format: str, folder: Path, batch: int | None = None) -> tuple[Path, Path]:
    """paddle.jit.save with a dynamic batch (or a fixed one); returns (model file, params file)."""
    import paddle

    shape = [batch, 3, image_size, image_size] if data_format == "NCHW" else [batch, image_size, image_size, 3]
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

def _run_predictor(predictor, x: np.ndarray) -> np.ndarray:
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.reshape(list(x.shape))
    handle.copy_from_cpu(x)
    predictor.run()
    return predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()


def calibrate_int8(chosen: paddle_engines.EnginePlan, files, bs: int, image_size: int, data_format: str,
                   threads: int, cache: Path, calibration: quantization.Calibration | None) -> Path:
    """Legacy Paddle-TRT's calibrate-then-deploy: a calibration predictor sees the calibration's images
    (Calibration.images(), a fixed number whatever `bs`: ceil(images / bs) batches) and writes its table
    (trt_calib_*) into `cache` when it is destroyed; a second predictor with the same config finds the table there
    and builds its INT8 engine from it (that one is timed)."""
    import gc

    if calibration is None:
        raise NotAvailable(quantization.NO_IMAGES)
    calibrator = paddle_engines.predictor(chosen, files, bs, image_size, data_format, threads, cache, cache=cache)
    batches = calibration(bs)
    for _ in range(calibration.batches(bs)):
        _run_predictor(calibrator, next(batches))
    del calibrator
    gc.collect()
    tables = sorted(cache.rglob("trt_calib_*"))
    if not tables:
        raise NotAvailable(f"Paddle-TRT INT8 calibration wrote no table under {cache}")
    return tables[-1]


def paddle_backend(files, device: str, precision: str, trt: bool, batches: list[int], image_size: int,
                   data_format: str, warmup: int, iters: int, threads: int = 1,
                   calibration: quantization.Calibration | None = None, fixed_batch: bool = False) -> dict:
    """Paddle Inference or Paddle-TRT over the batch sweep; `fixed_batch`: the program was exported for the one
    batch size in `batches` (a quantized PIR program), so TensorRT's shapes are that batch alone."""
    if trt:  # every reason at once (no TensorRT in the image, no GPU) before the plan names only the first
        paddle_engines.trt_reasons(device, "Paddle-TRT")
    chosen = paddle_engines.plan(files[0], device, precision, trt)
    if chosen.trt:
        paddle_engines.paddle_trt_available(device)
    results = {}
    for bs in batches:
        x = input_batch(bs, image_size, data_format)
        cache, timed = None, None
        if chosen.calibrate:
            cache = files[0].parent / f"trt-int8-bs{bs}"
            table = calibrate_int8(chosen, files, bs, image_size, data_format, threads, cache, calibration)
            timed = f"the deployed INT8 predictor, loading calibration table {table.name} " \
                    f"({calibration.described(bs)})"
        # Paddle-TRT loads trt_calib_* only with use_calib_mode on: the deployed predictor uses the same
        # config as the calibrating one and, finding the table in `cache`, builds the INT8 engine from it.
        legacy = chosen.engine == "paddle-trt-legacy"
        predictor = paddle_engines.predictor(chosen, files, bs, image_size, data_format, threads, files[0].parent,
                                             cache=cache, min_batch=bs if fixed_batch else 1, inspect=legacy)
        timing = StepTimer(warmup, iters, bs, phase="infer").run(lambda _i, p=predictor, x=x: _run_predictor(p, x))
        results[f"bs{bs}"] = {**timing.summary(), "engine": chosen.label} | ({"timed": timed} if timed else {})
        if chosen.calibrate and calibration is not None:  # how many real images the INT8 scales came from
            results[f"bs{bs}"]["calibration_images"] = calibration.images()
        if legacy:  # what TensorRT built each layer in, from the engines the timed predictor serialized
            engines = paddle_engines.legacy_engine_dir(files[0].parent, precision, bs, cache)
            results[f"bs{bs}"]["layer_precisions"] = tensorrt_python.paddle_trt_layer_precisions(engines, precision)
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
        timing = StepTimer(warmup, iters, bs, phase="infer").run(lambda _i, x=x: session.run(None, {name: x}))
        results[f"bs{bs}"] = {**timing.summary(), "engine": f"onnxruntime {session.get_providers()[0]} {precision}"}
    return results


def tensorrt_backend(onnx_file: Path, device: str, precision: str, batches: list[int], image_size: int,
                     data_format: str, warmup: int, iters: int) -> dict:
    paddle_engines.trt_reasons(device, "TensorRT")
    results = {}
    engine = TensorRTEngine(onnx_file, precision, max(batches), image_size, data_format, min_batch=1)  # the sweep
    for bs in batches:
        x = input_batch(bs, image_size, data_format)
        timing = StepTimer(warmup, iters, bs, phase="infer").run(lambda _i, e=engine, x=x: e(x))
        results[f"bs{bs}"] = {**timing.summary(), "engine": f"tensorrt-python {precision}",
                              "layer_precisions": engine.layer_precisions}
    return results


# ---- the sweep ------------------------------------------------------------------------------------

def rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-12))


def run_all(model, backends: list[str], precisions: list[str], batches: list[int], image_size: int,
            data_format: str, device: str, warmup: int, iters: int, log, threads: int = 1,
            calibration: quantization.Calibration | None = None) -> dict:
    """Every back end x precision over the batch sweep, plus FP32 output agreement with Paddle Inference. INT8
    through Paddle-TRT runs a PIR program quantized by paddle.quantization.PTQ on `calibration`'s images."""
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="ngc-bench-") as tmp:
        folder = Path(tmp)
        files = export(model, image_size, data_format, folder)
        for backend in backends:
            out[backend] = {}
            for precision in precisions:
                try:
                    if backend == "paddle-trt" and precision == "int8" and files[0].suffix == paddle_engines.PIR:
                        # before quantizing: nothing to do on a host that cannot run it
                        paddle_engines.paddle_trt_available(device)
                        programs = quantization.ptq_export(model, calibration, export, image_size, data_format,
                                                           folder, batches)
                        quantized = {"calibration_images": calibration.images(),  # ptq_export refused None
                                     "timed": f"a program PTQ-quantized on "
                                              f"{calibration.described(quantization.PTQ_BATCH)}"}
                        result = {key: figures | quantized for bs in batches for key, figures in paddle_backend(
                            programs[bs], device, precision, True, [bs], image_size, data_format, warmup, iters,
                            threads, fixed_batch=True).items()}
                    elif backend in ("paddle-inference", "paddle-trt"):
                        result = paddle_backend(files, device, precision, backend == "paddle-trt", batches,
                                                image_size, data_format, warmup, iters, threads, calibration)
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

    def paddle(trt: bool):
        chosen = paddle_engines.plan(files[0], device, "fp32", trt)
        return paddle_engines.predictor(chosen, files, 2, image_size, data_format, threads, folder)

    reference = _run_predictor(paddle(False), x)
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
                paddle_engines.paddle_trt_available(device)
                found[backend] = rel_diff(reference, _run_predictor(paddle(True), x))
        except (NotAvailable, ImportError):
            continue
    return found
