"""Which Paddle API each GPU inference path calls, for a PIR `.json` and a legacy `.pdmodel` program, per precision.

Paddle is not on the host: fakes stand in for paddle.inference and paddle.tensorrt.export and record the calls
(their signatures are Paddle 3.x's); the decisions asserted are benchmarks/harness/paddle_engines.py's own.
"""

import enum
import sys
import types
from pathlib import Path

import pytest

from benchmarks.harness import paddle_engines
from benchmarks.harness.paddle_engines import NotAvailable, plan, predictor
from ngc_common import bench_result


class PrecisionType(enum.Enum):
    Float32 = 0
    Half = 1
    Int8 = 2


class PrecisionMode(enum.Enum):
    FP32 = "FP32"
    FP16 = "FP16"
    BF16 = "BF16"
    INT8 = "INT8"


class FakePaddle:
    """paddle.inference and paddle.tensorrt.export as far as the engines use them; every call is recorded."""

    def __init__(self, tensorrt_ops: bool = True) -> None:
        self.calls: list[tuple] = []
        calls, fake = self.calls, self

        class Config:
            def __init__(self, model: str, params: str) -> None:
                calls.append(("Config", model, params))

            def __getattr__(self, name: str):
                return lambda *args, **kwargs: calls.append((name, args, kwargs))

        class Input:
            def __init__(self, **kwargs) -> None:
                self.kwargs = kwargs

        class TensorRTConfig:
            def __init__(self, inputs: list, **kwargs) -> None:
                self.inputs, self.kwargs = inputs, kwargs

        def convert(model_path: str, config: TensorRTConfig) -> None:
            calls.append(("convert", model_path, config))
            prefix = Path(config.kwargs["save_model_dir"])
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

    def call(self, name: str) -> tuple:
        found = [c for c in self.calls if c[0] == name]
        assert len(found) == 1, (name, self.names())
        return found[0]


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
    _, model_path, trt_config = fake.call("convert")
    assert model_path == str(files[0]) and trt_config.kwargs["precision_mode"] is mode
    (shapes,) = trt_config.inputs
    assert shapes.kwargs == {"min_input_shape": [1, 3, 224, 224], "optim_input_shape": [64, 3, 224, 224],
                             "max_input_shape": [64, 3, 224, 224], "name": "x"}
    converted = Path(trt_config.kwargs["save_model_dir"])
    assert fake.call("Config")[1:] == (str(converted.with_suffix(".json")), str(converted.with_suffix(".pdiparams")))
    assert fake.call("enable_use_gpu")[1] == (1024, 0)  # plain GPU config: the engine ops carry the precision
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
    assert "convert" not in fake.names() and fake.call("Config")[1:] == (str(files[0]), str(files[1]))
    kwargs = fake.call("enable_tensorrt_engine")[2]
    assert kwargs["precision_mode"] is mode and kwargs["max_batch_size"] == 8 and kwargs["use_calib_mode"] is False
    assert fake.call("set_trt_dynamic_shape_info")[1] == (
        {"x": [1, 224, 224, 3]}, {"x": [8, 224, 224, 3]}, {"x": [8, 224, 224, 3]})


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
    assert fake.call("convert")[2].kwargs["precision_mode"] is PrecisionMode.INT8

    (tmp_path / "legacy").mkdir()
    legacy = program(tmp_path / "legacy", ".pdmodel")
    calibrated = plan(legacy[0], "gpu", "int8", trt=True)
    assert calibrated.calibrate and calibrated.label == "paddle-trt-legacy int8"
    fake = FakePaddle()
    fake.install(monkeypatch)
    predictor(calibrated, legacy, 8, 64, "NCHW", 1, tmp_path, cache=tmp_path / "cache")
    assert fake.call("enable_tensorrt_engine")[2]["use_calib_mode"] is True
    assert fake.call("enable_tensorrt_engine")[2]["precision_mode"] is PrecisionType.Int8
    assert fake.call("set_optim_cache_dir")[1] == (str(tmp_path / "cache"),)
    (tmp_path / "lq").mkdir()
    assert not plan(program(tmp_path / "lq", ".pdmodel", quantized=True)[0], "gpu", "int8", trt=True).calibrate


def test_paddle_inference_without_tensorrt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = program(tmp_path, ".json")
    fake = FakePaddle()
    fake.install(monkeypatch)
    predictor(plan(files[0], "cpu", "fp32", trt=False), files, 1, 64, "NCHW", 2, tmp_path)
    assert {"disable_gpu", "enable_mkldnn"} <= set(fake.names()) and "enable_use_gpu" not in fake.names()
    assert fake.call("set_cpu_math_library_num_threads")[1] == (2,)
    fake = FakePaddle()
    fake.install(monkeypatch)
    chosen = plan(files[0], "gpu", "fp16", trt=False)
    predictor(chosen, files, 1, 64, "NCHW", 2, tmp_path)
    assert chosen.label == "paddle-inference gpu fp16" and fake.call("enable_use_gpu")[1] == (1024, 0,
                                                                                               PrecisionType.Half)
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
    assert fake.call("enable_tensorrt_engine")[2]["use_static"] is True
    assert "enable_tensorrt_inspector" in fake.names()
    assert fake.call("set_optim_cache_dir")[1] == (str(paddle_engines.legacy_engine_dir(tmp_path, "fp16", 8, None)),)
    fake = FakePaddle()
    fake.install(monkeypatch)
    predictor(chosen, files, 8, 224, "NCHW", 1, tmp_path)  # the calibrating predictor: nothing kept
    assert fake.call("enable_tensorrt_engine")[2]["use_static"] is False
    assert "enable_tensorrt_inspector" not in fake.names() and "set_optim_cache_dir" not in fake.names()
