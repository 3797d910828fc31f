"""Linking: every shared object of the stack resolves, and the libraries Paddle opens are on the loader path.

The libraries Paddle dlopen()s at run time are cuDNN, cuBLAS, NCCL and TensorRT.

Shared by every layer: each check runs once per component and counts as a check of the layer the
manifest puts that component in (see conftest.check_layer).
"""

import re

import pytest

pytestmark = pytest.mark.fast

# Libraries Paddle dlopen()s by soname at run time, per component: soname from the pinned major.
RUNTIME_SONAMES = {
    "cudnn": "libcudnn.so.{major}",
    "cublas": "libcublas.so.{major}",
    "nccl": "libnccl.so.{major}",
    "tensorrt": "libnvinfer.so.{major}",
    "cuda-runtime": "libcudart.so.{major}",
}


def native_layers(manifest: dict) -> set[str]:
    """The layers whose wheels ship native code the loader must resolve: every layer of the image's manifest
    between the base layer (Debian packages) and the suite on top (the checks' own tools)."""
    return set(manifest["layers"][1:-1])


def native_components(manifest: dict) -> list[str]:
    layers = native_layers(manifest)
    return sorted(n for n, c in manifest["components"].items() if c["kind"] == "pip" and c["layer"] in layers)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    m = metafunc.config._ngc_manifest
    if "native_component" in metafunc.fixturenames:
        names = native_components(m)
        metafunc.parametrize("native_component", names, ids=names)
    if "runtime_lib" in metafunc.fixturenames:
        names = sorted(n for n in RUNTIME_SONAMES if n in m["components"])
        metafunc.parametrize("runtime_lib", names or ["none"], ids=names or ["none"])


@pytest.fixture(scope="session")
def linking(run_probe, manifest) -> dict:
    packages = [manifest["components"][n]["package"] for n in native_components(manifest)]
    return run_probe("linking", *packages)


@pytest.mark.check("link.{native_component}", component="{native_component}")
def test_shared_objects_resolve(native_component, components, linking) -> None:
    package = components[native_component]["package"]
    result = linking[package]
    assert result["installed"], f"expected {package} installed, found it missing"
    absent = result["absent"]
    assert not absent, f"expected every library {package} installed, found {absent[0]} missing from disk"
    if result["checked"] == 0:
        pytest.skip(f"{package} is pure Python: no shared objects to resolve")
    unresolved = result["unresolved"]
    first = next(iter(unresolved.items()), None)
    assert not unresolved, (
        f"expected every library of {package} to resolve, found {len(unresolved)} that do not, "
        f"e.g. {first[0].rsplit('/', 1)[-1]} needs {', '.join(first[1])}" if first else ""
    )


@pytest.mark.check("link.runtime.{runtime_lib}", component="{runtime_lib}")
def test_runtime_library_on_loader_path(runtime_lib, components, host) -> None:
    if runtime_lib == "none":
        pytest.skip("flavor ships no CUDA libraries that Paddle opens at run time")
    major = components[runtime_lib]["version"].split(".")[0]
    soname = RUNTIME_SONAMES[runtime_lib].format(major=major)
    cache = host.run("ldconfig -p").stdout
    # CUDA 11's runtime is libcudart.so.11.0: accept a minor after the pinned major.
    pattern = re.compile(rf"^\s*{re.escape(soname)}(\.\d+)*\s", re.MULTILINE)
    assert pattern.search(cache), (
        f"expected {soname} (from {components[runtime_lib]['package']}) on the loader path, found it missing"
    )
