"""Name the image a make target means, and refuse one that is not built, before `docker run` sees it.

Why: targets that run an image (perf-input, perf-overhead, perf-threads) used to fall back to a
`-cpu` tag that some releases do not have (23.01), and `docker run` on an image that was never built
tries to pull it from a registry, which fails far from the cause. One answer for every target: the
image given, else RELEASE/FLAVOR, else the newest release's default flavor, all checked against the
manifest; with --require-built, a missing image is one line saying how to build it (exit 2). The tag is
the release's (ngc_paddle.flavor: release_tags), never spelled here again.
"""

import argparse
import sys
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError


def resolve(image: str | None, release: str | None, flavor: str | None, root: Path) -> tuple[str, str]:
    """(image reference, the make command that builds it)."""
    if image:
        return image, "make image (or docker build it)"
    loaded = ResolvedRelease.load(root, release, folder=root / "releases")
    name = loaded.flavor_name(flavor)  # an unknown flavor is one line naming the ones there are
    return loaded.tags(name)[0], f"make image RELEASE={loaded.release} FLAVOR={name}"


def require_built(ref: str, how: str = "make image") -> None:
    """NgcPaddleError (one line, exit 2, naming `how` to build it) when the engine has no image `ref`."""
    if engine.image_id(ref) is None:
        raise NgcPaddleError(f"image {ref}: not built; fix: {how}")


def unbuilt_exit(ref: str) -> int | None:
    """For a script's main: None when the engine has `ref`; else its exit code, after the one error line."""
    try:
        require_built(ref)
    except NgcPaddleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ngc_paddle.image_ref", description=__doc__.splitlines()[0])
    p.add_argument("--image", default="")
    p.add_argument("--release", default="")
    p.add_argument("--flavor", default="")
    p.add_argument("--root", default=".")
    p.add_argument("--require-built", action="store_true", help="exit 2 when the engine has no such image")
    args = p.parse_args(argv)
    try:
        ref, how = resolve(args.image or None, args.release or None, args.flavor or None, Path(args.root))
        if args.require_built:
            require_built(ref, how)
    except NgcPaddleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(ref)
    return 0


if __name__ == "__main__":
    sys.exit(main())
