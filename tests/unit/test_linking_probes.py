"""What the linking checks prove: probes/linking.py counts a dependency only as the loader would find it (or names
the object that loads it first), probes/dlopen.py opens names as Paddle's loader does, and the names the runtime
check opens are the ones Paddle 2.6 / Paddle 3 dlopen() (ldd and the images are not here: the probes' decisions are
tested with their ldd and file listing replaced)."""

import ctypes.util
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def linking():
    return load("validation/probes/linking.py", "linking_probe")


def test_a_name_counts_only_where_the_loader_would_find_it(linking, monkeypatch) -> None:
    ldd = {"/sp/numpy/core/_umath.so": ({"libquadmath-1.so", "libgfortran-2.so"}, set()),
           "/sp/numpy.libs/libgfortran-2.so": (set(), {"libquadmath-1.so"}),  # loaded first by the extension
           "/sp/paddle2onnx/ext.so": (set(), {"libpaddle.so"}),  # Paddle's, loaded by `import paddle`
           "/sp/trt/tensorrt.so": (set(), {"libnvinfer.so.8", "libcuda.so.1"})}  # nothing ships it; a driver lib
    targets = {"numpy": ["/sp/numpy/core/_umath.so", "/sp/numpy.libs/libgfortran-2.so"],
               "paddle2onnx": ["/sp/paddle2onnx/ext.so"], "tensorrt": ["/sp/trt/tensorrt.so"]}
    monkeypatch.setattr(linking, "ldd", lambda path: ldd[path])
    monkeypatch.setattr(linking, "shared_objects", lambda target: (targets[target], []))
    shipped = {"libpaddle.so": "paddlepaddle", "libquadmath-1.so": "numpy", "libnvinfer.so.10": "tensorrt-cu12-libs"}
    numpy = linking.resolve("numpy", shipped)
    assert numpy["unresolved"] == {} and numpy["preloaded"] == {
        "/sp/numpy.libs/libgfortran-2.so": ["libquadmath-1.so (loaded first by _umath.so)"]}
    onnx = linking.resolve("paddle2onnx", shipped)
    assert onnx["unresolved"] == {} and onnx["preloaded"]["/sp/paddle2onnx/ext.so"] == [
        "libpaddle.so (shipped by paddlepaddle, loaded by its import)"]
    assert linking.resolve("tensorrt", shipped)["unresolved"] == {"/sp/trt/tensorrt.so": ["libnvinfer.so.8"]}


def test_dlopen_opens_by_the_exact_name_and_reports_the_file(tmp_path: Path) -> None:
    dlopen = load("validation/probes/dlopen.py", "dlopen_probe")
    libc = ctypes.util.find_library("c")
    assert dlopen.open_library(libc)["ok"]
    missing = dlopen.open_library("libngc-nothing-here.so")
    assert not missing["ok"] and "libngc-nothing-here.so" in missing["error"]


def test_the_runtime_check_opens_paddles_names_for_its_build() -> None:
    from ngc_common import paddle_dlopen as names

    cu118 = {"cuda": {"version": "11.8.0"}, "components": {"paddle": {"version": "2.6.2"}}}
    assert names.paddle_opens(cu118, "cudnn") == ("libcudnn.so",)  # Paddle 2.6: no pip CUDA libraries
    assert names.paddle_opens(cu118, "cublas") == ("libcublas.so", "libcublasLt.so")
    assert names.paddle_opens(cu118, "tensorrt") == ("libnvinfer.so", "libnvinfer_plugin.so")
    cu126 = {"cuda": {"version": "12.6.3"}, "components": {"paddle": {"version": "3.3.1"}}}
    assert names.paddle_opens(cu126, "cudnn") == ("libcudnn.so.9",)  # Paddle 3 with NVIDIA's wheels: sonames
    assert names.paddle_opens(cu126, "cublas") == ("libcublas.so.12", "libcublasLt.so.12")
    assert names.paddle_opens(cu126, "tensorrt") == ("libnvinfer.so", "libnvinfer_plugin.so")
    assert names.paddle_opens(cu126, "cuda-nvrtc") == ("libnvrtc.so",)
