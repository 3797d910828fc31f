"""The tensorrt layer: the Python bindings import at the pinned version and find libnvinfer (skipped, with the reason,
where the lock left the layer out)."""

import pytest

pytestmark = pytest.mark.fast


@pytest.mark.needs("tensorrt")
@pytest.mark.check("func.tensorrt-import", component="tensorrt")
def test_tensorrt_bindings_import_at_the_pinned_version(components, host) -> None:
    expected = components["tensorrt"]["version"]
    result = host.run("python -c 'import tensorrt; print(tensorrt.__version__)'")
    assert result.rc == 0, f"expected 'import tensorrt' to work, found: {result.stderr.strip().splitlines()[-1:]}"
    found = result.stdout.strip()
    assert found.split(".")[:3] == expected.split(".")[:3], f"expected tensorrt {expected}, found {found}"
