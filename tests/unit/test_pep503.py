"""The image side's one PEP 503 helper agrees with packaging.utils.canonicalize_name, and every in-image
copy is gone: the installer, the distributions probe and the checks all use it."""

import importlib.util
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.utils import canonicalize_name

from ngc_common import pep503

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", [
    "PyYAML", "ruamel.yaml", "zope.interface", "Foo__Bar", "foo-_-.bar", "nvidia-dali-cuda120",
    "tensorrt_cu12_libs", "A.B-C_D", "pillow", "Pillow", "backports.zoneinfo", "typing_extensions", "x",
])
def test_agrees_with_packaging_on_tricky_names(name: str) -> None:
    assert pep503.canonical(name) == canonicalize_name(name)


@given(st.text(alphabet="abcXYZ019-_.", min_size=1, max_size=20).filter(lambda s: s[0].isalnum() and s[-1].isalnum()))
def test_agrees_with_packaging_on_any_valid_name(name: str) -> None:
    assert pep503.canonical(name) == canonicalize_name(name)


def test_the_installer_uses_it() -> None:
    """At build time nothing is installed: the installer imports the file the layer bind-mounts (here: ngc_common's)."""
    spec = importlib.util.spec_from_file_location("install_pip_layer", REPO / "layers/lib/install_pip_layer.py")
    installer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(installer)
    assert installer.canonical("Ruamel.YAML") == "ruamel-yaml"
    assert installer.canonical.__module__ == "pep503"


def test_no_other_copy_of_the_rule_in_image_code_and_every_pip_layer_mounts_it() -> None:
    """The rule is written once for the image side; the host side calls packaging (no hand-written copy)."""
    copies = []
    for folder in ("layers", "validation", "image", "ngc_paddle", "ngc_common", "benchmarks", "perf"):
        for path in (REPO / folder).rglob("*.py"):
            text = path.read_text()
            if path.name != "pep503.py" and (re.search(r"\[-_\.\]\+", text) or 'replace("_", "-")' in text):
                copies.append(str(path.relative_to(REPO)))
    assert copies == []
    for dockerfile in [REPO / "Dockerfile", *(REPO / "layers").glob("*/Dockerfile")]:
        if "install_pip_layer.py" in dockerfile.read_text() or "install.sh" in dockerfile.read_text():
            text = dockerfile.read_text()
            if "source=layers/lib," in text:  # the whole installer folder (os mounts clamp-mtimes.sh alone)
                assert "source=ngc_common/pep503.py,target=/tmp/ngc/shared/pep503.py" in text, dockerfile
