"""The os layer: the Debian release and the Python the manifest pins."""

import pytest

pytestmark = pytest.mark.fast


@pytest.mark.check("version.os", component="os")
def test_os_release(host, components) -> None:
    expected = components["os"]["version"]
    found = host.system_info.release
    assert host.system_info.distribution == "debian", f"expected Debian, found {host.system_info.distribution}"
    assert found.split(".")[0] == expected, f"expected Debian {expected}, found {found}"


@pytest.mark.check("version.python", component="python")
def test_python_version(components, dists) -> None:
    expected, found = components["python"]["version"], dists["python"]
    assert found == expected or found.startswith(expected + "."), f"expected Python {expected}, found {found}"
