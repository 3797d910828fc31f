"""Release stage `build`: the flavor's image, layer by layer, and what the later stages and the notes need of it.

Inputs: none kept; the build always runs (ngc_paddle.image_build answers an unchanged build from the
  images' inputs-digest labels). Its recorded key is the image id, from which every gate's key starts.
Run: ngc_paddle.image_build.pipeline.build, then the image's id, its size (for month-over-month) and
  its components as installed (read back from the image, for the notes).
Report: progress: the image build's own lines; a failure `    not built: REASON`.
  state.json `build`: key = image id, detail `IMAGE ID12 (each layer's status)`, and `image`, `readback`,
  `size`; a failed build: key "", detail its one-line reason.
  Notes: the gate table's build row; a flavor not built shows `not built: REASON` in place of its digest.
"""

from collections.abc import Callable
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.errors import NgcPaddleError
from ngc_paddle.image_build import pipeline as image_pipeline
from ngc_paddle.manifest.schema import Manifest
from ngc_paddle.release import notes
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.stages import Built, Outcome, release_folder

NAME = "build"


def run(manifest: Manifest, flavor: str, opts: ReleaseOptions, root: Path,
        say: Callable[[str], None]) -> tuple[Built, Outcome]:
    """Build the flavor (raises NgcPaddleError with the build's one-line reason) and describe the image."""
    report = image_pipeline.build(image_pipeline.BuildRequest(manifest.release, flavor, opts.sources, root), say=say)
    image = report.image
    image_id = engine.image_id(image) or ""
    layers = ", ".join(r.status for r in report.layers)
    readback = notes.read_back(image, manifest.flavors[flavor])
    size = engine.image_size(image)
    built = Built(manifest.release, flavor, manifest.flavors[flavor], image, image_id, size,
                  release_folder(root, manifest.release) / flavor, root, opts, engine.host_has_nvidia_gpus())
    return built, Outcome("passed", f"{image} {image_id[7:19]} ({layers})",
                          {"image": image, "readback": readback, "size": size})


def failed(exc: NgcPaddleError) -> Outcome:
    """A build that did not finish: its reason on one line."""
    return Outcome("failed", " ".join(str(exc).split()))
