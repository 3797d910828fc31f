"""What Paddle was built for: its own version, and the CUDA, cuDNN and TensorRT of the flavor."""

import pytest

pytestmark = pytest.mark.fast


@pytest.fixture(scope="session")
def paddle_build(run_probe) -> dict:
    return run_probe("paddle_build")


@pytest.mark.check("version.paddle-runtime", component="paddle")
def test_paddle_reports_its_version(components, paddle_build) -> None:
    expected = components["paddle"]["version"]
    found = paddle_build["version"]
    assert found == expected, f"expected paddle.__version__ {expected}, found {found}"


@pytest.mark.check("version.paddle-cuda", component="paddle")
def test_paddle_built_for_flavor_cuda(manifest, paddle_build) -> None:
    cuda = manifest["cuda"]
    if cuda is None:
        assert not paddle_build["compiled_with_cuda"], "expected a CPU-only Paddle in a cpu flavor, found a CUDA build"
        return
    major_minor = ".".join(cuda["version"].split(".")[:2])
    assert paddle_build["compiled_with_cuda"], "expected a CUDA build of Paddle, found a CPU-only build"
    found = paddle_build["cuda"]
    assert found == major_minor, f"expected Paddle built for CUDA {major_minor}, found {found}"


@pytest.mark.needs("cudnn")
@pytest.mark.check("version.paddle-cudnn", component="cudnn")
def test_paddle_built_for_flavor_cudnn(components, paddle_build) -> None:
    expected = components["cudnn"]["version"]
    # paddle.version.cudnn() reads like "9.5.1"; compare major.minor with the pinned wheel
    found = str(paddle_build["cudnn"])
    assert found.split(".")[:2] == expected.split(".")[:2], f"expected Paddle built for cuDNN {expected}, found {found}"


@pytest.mark.needs("tensorrt")
@pytest.mark.check("version.paddle-tensorrt", component="tensorrt")
def test_paddle_finds_the_shipped_tensorrt(components, paddle_build) -> None:
    """The TensorRT Paddle finds at run time (paddle.inference.get_trt_runtime_version(): the libnvinfer.so its loader
    opens, no GPU needed) is the shipped one, of the major Paddle was compiled against: Paddle refuses nothing but
    warns on another major.minor (tensorrt_subgraph_pass.cc); the manifest's runs_with says why a minor differs."""
    expected = components["tensorrt"]["version"]
    runtime = paddle_build.get("trt_runtime") or f"none ({paddle_build.get('trt_runtime_error', 'not asked')})"
    assert runtime.split(".")[:3] == expected.split(".")[:3], (
        f"expected Paddle to find TensorRT {expected} at run time, found {runtime}")
    compiled = paddle_build.get("trt_compile") or "none"
    assert compiled.split(".")[0] == expected.split(".")[0], (
        f"expected Paddle compiled against TensorRT {expected.split('.')[0]}.x (the major it loads), found {compiled}")


@pytest.mark.check("version.paddle-trt-compile", component="paddle")
def test_paddle_trt_compile_version_is_the_manifests(components, paddle_build) -> None:
    """The TensorRT Paddle was compiled against is the one the manifest says (paddle.built_against.tensorrt), whether
    or not the image carries the TensorRT layer (gpu-cu118 without NVIDIA's index leaves it out)."""
    expected = components["paddle"].get("built_against", {}).get("tensorrt")
    if expected is None:
        pytest.skip("the manifest names no TensorRT that Paddle is built against (no Paddle-TRT in this flavor)")
    found = paddle_build.get("trt_compile") or "none"
    assert found.split(".")[: len(expected.split("."))] == expected.split("."), (
        f"expected Paddle compiled against TensorRT {expected} (manifest), found "
        f"paddle.inference.get_trt_compile_version() {found}"
    )
