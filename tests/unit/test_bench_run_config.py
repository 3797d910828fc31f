"""The benchmark run config: resolved once from the command line and the hardware found, frozen, each default
written once (the help text, the docs table and resolve() read the same Option)."""

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from benchmarks.harness import run_config
from benchmarks.harness.run_config import SAME, Hardware, defaults_table, docs_section, options, requested, resolve
from benchmarks.hgnet.spec import SPEC as HGNET
from benchmarks.rn50.spec import SPEC as RN50
from ngc_common.errors import InputError

REPO = Path(__file__).resolve().parents[2]
CPU = Hardware(gpus_available=0, threads=2, threads_from="test")
GPUS = Hardware(gpus_available=8, threads=16, threads_from="test", components={"paddle": {}, "tensorrt": {}})


def config(spec=RN50, *argv: str, hardware: Hardware = CPU) -> run_config.RunConfig:
    return resolve(requested(spec, list(argv)), spec, hardware)


def test_a_cpu_run_gets_each_options_cpu_default_and_the_help_says_it() -> None:
    resolved = config()
    help_text = run_config.parser(RN50).format_help().replace("\n", " ")
    checked = 0
    for option in options(RN50):
        if option.shown_default is None and option.cpu is not None and option.flag_kind == "value":
            assert getattr(resolved, option.name, None) == option.cpu or \
                resolved.model_options.get(option.name) == option.cpu, option.flag
            checked += 1
    assert checked >= 15
    assert "training batch per device (default: 16 on CPU, 256 on GPU)" in " ".join(help_text.split())
    assert resolved.device == "cpu" and resolved.gpus == 0 and resolved.threads == 2
    assert resolved.batch_size == 16 and resolved.precision == ("fp32",) and resolved.batch_sizes == (1, 8)


def test_a_gpu_run_gets_the_gpu_defaults_and_only_the_back_ends_the_image_ships() -> None:
    resolved = config(HGNET, hardware=Hardware(8, 16, "test", components={"paddle": {}, "onnxruntime": {}}))
    assert resolved.device == "gpu" and resolved.gpus == 8 and resolved.batch_size == 128
    assert resolved.precision == ("tf32", "amp") and resolved.infer_precision == ("fp32", "fp16", "int8")
    assert resolved.backends == ("paddle-inference", "onnxruntime")  # no TensorRT in this image
    assert resolved.data_format == "NHWC" and resolved.batch_sizes == (1, 8, 64, 256)
    asked = config(HGNET, "--backends", "tensorrt", hardware=GPUS)
    assert asked.backends == ("tensorrt",)  # asked for by name: tried


def test_smoke_forces_one_tiny_step_whatever_else_was_given() -> None:
    resolved = config(RN50, "--smoke", "--steps", "50", "--batch-size", "64")
    assert (resolved.steps, resolved.warmup, resolved.batch_size, resolved.image_size) == (1, 0, 2, 64)
    assert resolved.batch_sizes == (1,) and resolved.num_classes == 10 and resolved.backends == ("paddle-inference",)
    on_gpu = config(RN50, "--smoke", hardware=GPUS)
    assert on_gpu.gpus == 1 and on_gpu.precision == ("tf32",)


def test_the_config_is_frozen_and_a_new_one_replaces_it() -> None:
    resolved = config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolved.gpus = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        resolved.model_options["zero_init_residual"] = True  # type: ignore[index]
    assert dataclasses.replace(resolved, gpus=4).gpus == 4 and resolved.gpus == 0


def test_the_recipe_is_the_models_own_and_the_command_line_wins() -> None:
    rn50, hgnet = config(RN50), config(HGNET)
    assert (rn50.lr, rn50.momentum, rn50.weight_decay, rn50.bn_weight_decay) == (0.256, 0.875, 3.0517578125e-05, False)
    assert (hgnet.lr, hgnet.momentum, hgnet.weight_decay, hgnet.bn_weight_decay) == (0.5, 0.9, 4e-05, True)
    assert rn50.lr_warmup_epochs == hgnet.lr_warmup_epochs == 5 and rn50.label_smoothing == 0.1
    given = config(HGNET, "--no-bn-weight-decay", "--lr", "0.1", "--lr-warmup-epochs", "0")
    assert (given.bn_weight_decay, given.lr, given.lr_warmup_epochs) == (False, 0.1, 0)


@pytest.mark.parametrize("argv, hardware, needle", [
    (["--gpus", "2"], CPU, "--gpus 2 asked for, but 0 CUDA GPU(s) are visible"),
    (["--precision", "tf32"], CPU, "--precision tf32 needs a GPU"),
    (["--precision", "bf16"], CPU, "--precision bf16 is not supported on this device"),
    (["--eval-data", "/nonexistent/val"], CPU, "--eval-data /nonexistent/val: no such folder"),
    (["--data", "/nonexistent/train"], CPU, "--data /nonexistent/train: no such folder"),
    (["--nnodes", "2"], GPUS, "--nnodes > 1 needs --master"),
    (["--asp", "--precision", "amp-o2"], GPUS, "--asp with amp-o2 is not supported"),
])
def test_what_the_hardware_cannot_honour_is_one_line(argv: list[str], hardware: Hardware, needle: str) -> None:
    with pytest.raises(InputError) as caught:
        config(RN50, *argv, hardware=hardware)
    assert needle in str(caught.value) and "; fix: " in str(caught.value) and "\n" not in str(caught.value)


def test_bf16_runs_where_the_device_supports_it() -> None:
    assert config(RN50, "--precision", "bf16", hardware=Hardware(0, 2, "test", bf16_supported=True)).precision == (
        "bf16",)


def test_no_benchmark_module_changes_a_parsed_namespace_or_a_config() -> None:
    """The config is read, never written: no attribute assignment to an argparse namespace or a config."""
    written = []
    for path in sorted((REPO / "benchmarks").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AugAssign | ast.AnnAssign) else []
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name) and \
                            leaf.value.id in ("args", "config", "cfg", "namespace"):
                        written.append(f"{path.relative_to(REPO)}:{node.lineno}")
        written += [f"{path.relative_to(REPO)}: __dict__" for n in ast.walk(tree)
                    if isinstance(n, ast.Attribute) and n.attr == "__dict__"]
    assert written == []


def test_every_option_has_one_default_for_each_device() -> None:
    for spec in (RN50, HGNET):
        for option in options(spec):
            assert option.gpu is SAME or option.cpu is not None, option.flag  # a GPU default needs a CPU one
            assert "default:" not in option.help, f"{option.flag}: the default is written in the help text"


def test_docs_tables_are_the_ones_the_config_renders() -> None:
    text = (REPO / "docs" / "benchmarks.md").read_text()
    start = "<!-- defaults: generated from benchmarks/harness/run_config.py -->\n"
    section = text[text.index(start) + len(start):text.index("<!-- end defaults -->")]
    assert section == docs_section(), "docs/benchmarks.md's defaults differ from the code: regenerate them"
    assert "| `--batch-size` | 16 | 256 | this suite |" in defaults_table(RN50)
    assert "| `--momentum` | 0.9 | same | upstream recipe |" in defaults_table(HGNET)
    assert "PPHGNet_*.yaml" in defaults_table(HGNET) and "DeepLearningExamples" in defaults_table(RN50)


def test_smoke_shows_the_tensorrt_rows_in_a_cuda_image_only() -> None:
    from benchmarks.harness.run_config import smoke_backends

    cu118 = {"cuda-runtime": {}, "paddle": {}, "dali": {}}  # TensorRT left out: its rows still show, N/A
    assert smoke_backends(RN50, cu118) == ("paddle-inference", "paddle-trt", "tensorrt")
    assert smoke_backends(HGNET, cu118) == ("paddle-inference", "paddle-trt", "tensorrt")
    assert smoke_backends(RN50, {"paddle": {}, "dali": {}}) == ("paddle-inference",)  # cpu flavor
    assert smoke_backends(RN50, None) == ("paddle-inference",)  # not in an image


def test_a_tensorrt_path_names_every_reason_it_cannot_run(tmp_path: Path, monkeypatch) -> None:
    from benchmarks.harness import environment
    from benchmarks.harness.paddle_engines import NotAvailable, trt_reasons

    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"components": {}, "left_out": {"tensorrt": {
        "reason": "TensorRT for CUDA 11 comes only from NVIDIA's index", "components": {"tensorrt": {}}}}}))
    monkeypatch.setattr(environment, "MANIFEST", manifest)
    with pytest.raises(NotAvailable) as exc:
        trt_reasons("cpu", "Paddle-TRT")
    assert str(exc.value) == ("TensorRT is not in this image (layer tensorrt left out of this image: TensorRT for "
                              "CUDA 11 comes only from NVIDIA's index); Paddle-TRT needs a GPU")
    manifest.write_text(json.dumps({"components": {"tensorrt": {}}, "left_out": {}}))
    with pytest.raises(NotAvailable, match=r"^TensorRT needs a GPU$"):
        trt_reasons("cpu", "TensorRT")
    trt_reasons("gpu", "TensorRT")  # nothing stands in the way
