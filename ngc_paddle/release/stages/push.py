"""Release stage `push`: the release tag moved to the gated candidate's digest, and the digest the registry serves
then checked.

Inputs (resume key): the image id and the registry. An unchanged key is skipped only while the
  registry still serves the recorded digest (`docker manifest inspect`); otherwise it pushes again.
Run: after every requested flavor passed its gates (the pipeline's all-or-nothing decision): a local
  registry (127.0.0.1) is started first (toolchain/ensure-registry.sh); `docker tag` + `docker push`,
  then the served digest read back through the docker CLI (its credentials and TLS settings). The
  candidate stage pushed the same image under its candidate tag before the gates ran by that digest:
  the release tag must come out on that very digest (nothing unproven carries a release tag), else
  the push is refused (exit 1).
Report: `--> push TARGET`, `    pushed TARGET@DIGEST (the registry serves the same digest)` or
  `--> push TARGET: already there (DIGEST), skipped`; state.json `push`: key, detail TARGET@DIGEST,
  `digest`, `image_id`; a refused push is recorded as failed and raised (a missing login: exit 2).
  Notes: the image digests table (an earlier image's digest is named as what the registry keeps).
"""

from collections.abc import Callable

from ngc_paddle import engine
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.registry import DigestMismatch, push_and_verify, served_digest
from ngc_paddle.release.stages import digest
from ngc_paddle.release.state_file import State

NAME = "push"


def ensure_registry(registry: str) -> None:
    """Start the local registry when the target is one on this host; a remote one is the caller's."""
    engine.ensure_registry(registry)


def push(state: State, flavor: str, image: str, registry: str, say: Callable[[str], None],
         gated: str | None = None) -> str:
    """Move the flavor's release tag to its image (unless the registry already serves it there) and return the
    served digest, which must be `gated` (the digest the gates ran) when given."""
    repository, tag = image.split(":", 1)
    pushed = push_tag(state, flavor, NAME, image, f"{registry}/{repository}:{tag}", say)
    if gated and pushed != gated:
        state.record(flavor, NAME, "", "failed", f"{registry}/{repository}:{tag} came out as {pushed}, not the gated "
                     f"{gated}", image_id=engine.image_id(image) or "")
        raise DigestMismatch(f"the release tag {registry}/{repository}:{tag} points at {pushed}, not at the digest "
                             f"the gates ran ({gated}); fix: rerun the release (the image changed since its gates)")
    return pushed


def push_tag(state: State, flavor: str, stage: str, image: str, target: str, say: Callable[[str], None]) -> str:
    """Tag and push `image` as `target`, recorded as `stage` of the flavor; the digest the registry serves."""
    image_id = engine.image_id(image)
    key = digest(image_id, target.split("/", 1)[0])
    previous = state.done(flavor, stage, key)
    if previous and served_digest(target) == previous["digest"]:
        say(f"--> push {target}: already there ({previous['digest'][:19]}), skipped")
        return previous["digest"]
    engine.tag(image, target)
    say(f"--> push {target}")
    try:
        pushed = push_and_verify(target)
    except NgcPaddleError as exc:
        state.record(flavor, stage, key, "failed", str(exc), image_id=image_id)
        raise
    state.record(flavor, stage, key, "passed", f"{target}@{pushed}", digest=pushed, image_id=image_id)
    say(f"    pushed {target}@{pushed} (the registry serves the same digest)")
    return pushed
