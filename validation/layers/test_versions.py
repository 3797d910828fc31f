"""Versions: every pinned pip component is installed at exactly the manifest's version; the wheel of a vendor
archive (kind `archive`) at the version the archive carries (its locked wheel: 8.6.1 in TensorRT 8.6.1.6's tar).

Shared by every layer: each check runs once per component and counts as a check of the layer the
manifest puts that component in (see conftest.check_layer).
"""

import pytest

from ngc_common.pep503 import canonical

pytestmark = pytest.mark.fast


@pytest.mark.check("version.{pip_component}")
def test_pip_component_version(pip_component, components, manifest, dists) -> None:
    comp = components[pip_component]
    installed = dists["distributions"].get(canonical(comp["package"]))
    expected = comp["version"]
    assert installed is not None, f"expected {comp['package']} {expected}, found it not installed"
    if comp["kind"] == "archive":  # the lock's wheel when the image carries the pins, else a prefix of the archive's
        locked = (manifest.get("locked_python") or {}).get(canonical(comp["package"]))
        parts = installed["version"].split(".")
        expected = locked or (installed["version"] if expected.split(".")[:len(parts)] == parts else expected)
    assert installed["version"] == expected, f"expected {comp['package']} {expected}, found {installed['version']}"
