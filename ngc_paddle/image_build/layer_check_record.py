"""A layer's checks that passed on one layer image, kept so that a build giving the same image does not run them again.

Why: a build whose inputs changed in one layer runs every layer's bake target; BuildKit answers the unchanged ones
from its cache with the very images checked before, and their checks (a minute for the paddle layer under qemu)
would only prove again what they proved. The key is what the checks' outcome depends on: the layer image's id, its
platform and layer, the marker, the manifest the checks expect, the checks' own code (validation/, ngc_common/ and
the module that runs them, by content), the host's Python, pytest and testinfra, and whether this host has an NVIDIA
GPU (GPU checks skip without one). A changed check, manifest or image misses. Only a run without a failure is kept,
with its reports, in the user's cache (one for every checkout, as the scan's layer cache; the oldest beyond
MAX_ENTRIES removed). The long form: docs/design-notes.md, section `ngc_paddle/image_build/layer_check_record.py`.
"""

import hashlib
import json
import os
import shutil
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

from ngc_common import suite_record
from ngc_paddle import user_cache
from ngc_paddle.validate_layer import LayerCheckResult

CACHE_ENV = "NGC_PADDLE_LAYER_CHECKS_CACHE"
MAX_ENTRIES = 200  # a record is its reports: some 100 KB
REPORTS = ("validation.json", "validation.md", "validation.xml")  # what a layer's checks write beside the manifest
FORMAT = 1
CHECKS_CODE = ("validation", "ngc_common", "ngc_paddle/validate_layer.py")  # relative to the checkout's root


def default_folder() -> Path:
    """NGC_PADDLE_LAYER_CHECKS_CACHE, else ngc-paddle/layer-checks in the user's cache."""
    return user_cache.folder("layer-checks", CACHE_ENV)


@cache
def checks_code_digest(root: Path) -> str:
    """sha256 over every file of the checks' code, by path relative to `root` and content."""
    roots = [str(root / part) for part in CHECKS_CODE if (root / part).is_dir()]
    found = suite_record.walk(roots)
    for part in CHECKS_CODE:
        if (root / part).is_file():
            found[str(root / part)] = hashlib.sha256((root / part).read_bytes()).hexdigest()
    listing = sorted((os.path.relpath(path, root), digest) for path, digest in found.items())
    return hashlib.sha256(json.dumps(listing).encode()).hexdigest()


def host_facts(gpu: bool) -> dict[str, str]:
    """What of this host the checks' outcome depends on beside the image and the code."""
    return {"python": sys.version.split()[0], "pytest": metadata.version("pytest"),
            "testinfra": metadata.version("pytest-testinfra"), "nvidia_gpu": str(gpu)}


def key(root: Path, image_id: str, platform: str, layer: str, marker: str, manifest: dict, gpu: bool) -> str:
    """The record's name: a digest of everything listed in this module's docstring."""
    inputs = {"format": FORMAT, "image": image_id, "platform": platform, "layer": layer, "marker": marker,
              "manifest": manifest, "code": checks_code_digest(root), "host": host_facts(gpu)}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def load(folder: Path, record_key: str, layer: str, output: Path) -> LayerCheckResult | None:
    """The recorded result, its reports copied into `output` as a run writes them; None where nothing (or nothing
    readable: it is run again) is recorded under the key."""
    record = folder / record_key
    try:
        stored = json.loads((record / "result.json").read_text())
        if stored.get("format") != FORMAT or stored.get("layer") != layer:
            return None
        passed, skipped, seconds = int(stored["passed"]), int(stored["skipped"]), float(stored["seconds"])
        reports = [name for name in REPORTS if (record / name).is_file()]
        if "validation.json" not in reports:
            return None
        output.mkdir(parents=True, exist_ok=True)
        for name in reports:
            shutil.copyfile(record / name, output / name)
        os.utime(record)  # used: the last to go when the oldest are removed
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return LayerCheckResult(layer, passed=passed, skipped=skipped, failed=[], seconds=seconds,
                            report=output / "validation.json")


def save(folder: Path, record_key: str, layer: str, result: LayerCheckResult) -> None:
    """Keep a run that failed nothing, with its reports (written whole, then moved: a concurrent build of the same
    image reads either no record or a complete one)."""
    if result.failed or result.report is None:
        return
    record = folder / record_key
    staging = folder / f".{record_key}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in REPORTS:
        if (result.report.parent / name).is_file():
            shutil.copyfile(result.report.parent / name, staging / name)
    (staging / "result.json").write_text(json.dumps({
        "format": FORMAT, "layer": layer, "passed": result.passed, "skipped": result.skipped,
        "seconds": result.seconds}, indent=1) + "\n")
    try:
        os.replace(staging, record)
    except OSError:  # another build recorded the same key first: its record stands
        shutil.rmtree(staging, ignore_errors=True)
    records = sorted((p for p in folder.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime)
    for old in records[:-MAX_ENTRIES]:
        shutil.rmtree(old, ignore_errors=True)
