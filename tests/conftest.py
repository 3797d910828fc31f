"""Shared fixtures: the repository root and manifest files the tests can break on purpose."""

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def current_manifest_data() -> dict:
    """The newest committed manifest as plain data (anchors expanded)."""
    newest = sorted((REPO / "releases").glob("*.yaml"))[-1]
    return yaml.safe_load(newest.read_text())


@pytest.fixture
def write_manifest(tmp_path: Path) -> Callable[[dict], Path]:
    """Write manifest data to tmp/releases/<release>.yaml and return the path."""

    def write(data: dict, name: str | None = None) -> Path:
        folder = tmp_path / "releases"
        folder.mkdir(exist_ok=True)
        path = folder / f"{name or data['release']}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    return write
