"""A layer's checks that passed on one layer image, kept so that a build giving the same image does not run them again.

Why: a build whose inputs changed in one layer runs every layer's bake target; BuildKit answers the unchanged ones
from its cache with the very images checked before, and their checks (a minute for the paddle layer under qemu)
would only prove again what they proved. The key is what the checks' outcome depends on: the layer image's id, its
platform and layer, the marker, the manifest the checks expect, the checks' own code (validation/, ngc_common/ and
the module that runs them, by content), the host's Python, pytest and testinfra, and whether this host has an NVIDIA
GPU (GPU checks skip without one). A changed check, manifest or image misses. Only a run without a failure is kept,
with its reports, under build/cache (which the tests' scratch copies of the checkout share). The long form:
docs/design-notes.md, section `ngc_paddle/image_build/layer_check_record.py`.
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
from ngc_paddle.validate_layer import LayerCheckResult

FOLDER = Path("build") / "cache" / "layer-checks"  # under the checkout's root
REPORTS = ("validation.json", "validation.md", "validation.xml")  # what a layer's checks write beside the manifest
FORMAT = 1
CHECKS_CODE = ("validation", "ngc_common", "ngc_paddle/validate_layer.py")  # relative to the checkout's root


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


def load(root: Path, record_key: str, layer: str, output: Path) -> LayerCheckResult | None:
    """The recorded result, its reports copied into `output` as a run writes them; None where nothing (or nothing
    readable: it is run again) is recorded under the key."""
    folder = root / FOLDER / record_key
    try:
        stored = json.loads((folder / "result.json").read_text())
        if stored.get("format") != FORMAT or stored.get("layer") != layer:
            return None
        passed, skipped, seconds = int(stored["passed"]), int(stored["skipped"]), float(stored["seconds"])
        reports = [name for name in REPORTS if (folder / name).is_file()]
        if "validation.json" not in reports:
            return None
        output.mkdir(parents=True, exist_ok=True)
        for name in reports:
            shutil.copyfile(folder / name, output / name)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return LayerCheckResult(layer, passed=passed, skipped=skipped, failed=[], seconds=seconds,
                            report=output / "validation.json")


def save(root: Path, record_key: str, layer: str, result: LayerCheckResult) -> None:
    """Keep a run that failed nothing, with its reports (written whole, then moved: a concurrent build of the same
    image reads either no record or a complete one)."""
    if result.failed or result.report is None:
        return
    folder = root / FOLDER / record_key
    staging = folder.with_name(f".{record_key}.{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in REPORTS:
        if (result.report.parent / name).is_file():
            shutil.copyfile(result.report.parent / name, staging / name)
    (staging / "result.json").write_text(json.dumps({
        "format": FORMAT, "layer": layer, "passed": result.passed, "skipped": result.skipped,
        "seconds": result.seconds}, indent=1) + "\n")
    try:
        os.replace(staging, folder)
    except OSError:  # another build recorded the same key first: its record stands
        shutil.rmtree(staging, ignore_errors=True)
