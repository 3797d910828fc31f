"""paddle.jit.save -> Paddle Inference, and -> paddle2onnx -> ONNX Runtime: outputs must agree (JSON).

Paddle Inference reads the program as Paddle saves it by default; paddle2onnx reads the program format its major
version parses (`exporter_input`, docs/validation.md "Functional checks").
"""

import importlib.metadata as md
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle


class Net(paddle.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.conv = paddle.nn.Conv2D(3, 8, 3, padding=1)
        self.bn = paddle.nn.BatchNorm2D(8)
        self.pool = paddle.nn.AdaptiveAvgPool2D(1)
        self.fc = paddle.nn.Linear(8, 10)

    def forward(self, x):
        x = self.pool(paddle.nn.functional.relu(self.bn(self.conv(x))))
        return self.fc(paddle.flatten(x, 1))


INPUT_SPEC = [paddle.static.InputSpec([None, 3, 32, 32], "float32", "x")]
# The first paddle2onnx major that parses Paddle 3's PIR programs (.json); 1.x parses only ProgramDesc (.pdmodel).
FIRST_PIR_EXPORTER = 2


def model_files(prefix: Path) -> tuple[Path, Path]:
    for suffix in (".json", ".pdmodel"):  # PIR programs are JSON; older Paddle writes .pdmodel
        if prefix.with_suffix(suffix).exists():
            return prefix.with_suffix(suffix), prefix.with_suffix(".pdiparams")
    raise FileNotFoundError(f"paddle.jit.save wrote no model file at {prefix}")


def exporter_input(net: paddle.nn.Layer, saved: tuple[Path, Path], prefix: Path) -> tuple[Path, Path]:
    """The saved model the installed paddle2onnx parses: `saved` itself, or for paddle2onnx 1.x under Paddle 3 the
    layer saved again as a ProgramDesc, under paddle.pir_utils.DygraphOldIrGuard (the switch 1.x's own dygraph2onnx,
    behind paddle.onnx.export, saves with). Given a PIR program, 1.x writes an ONNX model without a graph."""
    major = int(md.version("paddle2onnx").split(".")[0])
    if major >= FIRST_PIR_EXPORTER or saved[0].suffix == ".pdmodel":
        return saved
    with paddle.pir_utils.DygraphOldIrGuard():
        paddle.jit.save(net, str(prefix), input_spec=INPUT_SPEC)
    return model_files(prefix)


class CapturedOutput:
    """Capture fd 1 and 2 (C libraries and Python alike) to scan what a library printed."""

    def __enter__(self) -> "CapturedOutput":
        sys.stdout.flush()
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile(mode="w+b")
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        self.file.seek(0)
        self.text = self.file.read().decode(errors="replace")
        self.file.close()


# Polygraphy (used by paddle2onnx) pip-installs missing modules at run time; an image must not need that.
RUNTIME_INSTALL = re.compile(r"Attempting to install|Running installation command|Could not automatically install")


def rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-12))


def main() -> None:
    paddle.seed(3)
    net = Net()
    net.eval()
    x = np.random.default_rng(3).normal(size=(2, 3, 32, 32)).astype("float32")
    reference = net(paddle.to_tensor(x)).numpy()
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "net"
        paddle.jit.save(net, str(prefix), input_spec=INPUT_SPEC)
        model_file, params_file = model_files(prefix)

        from paddle import inference
        config = inference.Config(str(model_file), str(params_file))
        config.disable_gpu()
        predictor = inference.create_predictor(config)
        handle = predictor.get_input_handle(predictor.get_input_names()[0])
        handle.copy_from_cpu(x)
        predictor.run()
        paddle_inference = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()

        import onnxruntime
        import paddle2onnx
        onnx_file = Path(tmp) / "net.onnx"
        onnx_model, onnx_params = exporter_input(net, (model_file, params_file), Path(tmp) / "net-programdesc")
        with CapturedOutput() as captured:
            paddle2onnx.export(model_filename=str(onnx_model), params_filename=str(onnx_params),
                               save_file=str(onnx_file))
        install = RUNTIME_INSTALL.search(captured.text)
        session = onnxruntime.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
        onnx_out = session.run(None, {session.get_inputs()[0].name: x})[0]
    print(json.dumps({
        "shape": list(reference.shape),
        "inference_vs_dygraph": rel_diff(reference, paddle_inference),
        "onnxruntime_vs_dygraph": rel_diff(reference, onnx_out),
        "exported_from": onnx_model.suffix,  # the program format paddle2onnx read: .json (PIR) or .pdmodel
        "runtime_install": captured.text[install.start():].splitlines()[0] if install else None,
    }))


if __name__ == "__main__":
    main()
