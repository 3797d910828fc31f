"""Validate an image or a running container from the build host.

Why: release engineers validate from outside the image too, where the image's labels can be read.
We start a container (or use a running one), copy the image's own validation suite out of it (so
the checks always match the probes in the image), and run that suite with testinfra's docker
backend; reports land on the host. A layer image has no suite of its own: the host's suite runs
its layers' checks (ngc_paddle/validate_layer.py).
"""

import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ngc_common import image_paths
from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine
from ngc_paddle.host_errors import Failed, NgcPaddleError, NotProven
from ngc_paddle.layers import TOP_LAYER
from ngc_paddle.validate_layer import host_suite_args, layer_image, resolved_manifest


class ValidationFailed(Failed):
    """Checks failed: exit 1, like a failed build or gate."""


def default_output(root: Path, labels: dict[str, str], name: str) -> Path:
    release, flavor = labels.get("ngc-paddle.release"), labels.get("ngc-paddle.flavor")
    layer = labels.get("ngc-paddle.layer", TOP_LAYER)
    stem = f"{release}-{flavor}" if release and flavor else name.replace("/", "_").replace(":", "-")
    if release and flavor and layer != TOP_LAYER:  # a layer image: a folder of its own
        stem += f"-{layer}"
    return root / "build" / "validation" / stem


def validate(image: str | None, container: str | None, output: Path | None, root: Path, extra: list[str],
             say: Callable[[str], None] = print) -> Path:
    """Run the suite against IMAGE (in a fresh container) or CONTAINER; return the report folder."""
    started_here = None
    if container is None:
        if image is None or engine.image_id(image) is None:
            raise NgcPaddleError(f"image {image!r} not found; fix: build it with 'make image' or name a local image")
        labels = engine.image_labels(image)
        # As root: the hygiene walk must read every file (root's home too); the checks of the default,
        # non-root user read the image's USER with docker inspect and switch to it themselves.
        proc = engine.start(image, "sleep", "infinity",
                            flags=["--user", "0:0", *engine.run_flags(), "-e", "NGC_PADDLE_QUIET=1"])
        if proc.returncode != 0:
            raise NgcPaddleError(f"cannot start a container from {image}: {proc.stderr.strip()}")
        container = started_here = proc.stdout.strip()
    else:
        running = engine.container_image(container)
        if running is None:
            raise NgcPaddleError(f"container {container!r} not found; fix: name a running container (docker ps)")
        labels = engine.image_labels(running)
    out = output or default_output(root, labels, image or container)
    try:
        with tempfile.TemporaryDirectory(prefix="ngc-validate-") as tmp:
            copied = engine.copy(f"{container}:{image_paths.VALIDATION}", tmp)
            suite, layer_args = Path(tmp) / "validation", []
            if copied.returncode != 0:  # a layer image: the host's suite, the manifest from releases/
                which = layer_image(labels, image or container)
                suite = root / "validation"
                layer_args = host_suite_args(root, container, resolved_manifest(root, which), which.layer, Path(tmp))
            say(f"==> validating {image or container} (container {container[:12]}) -> {out}")
            code = subprocess.run([sys.executable, str(suite / "run.py"), "--hosts", f"docker://{container}",
                                   "--output", str(out), *layer_args, *extra], check=False).returncode
    finally:
        if started_here:
            engine.remove_container(started_here)
    if code == ExitCode.FAIL:
        raise ValidationFailed(f"validation failed: see {out / 'validation.md'}")
    if code == ExitCode.NOT_PROVEN:
        raise NotProven(f"validation of {image or container} NOT PROVEN: its GPU checks could not run (no GPU "
                        f"visible); see {out / 'validation.md'}; fix: validate on a GPU host")
    if code != ExitCode.PASS:
        raise NgcPaddleError(f"the validation suite could not run (exit {code}); earlier reports in {out} were kept")
    return out
