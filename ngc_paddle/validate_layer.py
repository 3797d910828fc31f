"""Run the validation suite's layer checks against a layer image from the host.

Why: an intermediate layer image (`ngc-paddle-layers:26.12-cpu-dali`) carries no pytest and no
/opt/ngc-paddle, so the host's suite (`validation/`) runs with the host's pytest through testinfra's
docker backend, the flavor's manifest is resolved from the host's `releases/` (the image's labels
say release, flavor and layer), and the probes, which run with the image's own Python, are copied
into the container. `ngc-paddle validate` uses it for layer images, the build after each layer.
"""

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ngc_common import image_paths
from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError

LABELS = ("ngc-paddle.release", "ngc-paddle.flavor", "ngc-paddle.layer")


@dataclass(frozen=True)
class LayerImage:
    release: str
    flavor: str
    layer: str


def layer_image(labels: dict[str, str], image: str) -> LayerImage:
    """Release, flavor and layer of an image built by this project, from its labels."""
    missing = [key for key in LABELS if not labels.get(key)]
    if missing:
        raise NgcPaddleError(f"{image}: labels: no {', '.join(missing)} and no {image_paths.VALIDATION}; "
                             "fix: name an image built by ngc-paddle (a release image or one of its layers)")
    return LayerImage(*(labels[key] for key in LABELS))


def resolved_manifest(root: Path, which: LayerImage) -> dict:
    """The flavor's manifest as the final image would carry it (without the lock's Python pins), resolved from
    the host's releases/."""
    flavor = ResolvedRelease.load(root, which.release).flavor(which.flavor)
    layers = flavor.layers
    if which.layer not in layers:
        raise NgcPaddleError(f"releases/{which.release}.yaml: flavors.{which.flavor}.layers: has no layer "
                             f"{which.layer!r} (the image's ngc-paddle.layer label); fix: validate an image of "
                             "this release's manifest")
    return flavor.declared_manifest


def host_suite_args(root: Path, container: str, manifest: dict, layer: str, scratch: Path) -> list[str]:
    """Prepare CONTAINER for the host's suite; return run.py's arguments for it.

    The manifest goes to a file on the host (conftest reads it there); the probes are copied into the
    container, since they run with the image's Python, and ngc_common beside them (their sys.path[0]),
    since a layer image has it not installed.
    """
    manifest_file = scratch / "manifest.json"
    manifest_file.write_text(json.dumps(manifest, indent=2) + "\n")
    probes = image_paths.PROBES_IN_LAYER_IMAGE
    for source, target in ((root / "validation" / "probes", probes), (root / "ngc_common", f"{probes}/ngc_common")):
        copied = engine.copy(str(source), f"{container}:{target}")
        if copied.returncode != 0:
            raise NgcPaddleError(f"cannot copy the probes into container {container[:12]}: {copied.stderr.strip()}")
    return ["--manifest", str(manifest_file), "--layer", layer, "--probes", probes]


def run_host_suite(root: Path, container: str, output: Path, args: list[str], quiet: bool = False) -> int:
    """validation/run.py from the host's checkout, against CONTAINER; its exit code."""
    cmd = [sys.executable, str(root / "validation" / "run.py"), "--hosts", f"docker://{container}",
           "--output", str(output), *args]
    return subprocess.run(cmd, check=False, capture_output=quiet, text=True).returncode


@dataclass
class LayerCheckResult:
    layer: str
    passed: int = 0
    skipped: int = 0
    failed: list[dict] | None = None
    seconds: float = 0.0
    report: Path | None = None


def check_layer(root: Path, image: str, manifest: dict, layer: str, output: Path, marker: str = "fast",
                say: Callable[[str], None] = print, platform: str | None = None) -> LayerCheckResult:
    """Run LAYER's own checks selected by MARKER against IMAGE (a fresh container); the build calls it
    right after building the layer. Checks of the layers below are not rerun: they passed when built."""
    started = time.monotonic()
    proc = engine.start(image, "sleep", "infinity", flags=[*engine.run_flags(), *engine.platform_flags(platform),
                                                           "-e", "NGC_PADDLE_QUIET=1"])
    if proc.returncode != 0:
        raise NgcPaddleError(f"cannot start a container from {image} to check layer {layer}: {proc.stderr.strip()}")
    container = proc.stdout.strip()
    try:
        output.mkdir(parents=True, exist_ok=True)
        stale = output / "validation.json"
        stale.unlink(missing_ok=True)
        args = host_suite_args(root, container, manifest, layer, output)
        selection = f"({marker}) and layer_{layer.replace('-', '_')}" if marker else f"layer_{layer.replace('-', '_')}"
        code = run_host_suite(root, container, output, [*args, "--single", "--allow-empty", "-m", selection],
                              quiet=True)
    finally:
        engine.remove_container(container)
    result = LayerCheckResult(layer, seconds=round(time.monotonic() - started, 1))
    if code not in (ExitCode.PASS, ExitCode.FAIL, ExitCode.NOT_PROVEN):
        raise NgcPaddleError(f"layer {layer}: its checks could not run (validation/run.py exit {code})")
    if not stale.exists():  # nothing selected: the layer has no checks of this kind
        return result
    summary = json.loads(stale.read_text())
    result.report = stale
    result.passed, result.skipped = summary["counts"]["passed"], summary["counts"]["skipped"]
    result.failed = [c for c in summary["checks"] if c["status"] in ("failed", "error")]
    return result
