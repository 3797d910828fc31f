"""Release stage `push`: the gated image to the registry, and the digest the registry then serves checked.

Inputs (resume key): the image id and the registry. An unchanged key is skipped only while the
  registry still serves the recorded digest (`docker manifest inspect`); otherwise it pushes again.
Run: after every requested flavor passed its gates (the pipeline's all-or-nothing decision): a local
  registry (127.0.0.1) is started first (toolchain/ensure-registry.sh); `docker tag` + `docker push`,
  then the served digest read back through the docker CLI (its credentials and TLS settings).
Report: `--> push TARGET`, `    pushed TARGET@DIGEST (the registry serves the same digest)` or
  `--> push TARGET: already there (DIGEST), skipped`; state.json `push`: key, detail TARGET@DIGEST,
  `digest`, `image_id`; a refused push is recorded as failed and raised (a missing login: exit 2).
  Notes: the image digests table (an earlier image's digest is named as what the registry keeps).
"""

from collections.abc import Callable

from ngc_paddle import engine
from ngc_paddle.errors import NgcPaddleError
from ngc_paddle.release.registry import push_and_verify, served_digest
from ngc_paddle.release.stages import digest
from ngc_paddle.release.state_file import State

NAME = "push"


def ensure_registry(registry: str) -> None:
    """Start the local registry when the target is one on this host; a remote one is the caller's."""
    engine.ensure_registry(registry)


def push(state: State, flavor: str, image: str, registry: str, say: Callable[[str], None]) -> str:
    """Push one flavor's image (unless the registry already serves it) and return the served digest."""
    repository, tag = image.split(":", 1)
    target = f"{registry}/{repository}:{tag}"
    image_id = engine.image_id(image)
    key = digest(image_id, registry)
    previous = state.done(flavor, NAME, key)
    if previous and served_digest(target) == previous["digest"]:
        say(f"--> push {target}: already there ({previous['digest'][:19]}), skipped")
        return previous["digest"]
    engine.tag(image, target)
    say(f"--> push {target}")
    try:
        pushed = push_and_verify(target)
    except NgcPaddleError as exc:
        state.record(flavor, NAME, key, "failed", str(exc), image_id=image_id)
        raise
    state.record(flavor, NAME, key, "passed", f"{target}@{pushed}", digest=pushed, image_id=image_id)
    say(f"    pushed {target}@{pushed} (the registry serves the same digest)")
    return pushed
