"""Versions: every pinned pip component is installed at exactly the manifest's version.

Shared by every layer: each check runs once per component and counts as a check of the layer the
manifest puts that component in (see conftest.check_layer).
"""

import pytest

from ngc_common.pep503 import canonical

pytestmark = pytest.mark.fast


@pytest.mark.check("version.{pip_component}")
def test_pip_component_version(pip_component, components, dists) -> None:
    comp = components[pip_component]
    installed = dists["distributions"].get(canonical(comp["package"]))
    assert installed is not None, f"expected {comp['package']} {comp['version']}, found it not installed"
    assert installed["version"] == comp["version"], (
        f"expected {comp['package']} {comp['version']}, found {installed['version']}"
    )
