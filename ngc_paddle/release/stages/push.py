"""Release stage `push`: the release tag moved to the gated candidate's digest, and the digest the registry serves
then checked.

The long form: docs/design-notes.md, section `ngc_paddle/release/stages/push.py`.
"""

from collections.abc import Callable

from ngc_paddle import engine
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.registry import DigestMismatch, push_and_verify, served_platforms, serves
from ngc_paddle.release.stages import digest
from ngc_paddle.release.state_file import State

NAME = "push"


def ensure_registry(registry: str) -> None:
    """Start the local registry when the target is one on this host; a remote one is the caller's."""
    engine.ensure_registry(registry)


def push(state: State, flavor: str, image: str, registry: str, say: Callable[[str], None],
         gated: str | None = None, platforms: dict[str, str] | None = None) -> str:
    """Move the flavor's release tag to its image (unless the registry already serves it there) and return the
    served digest, which must be `gated` (the digest the gates ran) when given. An image index: the tag must serve
    `platforms` (each platform's gated manifest digest), which its state entry then keeps."""
    repository, tag = image.split(":", 1)
    target = f"{registry}/{repository}:{tag}"
    pushed = push_tag(state, flavor, NAME, image, target, say)
    served = served_platforms(target) if platforms else None
    if (gated and pushed != gated) or served != platforms:
        got = f"{pushed} ({served})" if platforms else pushed
        state.record(flavor, NAME, "", "failed", f"{target} came out as {got}, not the gated {gated} ({platforms})",
                     image_id=engine.image_id(image) or "")
        raise DigestMismatch(f"the release tag {target} points at {got}, not at the digest the gates ran ({gated}"
                             f"{f' {platforms}' if platforms else ''}); fix: rerun the release (the image changed "
                             "since its gates)")
    if platforms:
        entry = state.data[flavor][NAME]
        state.record(flavor, NAME, entry["key"], entry["status"], entry["detail"], digest=entry["digest"],
                     image_id=entry.get("image_id"), platform_digests=platforms)
    return pushed


def push_tag(state: State, flavor: str, stage: str, image: str, target: str, say: Callable[[str], None]) -> str:
    """Tag and push `image` as `target`, recorded as `stage` of the flavor; the digest the registry serves."""
    image_id = engine.image_id(image)
    key = digest(image_id, target.split("/", 1)[0])
    previous = state.done(flavor, stage, key)
    if previous and serves(target, previous["digest"]):
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
