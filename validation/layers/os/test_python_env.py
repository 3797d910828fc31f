"""The os layer's Python environment (/opt/venv): pip's dependency check is clean, no duplicate distributions."""

import re

import pytest

pytestmark = pytest.mark.fast

# `pip check` lines tolerated in released images; each needs a reason.
PIP_CHECK_ALLOWED: list[tuple[str, str]] = []


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
