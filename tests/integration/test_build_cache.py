"""A second build host (an engine instance with its own data root and cache) builds the flavor from the registry's
cache alone and rebuilds no step; both hosts' images have the same digest (reproducible, same base bootstrap)."""

import json
from pathlib import Path

from ngc_paddle import engine
from tests.integration.conftest import AMD64, own_registry, run_cli, scratch

SECOND = "itest-cache2"


def report(root: Path) -> dict:
    return json.loads(next((root / "build" / "reports").glob("*/build.json")).read_text())


def test_a_second_build_host_takes_every_step_from_the_registry_cache(tmp_path: Path) -> None:
    with own_registry(5021, tmp_path / "registry") as registry:
        layers, digest_a, digest_b = _build_on_two_hosts(tmp_path, registry)
    assert [(layer["layer"], layer["steps_run"]) for layer in layers] == [(layer["layer"], []) for layer in layers]
    assert all(layer["steps_cached"] > 0 and layer["status"] == "cached" for layer in layers)
    assert digest_a == digest_b, "the same lock gives the same image on both hosts"


def _build_on_two_hosts(tmp_path: Path, registry: str) -> tuple[list[dict], str | None, str | None]:
    """Build on this engine (writing the cache), then on a fresh engine instance (reading it): B's layers."""
    root = scratch(tmp_path / "repo", "ngc-paddle-itest-cache")
    first = run_cli("build", *AMD64, "--force", "--cache-registry", registry, root=root)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr
    digest_a = engine.image_id(report(root)["image"])
    try:
        with engine.using(engine.instance_host(SECOND)):
            assert engine.images("ngc-paddle-itest-cache") == []  # a host that never built it
            second = run_cli("build", *AMD64, "--force", "--cache-registry", registry, root=root)
            assert second.returncode == 0, second.stdout[-2000:] + second.stderr
            layers = report(root)["layers"]
            digest_b = engine.image_id(report(root)["image"])
    finally:
        engine.remove_instance(SECOND)
    return layers, digest_a, digest_b
