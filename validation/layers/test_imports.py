"""Imports: every top-level module of every pinned pip component imports.

Shared by every layer: each check runs once per component and counts as a check of the layer the
manifest puts that component in (see conftest.check_layer).
"""

import re

import pytest

pytestmark = pytest.mark.fast

# Top-level modules that are not meant to be imported on their own, with the reason.
IMPORT_EXEMPT = {
    "debian": "Debian's setuptools patch, imported by setuptools itself",
    "pkg_resources": "deprecated setuptools API that warns on import",
    "rec2idx": "DALI's MXNet RecordIO indexing script; needs the optional mxnet",
    "wds2idx": "DALI's WebDataset indexing script; needs the optional webdataset tools",
    "tests": "test folders shipped by some wheels",
    "test": "test folders shipped by some wheels",
}


@pytest.mark.check("pyenv.import.{pip_component}")
def test_top_level_modules_import(pip_component, components, dists, host) -> None:
    package = re.sub(r"[-_.]+", "-", components[pip_component]["package"]).lower()
    modules = [m for m in dists["distributions"][package]["top_level"] if m not in IMPORT_EXEMPT]
    if not modules:
        pytest.skip(f"{package} ships no importable top-level module (libraries only)")
    script = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    result = host.run("python -W ignore -c %s" + " %s" * len(modules), script, *modules)
    tail = (result.stderr.strip().splitlines() or ["?"])[-1]
    assert result.rc == 0, f"expected {', '.join(modules)} to import, found: {tail}"
