"""Unit tests never read or fill the user's scan cache: each test's per-layer cache is its own, so it starts cold."""

from pathlib import Path

import pytest

from ngc_paddle.scan.checks.layer_cache import CACHE_ENV


@pytest.fixture(autouse=True)
def own_scan_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "scan-layers"))
