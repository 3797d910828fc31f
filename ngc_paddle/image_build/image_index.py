"""One tag for a flavor's platforms: each platform's image, built and checked on its own, folded into an OCI index.

Why written here: no tool the engine ships writes an index into the local image store from local images
(`docker buildx imagetools create` and `docker manifest create` work on registries only). BuildKit does, from a build
of several platforms whose only step is `FROM` each platform's image: without provenance or SBOM, each entry of the
index it writes is that image's own manifest, byte for byte (the same digest), so nothing is rebuilt or changed.
The local store must be containerd's (toolchain/ensure-engine.sh configures it). The long form: docs/building.md,
"One tag, several platforms".
"""

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.host_errors import BuildError
from ngc_paddle.platforms import platform_named


def dockerfile(platforms: Sequence[str]) -> str:
    """The index build's Dockerfile: one stage per platform taken whole from its image (a named build context), the
    target platform's chosen by BuildKit's TARGETARCH (which is dpkg's name for amd64 and arm64)."""
    arches = [platform_named(p).debian_arch for p in platforms]
    return "".join(f"FROM platform-{arch} AS image-{arch}\n" for arch in arches) + "FROM image-${TARGETARCH}\n"


def fold_command(images: Mapping[str, str], tags: Sequence[str], metadata: Path, context: Path) -> list[str]:
    """`docker buildx build` writing the index of `images` (platform -> a local image holding it: its own tag, or an
    index with that platform) under every one of `tags`; the Dockerfile comes on stdin."""
    cmd = ["buildx", "build", "--platform", ",".join(images), "--provenance=false", "--sbom=false", "--pull=false",
           "--progress", "quiet", "--metadata-file", str(metadata), "-f", "-"]
    for platform, image in images.items():
        cmd += ["--build-context", f"platform-{platform_named(platform).debian_arch}=docker-image://{image}"]
    return [*cmd, "--output", f'type=image,"name={",".join(tags)}"', str(context)]


RECORD = "index.json"  # in the default platform's reports folder: the index's digest and each platform's image


def fold(images: Mapping[str, str], tags: Sequence[str], reports_dir: Path, say: Callable[[str], None] = print) -> str:
    """Tag `tags` as the index of `images`' platforms and record it in `reports_dir`; returns the index's digest. A
    failure is one line naming the images and the fix; the tags then stay where they were (BuildKit names them only
    once the index is written)."""
    platform_ids = {platform: platform_image(engine.image_id(image) or "", platform, reports_dir)
                    for platform, image in images.items()}
    listed = ", ".join(f"{platform} ({image})" for platform, image in images.items())
    say(f"==> index: {tags[0]} = {listed}")
    with tempfile.TemporaryDirectory(prefix="ngc-index-") as work:
        context, metadata = Path(work) / "context", Path(work) / "metadata.json"
        context.mkdir()
        with open(Path(work) / "Dockerfile", "w+") as stdin:
            stdin.write(dockerfile(list(images)))
            stdin.seek(0)
            proc = engine.docker(*fold_command(images, tags, metadata, context), check=False, stdin=stdin)
        digest = _digest(metadata) if proc.returncode == 0 else None
    if digest is None:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise BuildError(f"folding {listed} into {tags[0]} failed ({tail[0][:300]}); fix: check that each image is "
                         "there (make image) and that the engine keeps images in the containerd store "
                         "(bash toolchain/ensure-engine.sh)")
    found = engine.image_id(tags[0])
    if found != digest:
        raise BuildError(f"{tags[0]} is {found}, not the index just written ({digest}); fix: build again (another "
                         "build moved the tag meanwhile)")
    reports_dir.mkdir(parents=True, exist_ok=True)
    (reports_dir / RECORD).write_text(json.dumps({"index": digest, "tags": list(tags), "platforms": platform_ids},
                                                 indent=2) + "\n")
    say(f"==> tagged {', '.join(tags)}: image index {digest[:19]} of {', '.join(images)}")
    return digest


def _digest(metadata: Path) -> str | None:
    """The written index's digest, from BuildKit's metadata file (None when it wrote none)."""
    try:
        return json.loads(metadata.read_text()).get("containerimage.digest")
    except (OSError, ValueError):
        return None


def _read(record: Path) -> dict:
    """What `record` (RECORD) holds as written by fold ({} when it is missing or is not such a record)."""
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recorded_index(record: Path) -> str | None:
    """The digest of the index a build recorded in `record` (RECORD), None when there is none."""
    index = _read(record).get("index")
    return index if isinstance(index, str) else None


def recorded_platforms(record: Path) -> dict[str, str] | None:
    """Each platform's image (manifest digest) in the index a build recorded in `record` (RECORD), None when there
    is no such record."""
    platforms = _read(record).get("platforms")
    if not isinstance(platforms, dict) or not all(isinstance(d, str) for d in platforms.values()):
        return None
    return platforms


def platform_image(image_id: str, platform: str, reports_dir: Path) -> str:
    """The image of `platform` that `image_id` means: the platform's entry where `image_id` is the index recorded in
    `reports_dir` (the engine here inspects an index as the host's platform, under the index's digest), else
    `image_id` itself."""
    record = reports_dir / RECORD
    if recorded_index(record) != image_id:
        return image_id
    entry = (recorded_platforms(record) or {}).get(platform)
    return entry if entry else image_id
