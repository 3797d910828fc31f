"""The os layer's Python environment (/opt/venv): pip's dependency check is clean, no duplicate distributions."""

import re

import pytest

pytestmark = pytest.mark.fast

# `pip check` lines tolerated in released images; each needs a reason.
PIP_CHECK_ALLOWED: list[tuple[str, str]] = []


@pytest.mark.check("pyenv.pip-check", component="python")
def test_pip_check_is_clean(host, dists) -> None:
    if "pip" not in dists["distributions"]:
        pytest.skip("the venv has no distributions yet: the locked pip arrives with the first pip layer")
    result = host.run("python -m pip check")
    lines = [ln for ln in result.stdout.splitlines() if ln.strip() and not ln.startswith("No broken requirements")]
    blocking = [ln for ln in lines if not any(re.search(p, ln) for p, _reason in PIP_CHECK_ALLOWED)]
    assert not blocking, f"expected no broken requirements, found {len(blocking)}: {blocking[0]}"


@pytest.mark.check("pyenv.duplicates", component="python")
def test_no_duplicate_distributions(dists) -> None:
    dupes = dists["duplicates"]
    first = next(iter(dupes.items()), None)
    assert not dupes, f"expected one copy of each distribution, found {first[0]} {first[1]}" if first else ""


@pytest.mark.check("pyenv.locked", component="python")
def test_every_installed_distribution_is_locked(dists, manifest) -> None:
    """Nothing in the image's Python comes from outside the flavor's lock: pip, setuptools and wheel included."""
    locked = manifest.get("locked_python")
    if locked is None:
        pytest.skip("the manifest this image carries has no lock (a flavor built without one)")
    strays = sorted(f"{name} {info['version']}" + (f" (locked {locked[name]})" if name in locked else " (not locked)")
                    for name, info in dists["distributions"].items() if locked.get(name) != info["version"])
    assert not strays, f"expected only the lock's distributions, found {len(strays)} other(s): {', '.join(strays)}"
