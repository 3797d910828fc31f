"""Release stage `build`: the flavor's image, layer by layer, and what the later stages and the notes need of it.

Inputs: none kept; the build always runs (ngc_paddle.image_build answers an unchanged build from the
  images' inputs-digest labels). Its recorded key is the image id, from which every gate's key starts.
Run: the flavor resolved once for the run (ngc_paddle.flavor), ngc_paddle.image_build.build_flavor.build on it,
  then the image's id, its size (for month-over-month) and its components as installed (read back from
  the image with the distributions probe, for the notes).
Report: progress: the image build's own lines; a failure `    not built: REASON`.
  state.json `build`: key = image id, detail `IMAGE ID12 (each layer's status)`, and `image`, `readback`,
  `size`; a failed build: key "", detail its one-line reason.
  Notes: the gate table's build row; a flavor not built shows `not built: REASON` in place of its digest.
"""

import json
from collections.abc import Callable

from packaging.utils import canonicalize_name

from ngc_common import image_paths
from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedFlavor
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.image_build import build_flavor as image_pipeline
from ngc_paddle.manifest.schema import Flavor
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.stages import Built, Outcome, release_folder

NAME = "build"
PROBE = f"{image_paths.PROBES}/distributions.py"


def run(resolved: ResolvedFlavor, opts: ReleaseOptions, say: Callable[[str], None]) -> tuple[Built, Outcome]:
    """Build the resolved flavor (raises NgcPaddleError with the one-line reason) and describe the image."""
    release, flavor = resolved.release_run, resolved.name
    report = image_pipeline.build(resolved, say=say)
    image = report.image
    image_id = engine.image_id(image) or ""
    layers = ", ".join(r.status for r in report.layers)
    readback = read_back(image, resolved.spec)
    size = engine.image_size(image)
    built = Built(resolved, image_id, size, release_folder(release.root, release.release) / flavor, opts,
                  engine.host_has_nvidia_gpus())
    return built, Outcome("passed", f"{image} {image_id[7:19]} ({layers})",
                          {"image": image, "readback": readback, "size": size})


def read_back(image: str, flavor: Flavor) -> dict[str, str]:
    """Each component's version as installed in the image (pip distributions, Debian packages, Python, OS release, a
    vendor archive's install record)."""
    debs = sorted({str(c.package) for c in flavor.components.values() if c.kind == "apt" and c.package})
    dpkg = f"dpkg-query -W -f='${{Package}} ${{Version}}\\n' {' '.join(debs)} 2>/dev/null; " if debs else ""
    archives = [name for name, c in flavor.components.items() if c.kind == "archive"]
    records = "".join(f"echo \"archive {name} $(tr -d '\\n' 2>/dev/null "
                      f"< {image_paths.ARCHIVE_RECORD.format(component=name)})\"; " for name in archives)
    proc = engine.run(image, "bash", "-c",
                      f"{dpkg}{records}python {PROBE}; . /etc/os-release; echo \"$VERSION_ID\"",
                      flags=("--network", "none", "-e", "NGC_PADDLE_QUIET=1"), check=True)
    lines = proc.stdout.strip().splitlines()
    dists, os_version = json.loads(lines[-2]), lines[-1]
    installed_archives = {}  # component -> the version its install record says ("missing" without one)
    for line in lines[:-2]:
        if line.startswith("archive "):
            _, name, *record = line.split(" ", 2)
            installed_archives[name] = json.loads(record[0]).get("version", "missing") if record and record[0] \
                else "missing"
    installed_debs = dict(line.split(" ", 1) for line in lines[:-2]
                          if line.count(" ") == 1 and not line.startswith("archive "))
    found = {}
    for name, comp in flavor.components.items():
        if comp.kind == "pip":
            dist = dists["distributions"].get(canonicalize_name(comp.package or ""), {})
            found[name] = dist.get("version", "missing")
        elif name == "python":
            found[name] = ".".join(dists["python"].split(".")[:2])
        elif name == "os":
            found[name] = os_version
        elif comp.kind == "apt" and comp.package:
            found[name] = installed_debs.get(str(comp.package), "missing")
        elif comp.kind == "archive":
            found[name] = installed_archives.get(name, "missing")
    return found


def failed(exc: NgcPaddleError) -> Outcome:
    """A build that did not finish: its reason on one line."""
    return Outcome("failed", " ".join(str(exc).split()))
