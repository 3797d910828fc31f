"""Python environment: pip's dependency check is clean, every top-level module imports, no duplicates."""

import re

import pytest

# `pip check` lines tolerated in released images; each needs a reason.
PIP_CHECK_ALLOWED: list[tuple[str, str]] = []
# Top-level modules that are not meant to be imported on their own, with the reason.
IMPORT_EXEMPT = {
    "debian": "Debian's setuptools patch, imported by setuptools itself",
    "pkg_resources": "deprecated setuptools API that warns on import",
    "rec2idx": "DALI's MXNet RecordIO indexing script; needs the optional mxnet",
    "wds2idx": "DALI's WebDataset indexing script; needs the optional webdataset tools",
    "tests": "test folders shipped by some wheels",
    "test": "test folders shipped by some wheels",
}


@pytest.fixture(scope="session")
def dists(run_probe) -> dict:
    return run_probe("distributions")


@pytest.mark.check("pyenv.pip-check", component="python")
def test_pip_check_is_clean(host) -> None:
    result = host.run("python -m pip check")
    lines = [ln for ln in result.stdout.splitlines() if ln.strip() and not ln.startswith("No broken requirements")]
    blocking = [ln for ln in lines if not any(re.search(p, ln) for p, _reason in PIP_CHECK_ALLOWED)]
    assert not blocking, f"expected no broken requirements, found {len(blocking)}: {blocking[0]}"


@pytest.mark.check("pyenv.duplicates", component="python")
def test_no_duplicate_distributions(dists) -> None:
    dupes = dists["duplicates"]
    first = next(iter(dupes.items()), None)
    assert not dupes, f"expected one copy of each distribution, found {first[0]} {first[1]}" if first else ""


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
