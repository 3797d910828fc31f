"""Unit tests never read or fill the user's caches: each test's per-layer scan cache and layer check records are its
own, so they start cold."""

from pathlib import Path

import pytest

from ngc_paddle.image_build import layer_check_record
from ngc_paddle.scan.checks.layer_cache import CACHE_ENV


@pytest.fixture(autouse=True)
def own_scan_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "scan-layers"))
    monkeypatch.setenv(layer_check_record.CACHE_ENV, str(tmp_path / "layer-checks"))
