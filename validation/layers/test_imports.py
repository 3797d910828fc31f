"""Imports: every top-level module of every pinned pip component imports.

Shared by every layer: each check runs once per component and counts as a check of the layer the
manifest puts that component in (see conftest.check_layer). The modules of all selected components
import in one probe process (probes/imports.py), so Paddle loads once, not once per component.
"""


import pytest

from ngc_common.pep503 import canonical

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


def modules_of(component: str, components: dict, dists: dict) -> list[str] | None:
    """The component's importable top-level modules; None when its distribution is not installed."""
    package = canonical(components[component]["package"])
    installed = dists["distributions"].get(package)
    return [m for m in installed["top_level"] if m not in IMPORT_EXEMPT] if installed else None


@pytest.fixture(scope="session")
def imported(request: pytest.FixtureRequest, components: dict, dists: dict, run_probe) -> dict:
    """Import results of the modules of every component whose import check this session runs."""
    selected = {item.callspec.params["pip_component"] for item in request.session.items
                if item.originalname == "test_top_level_modules_import"}
    modules = [m for name in sorted(selected) for m in modules_of(name, components, dists) or []]
    return run_probe("imports", *dict.fromkeys(modules)) if modules else {}


@pytest.mark.check("pyenv.import.{pip_component}")
def test_top_level_modules_import(pip_component, components, dists, imported) -> None:
    package = components[pip_component]["package"]
    modules = modules_of(pip_component, components, dists)
    assert modules is not None, f"expected {package} installed, found it missing"
    if not modules:
        pytest.skip(f"{package} ships no importable top-level module (libraries only)")
    failed = {m: imported[m] for m in modules if imported.get(m, "not imported by the probe") is not None}
    first = next(iter(failed.items()), None)
    assert not failed, f"expected {', '.join(modules)} to import, found {first[0]}: {first[1]}" if first else ""
