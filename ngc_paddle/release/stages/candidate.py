"""Release stage `candidate`: the built image pushed under its candidate tag, so that the gates run it by digest.

Inputs (resume key): the image id and the registry, as the push stage; skipped while the registry still serves
  the recorded digest under the candidate tag.
Run: right after the build, before any gate: `docker tag IMAGE REGISTRY/REPO:RELEASE-FLAVOR-candidate` + `docker
  push`, the served digest read back (ngc_paddle.release.registry). The gates (on this host, a Slurm node or an
  SSH host) then run REGISTRY/REPO@DIGEST, never a tag that could move while a job waits in a queue; the push
  stage moves the release tag to that same digest only after every gate passed, so nothing unproven carries a
  release tag. A registry that wants a login the docker config lacks stops the run here (exit 2): nothing is gated.
Report: `--> push TARGET` and `    pushed TARGET@DIGEST ...` (or `already there`); state.json `candidate`: key,
  detail TARGET@DIGEST, `digest`, `image_id`.
"""

from collections.abc import Callable
from pathlib import Path

from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.image_build import image_index
from ngc_paddle.release.registry import served_platforms
from ngc_paddle.release.stages.push import push_tag
from ngc_paddle.release.state_file import State

NAME = "candidate"


def tag(image: str, registry: str) -> str:
    """REGISTRY/REPO:RELEASE-FLAVOR-candidate for the local image REPO:RELEASE-FLAVOR."""
    repository, release_tag = image.split(":", 1)
    return f"{registry}/{repository}:{release_tag}-candidate"


def push(state: State, flavor: str, image: str, registry: str, say: Callable[[str], None]) -> str:
    """Push the candidate; the reference the gates run: REGISTRY/REPO@sha256:..."""
    target = tag(image, registry)
    pushed = push_tag(state, flavor, NAME, image, target, say)
    return f"{target.rsplit(':', 1)[0]}@{pushed}"


class IndexMismatch(NgcPaddleError):
    """The registry's index of a candidate holds other platform images than the build folded (exit 2)."""


def built_platforms(record: Path) -> dict[str, str]:
    """Each platform's manifest digest as the build folded them into the flavor's index (image_index.RECORD)."""
    platforms = image_index.recorded_platforms(record)
    if platforms is None:
        raise IndexMismatch(f"{record}: no record of the flavor's image index; fix: build the flavor again (make "
                            "image writes it)")
    return platforms


def platform_refs(state: State, flavor: str, ref: str, record: Path) -> dict[str, str]:
    """REGISTRY/REPO@sha256:... of each platform's manifest in the candidate index `ref`, as the registry serves it;
    they must be the images the build folded (`record`), else one line. Kept in the candidate's state entry."""
    served = served_platforms(ref) or {}
    built = built_platforms(record)
    if served != built:
        differ = ", ".join(f"{p} served {served.get(p, 'nothing')}, built {built.get(p, 'nothing')}"
                           for p in sorted({*served, *built}) if served.get(p) != built.get(p))
        raise IndexMismatch(f"{ref}: the registry's index is not the one built ({differ}); fix: rerun the release "
                            f"(the image was rebuilt, or something else pushed to {ref.split('/', 1)[0]})")
    entry = state.data[flavor][NAME]
    state.record(flavor, NAME, entry["key"], entry["status"], entry["detail"],
                 **{k: v for k, v in entry.items() if k not in ("key", "status", "detail", "finished",
                                                               "platform_digests")},
                 platform_digests=served)
    repository = ref.rsplit("@", 1)[0]
    return {platform: f"{repository}@{digest}" for platform, digest in served.items()}
