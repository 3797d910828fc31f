"""Checks per layer: which layer owns each check, what a layer image collects, per-layer reports, the
build stopping at the layer whose check failed (no engine: collection only, and a stubbed check run)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ngc_paddle import validate_layer
from ngc_paddle.host_errors import BuildError, NgcPaddleError
from ngc_paddle.image_build import build_flavor
from ngc_paddle.image_build.build_report import BuildReport, LayerResult
from ngc_paddle.layers import LAYER_ORDER
from ngc_paddle.manifest import load_manifest
from ngc_paddle.manifest.resolve import image_manifest
from ngc_paddle.validate_image import default_output

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "validation"
MANIFEST = load_manifest(REPO / "releases" / "26.12.yaml")

# Prints each collected check's node id and its layer marker, so a test can see what an image would run.
DUMP_PLUGIN = '''
def pytest_collection_finish(session):
    for item in session.items:
        layers = [m.name for m in item.iter_markers() if m.name.startswith("layer_")]
        fast = any(m.name == "fast" for m in item.iter_markers())
        print("CHECK", item.nodeid, ",".join(layers), "fast" if fast else "-")
'''


def collect(tmp_path: Path, flavor: str, layer: str | None) -> dict[str, tuple[str, bool]]:
    """node id -> (layer, fast) of the checks the suite collects for FLAVOR's image of LAYER."""
    manifest_file = tmp_path / "manifest.json"
    manifest_file.write_text(json.dumps(image_manifest(MANIFEST, flavor)))
    (tmp_path / "layer_dump.py").write_text(DUMP_PLUGIN)
    env = {"PATH": "/usr/bin:/bin", "NGC_PADDLE_MANIFEST_FILE": str(manifest_file), "PYTHONPATH": str(tmp_path),
           "PYTHONDONTWRITEBYTECODE": "1", **({"NGC_PADDLE_LAYER": layer} if layer else {})}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-c", str(SUITE / "pytest.ini"), "--rootdir", str(SUITE),
                           "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "layer_dump",
                           str(SUITE / "layers"), str(SUITE / "checks")],
                          cwd=SUITE, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    found = {}
    for line in proc.stdout.splitlines():
        if line.startswith("CHECK "):
            _, nodeid, layers, fast = line.split(" ")
            assert layers.count("layer_") == 1, line  # each check belongs to exactly one layer
            # testinfra's `host` adds its target to the id: [local], [local-dali]
            nodeid = nodeid.replace("[local]", "").replace("[local-", "[")
            found[nodeid] = (layers.removeprefix("layer_"), fast == "fast")
    return found


def test_layer_folders_are_layers() -> None:
    folders = {p.name for p in (SUITE / "layers").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders and folders <= set(LAYER_ORDER), folders - set(LAYER_ORDER)


def test_intermediate_layer_image_collects_only_its_layers(tmp_path: Path) -> None:
    checks = collect(tmp_path, "cpu", "dali")
    layers = {layer for layer, _fast in checks.values()}
    assert layers == {"os", "dali"}, layers
    assert checks["layers/dali/test_dali.py::test_dali_cpu_pipeline"] == ("dali", False)
    # shared per-component checks count for the component's layer in the manifest
    assert checks["layers/test_versions.py::test_pip_component_version[dali]"] == ("dali", True)
    assert checks["layers/test_linking.py::test_shared_objects_resolve[dali]"] == ("dali", True)
    assert checks["layers/os/test_python_env.py::test_pip_check_is_clean"] == ("os", True)
    assert not [n for n in checks if "paddle" in n or n.startswith("checks/")], "checks of layers above dali"


def test_flavor_image_collects_every_layer_each_with_fast_checks(tmp_path: Path) -> None:
    checks = collect(tmp_path, "cpu", None)
    by_layer = {layer: [n for n, (owner, _fast) in checks.items() if owner == layer] for layer in ("os", "dali",
                                                                                                    "paddle", "suite")}
    assert all(by_layer.values()), {k: len(v) for k, v in by_layer.items()}
    assert "layers/test_versions.py::test_pip_component_version[pytest]" in by_layer["suite"]
    assert "layers/paddle/test_gpu.py::test_amp_training_step" in by_layer["paddle"]
    assert all(n.startswith(("checks/", "layers/test_")) for n in by_layer["suite"])
    # every layer has fast checks for the build to run right after it
    assert all(any(checks[n][1] for n in names) for names in by_layer.values())


def test_per_layer_summary_and_markdown() -> None:
    sys.path.insert(0, str(SUITE))
    try:
        from ngc_report import in_layer_order, markdown, per_layer, title
    finally:
        sys.path.remove(str(SUITE))
    checks = [{"id": "link.dali", "component": "dali", "layer": "dali", "status": "failed", "message": "expected x",
               "duration_s": 0.5, "gpu": False},
              {"id": "version.os", "component": "os", "layer": "os", "status": "passed", "message": "ok",
               "duration_s": 0.25, "gpu": False}]
    ordered = in_layer_order(checks, ["os", "dali"])
    assert [c["id"] for c in ordered] == ["version.os", "link.dali"]
    layers = per_layer(ordered, ["os", "dali"])
    assert [(x["layer"], x["counts"]["passed"], x["counts"]["failed"], x["ok"]) for x in layers] == [
        ("os", 1, 0, True), ("dali", 0, 1, False)]
    summary = {"release": "26.12", "flavor": "cpu", "layer": "dali", "flavor_layers": ["os", "dali", "paddle", "suite"],
               "image_layers": ["os", "dali"], "counts": {"passed": 1, "failed": 1, "error": 0, "skipped": 0},
               "duration_s": 1.0, "layers": layers, "checks": ordered}
    assert title(summary) == "26.12-cpu up to layer dali"
    assert title({**summary, "layer": "suite"}) == "26.12-cpu"
    text = markdown(summary)
    assert "# Validation of 26.12-cpu up to layer dali: FAIL" in text
    assert "| dali | 0 | 1 | 0 | 0 | 0.5 |" in text and "| dali | link.dali | dali | failed | expected x |" in text


def test_layer_image_needs_its_labels_and_a_layer_of_its_flavor() -> None:
    with pytest.raises(NgcPaddleError) as missing:
        validate_layer.layer_image({"ngc-paddle.release": "26.12"}, "debian:12")
    assert "ngc-paddle.flavor, ngc-paddle.layer" in str(missing.value) and "\n" not in str(missing.value)
    which = validate_layer.layer_image({"ngc-paddle.release": "26.12", "ngc-paddle.flavor": "cpu",
                                      "ngc-paddle.layer": "dali"}, "x")
    resolved = validate_layer.resolved_manifest(REPO, which)
    assert resolved["layers"] == ["os", "dali", "paddle", "suite"] and resolved["components"]["dali"]["layer"] == "dali"
    with pytest.raises(NgcPaddleError, match=r"releases/26.12.yaml: flavors.cpu.layers: has no layer 'tensorrt'"):
        validate_layer.resolved_manifest(REPO, validate_layer.LayerImage("26.12", "cpu", "tensorrt"))


def test_layer_image_reports_go_to_a_folder_of_their_own() -> None:
    labels = {"ngc-paddle.release": "26.12", "ngc-paddle.flavor": "cpu"}
    assert default_output(REPO, {**labels, "ngc-paddle.layer": "dali"}, "x").name == "26.12-cpu-dali"
    assert default_output(REPO, {**labels, "ngc-paddle.layer": "suite"}, "x").name == "26.12-cpu"


def test_build_stops_at_the_layer_whose_check_failed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    failed = [{"id": "link.dali", "message": "expected every library of nvidia-dali-cuda120 to resolve, found 1"},
              {"id": "pyenv.import.dali", "message": "expected nvidia to import"}]
    report = tmp_path / "build" / "logs" / "dali-checks" / "validation.json"

    def fake(root, image, manifest, layer, output, marker="fast", say=print):
        return validate_layer.LayerCheckResult(layer, passed=3, failed=failed, seconds=1.5, report=report)

    monkeypatch.setattr(build_flavor, "check_layer", fake)
    said: list[str] = []
    result = LayerResult("dali", "dali-cpu", "ngc-paddle-layers:26.12-cpu-dali", status="built")
    with pytest.raises(BuildError) as stopped:
        build_flavor._check_layer(tmp_path, {}, result, "[2/4]", tmp_path / "build" / "logs", said.append)
    message = str(stopped.value)
    assert message.startswith("layer dali: check link.dali failed: expected every library") and "\n" not in message
    assert "also failed: pyenv.import.dali" in message and "release tag was not moved" in message
    assert said == ["    [2/4] dali: checks 3 passed, 2 failed in 1.5s"]
    assert result.status == "failed" and result.checks["failed"] == ["link.dali", "pyenv.import.dali"]
    md = BuildReport("26.12", "cpu", "base", "now", layers=[result]).markdown()
    assert "failed: link.dali, pyenv.import.dali" in md
