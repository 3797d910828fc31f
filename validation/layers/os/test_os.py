"""The os layer: the distribution release (Debian 12, Ubuntu 20.04) and the Python the manifest pins."""

import pytest

pytestmark = pytest.mark.fast


@pytest.mark.check("version.os", component="os")
def test_os_release(host, manifest, components) -> None:
    expected = manifest["distribution"]  # from the os component's base image (ngc_paddle/distro.py)
    version = components["os"]["version"]
    found, release = host.system_info.distribution, host.system_info.release
    assert found == expected["id"], f"expected {expected['name']}, found {found}"
    assert release == version or release.startswith(version + "."), (
        f"expected {expected['name']} {version}, found {release}")


@pytest.mark.check("version.python", component="python")
def test_python_version(components, dists) -> None:
    expected, found = components["python"]["version"], dists["python"]
    assert found == expected or found.startswith(expected + "."), f"expected Python {expected}, found {found}"
