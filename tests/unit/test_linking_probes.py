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
    monkeypatch.setattr(linking, "machine", lambda path: "x86-64")
    shipped = {"libpaddle.so": "paddlepaddle", "libquadmath-1.so": "numpy", "libnvinfer.so.10": "tensorrt-cu12-libs"}
    numpy = linking.resolve("numpy", shipped)
    assert numpy["unresolved"] == {} and numpy["preloaded"] == {
        "/sp/numpy.libs/libgfortran-2.so": ["libquadmath-1.so (loaded first by _umath.so)"]}
    onnx = linking.resolve("paddle2onnx", shipped)
    assert onnx["unresolved"] == {} and onnx["preloaded"]["/sp/paddle2onnx/ext.so"] == [
        "libpaddle.so (shipped by paddlepaddle, loaded by its import)"]
    assert linking.resolve("tensorrt", shipped)["unresolved"] == {"/sp/trt/tensorrt.so": ["libnvinfer.so.8"]}


def elf(path: Path, e_machine: int) -> str:
    """A little-endian ELF header for `e_machine` (all the machine check reads)."""
    path.write_bytes(b"\x7fELF\x02\x01" + bytes(12) + e_machine.to_bytes(2, "little") + bytes(44))
    return str(path)


def test_a_file_built_for_another_machine_is_foreign_though_ldd_lists_nothing(linking, monkeypatch, tmp_path) -> None:
    # Paddle's aarch64 wheel ships x86-64 builds of liblapack.so.3 and its kin: ldd prints no map for them
    own, lapack = elf(tmp_path / "python3", 183), elf(tmp_path / "liblapack.so.3", 62)
    phi = elf(tmp_path / "libphi_core.so", 183)
    monkeypatch.setattr(linking.sys, "executable", own)
    monkeypatch.setattr(linking, "shared_objects", lambda target: ([lapack, phi], []))
    monkeypatch.setattr(linking, "ldd", lambda path: (set(), set()))
    result = linking.resolve("paddlepaddle", {})
    assert result["foreign"] == {lapack: "x86-64"} and result["unresolved"] == {}
    assert linking.machine(elf(tmp_path / "odd.so", 4242)) == "e_machine 4242"


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


def test_the_link_check_fails_a_foreign_file_unless_the_manifest_waives_it(request) -> None:
    for marker in ("fast", "check", "needs", "gpu", "slow", "exclusive"):  # the suite's (validation/pytest.ini)
        request.config.addinivalue_line("markers", f"{marker}: validation suite marker")
    check = load("validation/layers/test_linking.py", "test_linking_check").test_shared_objects_resolve
    libs = "/sp/paddle/libs/"
    probe = {"paddlepaddle": {"installed": True, "checked": 3, "absent": [], "preloaded": {},
                              "unresolved": {libs + "libopenblas.so.0": ["libgfortran.so.4"]},
                              "foreign": {libs + "liblapack.so.3": "x86-64", libs + "libblas.so.3": "x86-64"}}}
    paddle = {"package": "paddlepaddle", "kind": "pip",
              "known_unresolved": {"libopenblas.so.0": "nothing loads it"}}
    with pytest.raises(AssertionError, match=r"found 2 that do not, e\.g\. libblas\.so\.3 needs a build for this "
                                             r"platform \(it is x86-64 code\)"):
        try:
            check("paddle", {"paddle": paddle}, probe, lambda *_: None)
        except pytest.skip.Exception as skipped:  # a skip would hide the failure
            pytest.fail(f"expected the unwaived foreign files to fail the check, found it skipped: {skipped}")
    paddle["known_unresolved"].update({"liblapack.so.3": "x86-64 LAPACK", "libblas.so.3": "x86-64 LAPACK"})
    with pytest.raises(pytest.skip.Exception) as skipped:
        check("paddle", {"paddle": paddle}, probe, lambda *_: None)
    assert str(skipped.value) == (
        "waived by the manifest on this platform: libblas.so.3 needs a build for this platform (it is x86-64 code), "
        "liblapack.so.3 needs a build for this platform (it is x86-64 code): x86-64 LAPACK; "
        "libopenblas.so.0 needs libgfortran.so.4: nothing loads it")
