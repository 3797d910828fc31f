"""The tensorrt layer: the Python bindings import at the pinned version and find libnvinfer; a TensorRT that comes
as a vendor archive (gpu-cu118) is the pinned file and reports the pinned version itself (skipped, with the reason,
where the lock left the layer out)."""

import pytest

pytestmark = pytest.mark.fast


def trt_version(reported: int) -> str:
    """getInferLibVersion's integer as MAJOR.MINOR.PATCH: TensorRT 8 reports MAJOR*1000 + MINOR*100 + PATCH (8601),
    TensorRT 10 MAJOR*10000 + MINOR*100 + PATCH (NvInferVersion.h)."""
    scale = 10000 if reported >= 100000 else 1000
    major, rest = divmod(reported, scale)
    return f"{major}.{rest // 100}.{rest % 100}"


@pytest.mark.needs("tensorrt")
@pytest.mark.check("func.tensorrt-import", component="tensorrt")
def test_tensorrt_bindings_import_at_the_pinned_version(components, host) -> None:
    expected = components["tensorrt"]["version"]
    result = host.run("python -c 'import tensorrt; print(tensorrt.__version__)'")
    assert result.rc == 0, f"expected 'import tensorrt' to work, found: {result.stderr.strip().splitlines()[-1:]}"
    found = result.stdout.strip()
    assert found.split(".")[:3] == expected.split(".")[:3], f"expected tensorrt {expected}, found {found}"


@pytest.mark.needs("tensorrt")
@pytest.mark.check("version.tensorrt-library", component="tensorrt")
def test_libnvinfer_is_the_pinned_tensorrt(components, run_probe) -> None:
    """libnvinfer.so, opened by the name Paddle opens, reports the pinned version (the figure
    paddle.inference.get_trt_runtime_version() gives on a GPU host); a vendor archive's record is the pinned file."""
    comp = components["tensorrt"]
    found = run_probe("archive_record", "tensorrt", "libnvinfer.so", "getInferLibVersion")
    if comp["kind"] == "archive":
        record = found["record"]
        assert record is not None, "expected the record of the installed archive, found none"
        assert (record["file"], record["version"]) == (comp["file"], comp["version"]), (
            f"expected archive {comp['file']} ({comp['version']}), found {record['file']} ({record['version']})")
    assert found["reported"] is not None, f"expected libnvinfer.so to open and report its version, found: " \
                                          f"{found.get('error')}"
    reported = trt_version(found["reported"])
    assert reported.split(".") == comp["version"].split(".")[:3], (
        f"expected libnvinfer.so to report TensorRT {comp['version']}, found {reported}")
