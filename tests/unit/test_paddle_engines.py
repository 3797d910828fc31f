"""Which Paddle API each GPU inference path calls, for a PIR `.json` and a legacy `.pdmodel` program, per precision.

Paddle is not on the host: fakes stand in for paddle.inference and paddle.tensorrt.export and record the calls. The
fakes are spec'd: they define only the methods of the real API, with its parameter names and defaults, so a
misspelled or removed method or keyword fails here. paddle.inference.Config: the pybind signatures Paddle 2.6.2
(gpu-cu118, the legacy API) and Paddle 3.3.1 print in their docstrings (read in both images, 2026-12: identical for
every method used here); paddle.tensorrt.export (Paddle 3's PIR-TRT): Input, TensorRTConfig, PrecisionMode and
convert as python/paddle/tensorrt/export.py defines them. The decisions asserted are
benchmarks/harness/paddle_engines.py's own.
"""

import enum
import inspect
import sys
import types
from pathlib import Path

import pytest

from benchmarks.harness import paddle_engines
from benchmarks.harness.paddle_engines import NotAvailable, plan, predictor
from ngc_common import bench_result


class PrecisionType(enum.Enum):
    Float32 = 0
    Int8 = 1
    Half = 2
    Bfloat16 = 3


class PrecisionMode(enum.Enum):
    FP32 = "FP32"
    FP16 = "FP16"
    BF16 = "BF16"
    INT8 = "INT8"


def recorded(calls: list):
    """Bind each call to the method's real signature (a wrong keyword or arity raises TypeError, as pybind would)
    and record (name, the arguments given, by parameter name)."""
    def wrap(method):
        signature = inspect.signature(method)

        def call(self, *args, **kwargs):
            bound = signature.bind(self, *args, **kwargs)
            calls.append((method.__name__, {k: v for k, v in bound.arguments.items() if k != "self"}))
        call.__name__ = method.__name__
        return call
    return wrap


class FakePaddle:
    """paddle.inference and paddle.tensorrt.export as far as the engines use them; every call is recorded."""

    def __init__(self, tensorrt_ops: bool = True) -> None:
        self.calls: list[tuple] = []
        calls, fake = self.calls, self
        record = recorded(calls)

        class Config:  # paddle.inference.Config (AnalysisConfig): only the methods the engines call
            def __init__(self, prog_file: str, params_file: str) -> None:
                calls.append(("Config", {"prog_file": prog_file, "params_file": params_file}))

            @record
            def enable_use_gpu(self, memory_pool_init_size_mb: int, device_id: int = 0,
                               precision_mode: PrecisionType = PrecisionType.Float32) -> None: ...

            @record
            def disable_gpu(self) -> None: ...

            @record
            def enable_mkldnn(self) -> None: ...

            @record
            def set_cpu_math_library_num_threads(self, arg0: int) -> None: ...

            @record
            def set_optim_cache_dir(self, arg0: str) -> None: ...

            @record
            def enable_tensorrt_engine(self, workspace_size: int = 1 << 30, max_batch_size: int = 1,
                                       min_subgraph_size: int = 3,
                                       precision_mode: PrecisionType = PrecisionType.Float32,
                                       use_static: bool = False, use_calib_mode: bool = True,
                                       use_cuda_graph: bool = False) -> None: ...

            @record
            def enable_tensorrt_inspector(self, inspector_serialize: bool = False) -> None: ...

            @record
            def set_trt_dynamic_shape_info(self, min_input_shape: dict | None = None,
                                           max_input_shape: dict | None = None,
                                           optim_input_shape: dict | None = None,
                                           disable_trt_plugin_fp16: bool = False) -> None: ...

            @record
            def disable_glog_info(self) -> None: ...

        class Input:  # paddle.tensorrt.export.Input
            def __init__(self, warmup_data=None, min_input_shape=None, max_input_shape=None, optim_input_shape=None,
                         input_data_type="float32", input_range=None, name=None) -> None:
                if warmup_data is None and None in (min_input_shape, max_input_shape, optim_input_shape):
                    raise ValueError("When warm_data is None, min/max/optim shapes must be specified.")
                self.min_input_shape, self.optim_input_shape = min_input_shape, optim_input_shape
                self.max_input_shape, self.name = max_input_shape, name

        class TensorRTConfig:  # paddle.tensorrt.export.TensorRTConfig
            def __init__(self, inputs: list, min_subgraph_size=3, save_model_dir=None, disable_ops=None,
                         precision_mode=PrecisionMode.FP32, ops_run_float=None, optimization_level=3,
                         disable_passes=(), workspace_size=1 << 30, refit_params_path=None) -> None:
                self.inputs, self.min_subgraph_size, self.save_model_dir = inputs, min_subgraph_size, save_model_dir
                self.precision_mode, self.workspace_size = precision_mode, workspace_size

        def convert(model_path: str, config: TensorRTConfig) -> None:
            calls.append(("convert", {"model_path": model_path, "config": config}))
            prefix = Path(config.save_model_dir)
            prefix.with_suffix(".json").write_bytes(b'{"op": "pd_op.tensorrt_engine"}' if fake.tensorrt_ops else b"{}")
            prefix.with_suffix(".pdiparams").write_bytes(b"")

        self.tensorrt_ops = tensorrt_ops
        self.inference = types.SimpleNamespace(Config=Config, PrecisionType=PrecisionType,
                                               create_predictor=lambda config: ("predictor", config))
        self.export = types.SimpleNamespace(Input=Input, TensorRTConfig=TensorRTConfig, PrecisionMode=PrecisionMode,
                                            convert=convert)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        paddle = types.ModuleType("paddle")
        paddle.inference = types.ModuleType("paddle.inference")
        vars(paddle.inference).update(vars(self.inference))
        tensorrt = types.ModuleType("paddle.tensorrt")
        export = types.ModuleType("paddle.tensorrt.export")
        vars(export).update(vars(self.export))
        paddle.tensorrt, tensorrt.export = tensorrt, export
        for name, module in (("paddle", paddle), ("paddle.inference", paddle.inference),
                             ("paddle.tensorrt", tensorrt), ("paddle.tensorrt.export", export)):
            monkeypatch.setitem(sys.modules, name, module)

    def names(self) -> list[str]:
        return [call[0] for call in self.calls]

    def call(self, name: str) -> dict:
        """The arguments of the one call of `name`, by parameter name."""
        found = [c for c in self.calls if c[0] == name]
        assert len(found) == 1, (name, self.names())
        return found[0][1]


def test_the_fake_config_refuses_what_paddle_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """A method Paddle's Config lacks, or a keyword it does not take, fails on the fake as on Paddle."""
    fake = FakePaddle()
    config = fake.inference.Config("m.pdmodel", "m.pdiparams")
    with pytest.raises(AttributeError):
        config.enable_tensorrt_engines()  # misspelled
    with pytest.raises(TypeError):
        config.enable_tensorrt_engine(precision=PrecisionType.Half)  # the keyword is precision_mode
    with pytest.raises(ValueError, match="min/max/optim shapes"):
        fake.export.Input(min_input_shape=[1, 3, 8, 8], name="x")


def program(tmp_path: Path, suffix: str, quantized: bool = False) -> tuple[Path, Path]:
    model = tmp_path / f"model{suffix}"
    model.write_bytes(b'{"ops": ["pd_op.conv2d", ' + (b'"pd_op.quantize_linear"' if quantized else b'"pd_op.relu"')
                      + b"]}")
    params = tmp_path / "model.pdiparams"
    params.write_bytes(b"")
    return model, params


@pytest.mark.parametrize("precision, mode", [("fp32", PrecisionMode.FP32), ("fp16", PrecisionMode.FP16)])
def test_a_pir_program_is_converted_by_paddle_tensorrt_and_run_without_enable_tensorrt_engine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, precision: str, mode: PrecisionMode) -> None:
    fake = FakePaddle()
    fake.install(monkeypatch)
    files = program(tmp_path, ".json")
    chosen = plan(files[0], "gpu", precision, trt=True)
    assert chosen.label == f"paddle-trt-pir {precision}" and not chosen.calibrate
    predictor(chosen, files, 64, 224, "NCHW", 1, tmp_path)
    converted_by = fake.call("convert")
    trt_config = converted_by["config"]
    assert converted_by["model_path"] == str(files[0]) and trt_config.precision_mode is mode
    (shapes,) = trt_config.inputs
    assert (shapes.min_input_shape, shapes.optim_input_shape, shapes.max_input_shape, shapes.name) == (
        [1, 3, 224, 224], [64, 3, 224, 224], [64, 3, 224, 224], "x")
    converted = Path(trt_config.save_model_dir)
    assert fake.call("Config") == {"prog_file": str(converted.with_suffix(".json")),
                                   "params_file": str(converted.with_suffix(".pdiparams"))}
    # plain GPU config: the engine ops carry the precision
    assert fake.call("enable_use_gpu") == {"memory_pool_init_size_mb": 1024, "device_id": 0}
    assert "enable_tensorrt_engine" not in fake.names() and fake.names().index("convert") < fake.names().index(
        "Config")


def test_a_conversion_that_put_nothing_in_tensorrt_is_not_labelled_tensorrt(tmp_path: Path, monkeypatch) -> None:
    FakePaddle(tensorrt_ops=False).install(monkeypatch)
    files = program(tmp_path, ".json")
    with pytest.raises(NotAvailable, match="placed no layer of this model in TensorRT"):
        predictor(plan(files[0], "gpu", "fp16", trt=True), files, 8, 224, "NCHW", 1, tmp_path)


@pytest.mark.parametrize("precision, mode", [("fp32", PrecisionType.Float32), ("fp16", PrecisionType.Half)])
def test_a_legacy_program_uses_enable_tensorrt_engine_with_dynamic_shapes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, precision: str, mode: PrecisionType) -> None:
    fake = FakePaddle()
    fake.install(monkeypatch)
    files = program(tmp_path, ".pdmodel")
    chosen = plan(files[0], "gpu", precision, trt=True)
    assert chosen.label == f"paddle-trt-legacy {precision}"
    predictor(chosen, files, 8, 224, "NHWC", 1, tmp_path)
    assert "convert" not in fake.names()
    assert fake.call("Config") == {"prog_file": str(files[0]), "params_file": str(files[1])}
    kwargs = fake.call("enable_tensorrt_engine")
    assert kwargs["precision_mode"] is mode and kwargs["max_batch_size"] == 8 and kwargs["use_calib_mode"] is False
    assert fake.call("set_trt_dynamic_shape_info") == {"min_input_shape": {"x": [1, 224, 224, 3]},
                                                       "max_input_shape": {"x": [8, 224, 224, 3]},
                                                       "optim_input_shape": {"x": [8, 224, 224, 3]}}


def test_int8_comes_from_a_quantized_program_or_legacy_calibration_never_from_fp32_labelled_int8(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pir = program(tmp_path, ".json")
    with pytest.raises(NotAvailable, match=r"needs a quantized model .* PIR-TRT has no calibrator"):
        plan(pir[0], "gpu", "int8", trt=True)
    (tmp_path / "q").mkdir()
    quantized = program(tmp_path / "q", ".json", quantized=True)
    assert plan(quantized[0], "gpu", "int8", trt=True).label == "paddle-trt-pir int8"
    fake = FakePaddle()
    fake.install(monkeypatch)
    predictor(plan(quantized[0], "gpu", "int8", trt=True), quantized, 8, 64, "NCHW", 1, tmp_path / "q")
    assert fake.call("convert")["config"].precision_mode is PrecisionMode.INT8

    (tmp_path / "legacy").mkdir()
    legacy = program(tmp_path / "legacy", ".pdmodel")
    calibrated = plan(legacy[0], "gpu", "int8", trt=True)
    assert calibrated.calibrate and calibrated.label == "paddle-trt-legacy int8"
    fake = FakePaddle()
    fake.install(monkeypatch)
    predictor(calibrated, legacy, 8, 64, "NCHW", 1, tmp_path, cache=tmp_path / "cache")
    assert fake.call("enable_tensorrt_engine")["use_calib_mode"] is True
    assert fake.call("enable_tensorrt_engine")["precision_mode"] is PrecisionType.Int8
    assert fake.call("set_optim_cache_dir") == {"arg0": str(tmp_path / "cache")}
    (tmp_path / "lq").mkdir()
    assert not plan(program(tmp_path / "lq", ".pdmodel", quantized=True)[0], "gpu", "int8", trt=True).calibrate


def test_paddle_inference_without_tensorrt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = program(tmp_path, ".json")
    fake = FakePaddle()
    fake.install(monkeypatch)
    predictor(plan(files[0], "cpu", "fp32", trt=False), files, 1, 64, "NCHW", 2, tmp_path)
    assert {"disable_gpu", "enable_mkldnn"} <= set(fake.names()) and "enable_use_gpu" not in fake.names()
    assert fake.call("set_cpu_math_library_num_threads") == {"arg0": 2}
    fake = FakePaddle()
    fake.install(monkeypatch)
    chosen = plan(files[0], "gpu", "fp16", trt=False)
    predictor(chosen, files, 1, 64, "NCHW", 2, tmp_path)
    assert chosen.label == "paddle-inference gpu fp16" and fake.call("enable_use_gpu") == {
        "memory_pool_init_size_mb": 1024, "device_id": 0, "precision_mode": PrecisionType.Half}
    assert not {"convert", "enable_tensorrt_engine"} & set(fake.names())
    for device, precision, trt, reason in [("cpu", "fp16", False, "runs fp32 here"),
                                           ("gpu", "int8", False, "INT8 on GPUs only through TensorRT"),
                                           ("cpu", "fp32", True, "Paddle-TRT needs a GPU")]:
        with pytest.raises(NotAvailable, match=reason):
            plan(files[0], device, precision, trt)


def test_every_engine_label_is_one_the_result_schema_accepts(tmp_path: Path) -> None:
    files = program(tmp_path, ".json")
    labels = {plan(files[0], "cpu", "fp32", False).label, plan(files[0], "gpu", "fp16", False).label,
              plan(files[0], "gpu", "fp16", True).label}
    assert labels == {"paddle-inference onednn fp32", "paddle-inference gpu fp16", "paddle-trt-pir fp16"}
    assert all(label.startswith(bench_result.ENGINES) for label in labels)
    assert paddle_engines.EnginePlan("paddle-trt-legacy", "int8").label.startswith(bench_result.ENGINES)


def test_a_result_naming_an_unknown_engine_is_refused(tmp_path: Path) -> None:
    from tests.unit.fuzz_support import bench_result as fixture

    data = fixture("rn50")
    data["results"]["infer"]["paddle-inference"]["fp32"]["bs1"]["engine"] = "paddle-inference onednn fp32"
    bench_result.parse(tmp_path / "result.json", data)
    data["results"]["infer"]["paddle-inference"]["fp32"]["bs1"]["engine"] = "magic int8"
    with pytest.raises(bench_result.InputError, match=r"bs1\.engine: names no engine this suite runs"):
        bench_result.parse(tmp_path / "result.json", data)


def test_the_timed_legacy_predictor_serializes_inspectable_engines(tmp_path: Path, monkeypatch) -> None:
    """Paddle 2.6 (gpu-cu118) exports .pdmodel only: the timed Paddle-TRT predictor keeps its engines (use_static)
    built DETAILED (enable_tensorrt_inspector) in its own optim cache, where tensorrt_python reads them back."""
    fake = FakePaddle()
    fake.install(monkeypatch)
    files = program(tmp_path, ".pdmodel")
    chosen = plan(files[0], "gpu", "fp16", trt=True)
    predictor(chosen, files, 8, 224, "NCHW", 1, tmp_path, inspect=True)
    assert fake.call("enable_tensorrt_engine")["use_static"] is True
    assert "enable_tensorrt_inspector" in fake.names()
    assert fake.call("set_optim_cache_dir") == {"arg0": str(paddle_engines.legacy_engine_dir(tmp_path, "fp16", 8,
                                                                                               None))}
    fake = FakePaddle()
    fake.install(monkeypatch)
    predictor(chosen, files, 8, 224, "NCHW", 1, tmp_path)  # the calibrating predictor: nothing kept
    assert fake.call("enable_tensorrt_engine")["use_static"] is False
    assert "enable_tensorrt_inspector" not in fake.names() and "set_optim_cache_dir" not in fake.names()
