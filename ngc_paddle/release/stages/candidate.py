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
