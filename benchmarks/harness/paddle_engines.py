"""Which Paddle API runs an exported program at a precision, and the predictor it builds: one decision, named.

The long form: docs/design-notes.md, section `benchmarks/harness/paddle_engines.py`.
"""

from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import environment

PIR, LEGACY = ".json", ".pdmodel"
QUANTIZE_OPS = (b"quantize_linear", b"fake_quantize")  # QDQ ops (paddle.quantization, PaddleSlim) in the program
WORKSPACE = 1 << 30
MIN_SUBGRAPH = 3
INPUT_NAME = "x"  # inference.export's InputSpec
TRT_OP = b"tensorrt_engine"  # the op paddle.tensorrt.convert puts in the program for each TensorRT subgraph


class NotAvailable(Exception):
    """The back end cannot run here; str() says why."""


@dataclass(frozen=True)
class EnginePlan:
    engine: str  # paddle-trt-pir | paddle-trt-legacy | paddle-inference gpu | paddle-inference onednn
    precision: str  # fp32 | fp16 | int8
    calibrate: bool = False  # legacy INT8 from an FP32 program: calibrate, then deploy with the table

    @property
    def label(self) -> str:
        return f"{self.engine} {self.precision}"

    @property
    def trt(self) -> bool:
        return self.engine.startswith("paddle-trt")


def trt_reasons(device: str, what: str) -> None:
    """NotAvailable with every reason a TensorRT path cannot run here: the image has no TensorRT (its layer left
    out, and why), no GPU."""
    reasons = [f"TensorRT is not in this image ({absent})"] if (absent := environment.left_out("tensorrt")) else []
    if device != "gpu":
        reasons.append(f"{what} needs a GPU")
    if reasons:
        raise NotAvailable("; ".join(reasons))


def paddle_trt_available(device: str) -> None:
    """NotAvailable, with the reason, unless Paddle has TensorRT support and finds a TensorRT of its major.

    paddle.inference.get_trt_runtime_version() dlopen()s libnvinfer.so (paddle/phi/backends/dynload/tensorrt.cc)
    and raises where the loader finds none (Paddle 2.6: RuntimeError "TensorRT dynamic library is not found"),
    rather than answering 0: that is this path's "not available", never a traceback of the run."""
    import paddle

    trt_reasons(device, "Paddle-TRT")
    try:
        from paddle.inference import get_trt_compile_version, get_trt_runtime_version
    except ImportError as exc:
        raise NotAvailable("this Paddle build has no TensorRT support") from exc
    compiled = tuple(get_trt_compile_version())
    if not paddle.is_compiled_with_cuda() or compiled[0] == 0:
        raise NotAvailable("this Paddle build has no TensorRT support")
    try:
        runtime = tuple(get_trt_runtime_version())
    except Exception as exc:  # Paddle's loader found no libnvinfer.so
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise NotAvailable(f"Paddle finds no TensorRT runtime (libnvinfer.so): {' '.join(first.split())[:200]}") \
            from exc
    if runtime[0] == 0:
        raise NotAvailable("Paddle finds no TensorRT runtime (libnvinfer.so)")
    if runtime[0] != compiled[0]:
        raise NotAvailable(f"Paddle is built for TensorRT {compiled[0]}.x but the image has {runtime[0]}.x")


def is_quantized(model_file: Path) -> bool:
    """Does the program hold quantize/dequantize ops (a quantization-aware or post-training quantized model)?"""
    data = model_file.read_bytes()
    return any(op in data for op in QUANTIZE_OPS)


def plan(model_file: Path, device: str, precision: str, trt: bool) -> EnginePlan:
    """The engine that runs `model_file` at `precision`; NotAvailable (with the reason) where none does."""
    if not trt:
        if device != "gpu":
            if precision != "fp32":
                raise NotAvailable(f"Paddle Inference on the CPU runs fp32 here, not {precision}")
            return EnginePlan("paddle-inference onednn", precision)
        if precision == "int8":
            raise NotAvailable("Paddle Inference runs INT8 on GPUs only through TensorRT: use --backends paddle-trt")
        return EnginePlan("paddle-inference gpu", precision)
    trt_reasons(device, "Paddle-TRT")
    kind = model_file.suffix
    if kind == PIR:
        if precision == "int8" and not is_quantized(model_file):
            raise NotAvailable("INT8 on a PIR program needs a quantized model (quantize/dequantize ops from "
                               "paddle.quantization or PaddleSlim): PIR-TRT has no calibrator, and this FP32 export "
                               "is not run as INT8")
        return EnginePlan("paddle-trt-pir", precision)
    if kind == LEGACY:
        return EnginePlan("paddle-trt-legacy", precision,
                          calibrate=precision == "int8" and not is_quantized(model_file))
    raise NotAvailable(f"{model_file.name}: not a Paddle program (.json or .pdmodel)")


def input_shape(batch: int, image_size: int, data_format: str) -> list[int]:
    if data_format == "NCHW":
        return [batch, 3, image_size, image_size]
    return [batch, image_size, image_size, 3]


def pir_trt_convert(files: tuple[Path, Path], precision: str, batch: int, image_size: int, data_format: str,
                    folder: Path, min_batch: int = 1) -> tuple[Path, Path]:
    """paddle.tensorrt.convert of a PIR program for batches min_batch..`batch` (opt = max = `batch`; a program
    exported with a fixed batch, as quantized ones are, converts with min_batch = batch): the new program's
    (model, params) files."""
    from paddle.tensorrt.export import Input, PrecisionMode, TensorRTConfig, convert  # paddle.tensorrt.convert

    prefix = folder / f"trt-pir-{precision}-bs{batch}" / "model"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    shape = {"min_input_shape": input_shape(min_batch, image_size, data_format),
             "optim_input_shape": input_shape(batch, image_size, data_format),
             "max_input_shape": input_shape(batch, image_size, data_format)}
    config = TensorRTConfig(inputs=[Input(**shape, name=INPUT_NAME)], min_subgraph_size=MIN_SUBGRAPH,
                            save_model_dir=str(prefix), precision_mode=PrecisionMode[precision.upper()],
                            workspace_size=WORKSPACE)
    convert(str(files[0]), config)
    converted = prefix.with_suffix(PIR), prefix.with_suffix(".pdiparams")
    if not converted[0].exists():
        raise NotAvailable(f"paddle.tensorrt.convert wrote no program at {converted[0]}")
    if TRT_OP not in converted[0].read_bytes():  # else the figure would be Paddle's, labelled TensorRT's
        raise NotAvailable(f"paddle.tensorrt.convert placed no layer of this model in TensorRT ({precision})")
    return converted


def legacy_engine_dir(folder: Path, precision: str, batch: int, cache: Path | None) -> Path:
    """Where Paddle-TRT (legacy) keeps its optim cache: the INT8 calibration table's folder, else one per run."""
    return cache if cache is not None else folder / f"trt-legacy-{precision}-bs{batch}"


def predictor(chosen: EnginePlan, files: tuple[Path, Path], batch: int, image_size: int, data_format: str,
              threads: int, folder: Path, cache: Path | None = None, min_batch: int = 1, inspect: bool = False):
    """A Paddle Inference predictor that runs `chosen` for batches min_batch..`batch`; `inspect` (legacy
    Paddle-TRT, the timed predictor): serialize its engines, built DETAILED, into legacy_engine_dir."""
    from paddle import inference

    if chosen.engine == "paddle-trt-pir":
        files = pir_trt_convert(files, chosen.precision, batch, image_size, data_format, folder, min_batch)
    config = inference.Config(str(files[0]), str(files[1]))
    if chosen.engine == "paddle-inference onednn":
        config.disable_gpu()
        config.enable_mkldnn()
        config.set_cpu_math_library_num_threads(threads)
    elif chosen.engine == "paddle-inference gpu":
        half = chosen.precision == "fp16"
        config.enable_use_gpu(1024, 0, inference.PrecisionType.Half if half else inference.PrecisionType.Float32)
    elif chosen.engine == "paddle-trt-pir":
        config.enable_use_gpu(1024, 0)  # the program's tensorrt_engine ops carry their precision
    else:  # paddle-trt-legacy
        config.enable_use_gpu(1024, 0, inference.PrecisionType.Float32)
        mode = {"fp32": inference.PrecisionType.Float32, "fp16": inference.PrecisionType.Half,
                "int8": inference.PrecisionType.Int8}[chosen.precision]
        if cache is not None or inspect:  # the INT8 calibration table, the serialized engines: written, read back
            config.set_optim_cache_dir(str(legacy_engine_dir(folder, chosen.precision, batch, cache)))
        config.enable_tensorrt_engine(workspace_size=WORKSPACE, max_batch_size=batch, min_subgraph_size=MIN_SUBGRAPH,
                                      precision_mode=mode, use_static=inspect, use_calib_mode=chosen.calibrate)
        if inspect:  # ProfilingVerbosity DETAILED: the serialized engines name each layer's precision
            config.enable_tensorrt_inspector()
        config.set_trt_dynamic_shape_info({INPUT_NAME: input_shape(1, image_size, data_format)},
                                          {INPUT_NAME: input_shape(batch, image_size, data_format)},
                                          {INPUT_NAME: input_shape(batch, image_size, data_format)})
    config.disable_glog_info()
    return inference.create_predictor(config)
