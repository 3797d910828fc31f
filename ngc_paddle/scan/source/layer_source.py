"""Where the scan reads an image: its config and each layer on its own, from a local registry (or a docker save).

The long form: docs/design-notes.md, section `ngc_paddle/scan/source/layer_source.py`.
"""

import hashlib
import io
import json
import os
import re
import tarfile
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ngc_paddle import engine
from ngc_paddle.host_errors import NgcPaddleError, ToolchainError
from ngc_paddle.scan.source import platform_choice
from ngc_paddle.scan.source.image_release import image_platform
from ngc_paddle.scan.source.layer_tar import layer_tar
from ngc_paddle.scan.source.saved_image import ImageConfig, Layer, SavedImage, image_layers, save

REGISTRY_ENV = "NGC_PADDLE_SCAN_REGISTRY"
DEFAULT_REGISTRY = "127.0.0.1:5000"
REPOSITORY = "ngc-paddle-scan"  # where the gate's copies of scanned images live in that registry
MANIFEST_TYPES = ("application/vnd.oci.image.manifest.v1+json", "application/vnd.oci.image.index.v1+json",
                  "application/vnd.docker.distribution.manifest.v2+json",
                  "application/vnd.docker.distribution.manifest.list.v2+json")
MAX_DOCUMENT = 4 * 1024 * 1024  # a manifest or config is a few kB
TIMEOUT_S = 60
PUSHED = re.compile(r"digest: (sha256:[0-9a-f]{64})")


class DigestReader(io.RawIOBase):
    """Reads a blob and checks, once it is read to its end, that it is the blob its digest names."""

    def __init__(self, stream: IO[bytes], digest: str, where: str) -> None:
        self._stream, self._digest, self._where = stream, digest, where
        self._hash = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self._hash.update(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def finish(self) -> None:
        """Read what is left (a tar's end blocks, gzip's trailer) and check the digest."""
        while self.read(1 << 20):
            pass
        found = "sha256:" + self._hash.hexdigest()
        if found != self._digest:
            raise NgcPaddleError(f"{self._where}: the blob read is {found[:19]}, not {self._digest[:19]}; fix: scan "
                                 "again (the registry's storage may be damaged)")


class PushedImage:
    """An image, or an index of several platforms, pushed once to the gate's registry: each platform's manifest
    digest (the index's entries; a single image's own platform), read from there by digest."""

    def __init__(self, image: str, registry: str) -> None:
        self.image, self.registry = image, registry
        image_id = engine.image_id(image)
        if image_id is None:
            raise NgcPaddleError(f"image {image!r} not found; fix: build it (make image) or name a local image")
        engine.ensure_registry(registry)
        target = f"{registry}/{REPOSITORY}:{image_id.removeprefix('sha256:')[:32]}"
        engine.tag(image, target)
        try:
            proc = engine.push(target)  # an index's tag pushes every platform it holds
        finally:
            engine.untag(target)
        found = PUSHED.findall(proc.stdout)
        if proc.returncode != 0 or not found:
            tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["no output"]
            raise ToolchainError(f"docker push {target} failed ({tail[0][:200]}); fix: check the registry {registry}, "
                                 f"or set {REGISTRY_ENV}=save to scan a docker save instead")
        self.digest = found[-1]
        document = json.loads(self.manifest(self.digest))
        self.index = "manifests" in document
        if self.index:
            self.platforms = platform_choice.index_platforms(document)
        else:
            config = json.loads(self.blob(document["config"]["digest"], MAX_DOCUMENT))
            self.platforms = {image_platform(config) or "unknown": self.digest}

    def url(self, kind: str, ref: str) -> str:
        return f"http://{self.registry}/v2/{REPOSITORY}/{kind}/{ref}"

    def get(self, url: str, accept: str | None = None):
        request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
        try:
            return urllib.request.urlopen(request, timeout=TIMEOUT_S)
        except (urllib.error.URLError, OSError) as exc:
            raise ToolchainError(f"registry {self.registry}: GET {url.split('/v2/', 1)[-1][:80]} failed ({exc}); "
                                 f"fix: check the registry, or set {REGISTRY_ENV}=save") from None

    def blob(self, digest: str, limit: int) -> bytes:
        with self.get(self.url("blobs", digest)) as resp:
            data = resp.read(limit + 1)
        if len(data) > limit or "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            raise ToolchainError(f"registry {self.registry}: blob {digest[:19]} is not what its digest names; fix: "
                                 f"check the registry, or set {REGISTRY_ENV}=save")
        return data

    def manifest(self, digest: str) -> bytes:
        with self.get(self.url("manifests", digest), ", ".join(MANIFEST_TYPES)) as resp:
            data = resp.read(MAX_DOCUMENT + 1)
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            raise ToolchainError(f"registry {self.registry}: manifest {digest[:19]} is not what its digest names; "
                                 f"fix: check the registry, or set {REGISTRY_ENV}=save")
        return data


class RegistryImage(ImageConfig):
    """One platform's image of a pushed image: its config, and each layer read on its own by digest."""

    def __init__(self, pushed: PushedImage, platform: str, say=print) -> None:
        self.pushed, self.image, self.registry = pushed, pushed.image, pushed.registry
        self.digest = pushed.platforms[platform]
        self.reference = f"{pushed.registry}/{REPOSITORY}@{self.digest}"  # what trivy scans: the very same image
        manifest = json.loads(pushed.manifest(self.digest))
        if "manifests" in manifest:
            raise NgcPaddleError(f"{self.image}: its {platform} entry is itself an index; fix: scan an image built by "
                                 "'ngc-paddle build'")
        self.config = json.loads(pushed.blob(manifest["config"]["digest"], MAX_DOCUMENT))
        blobs = manifest.get("layers") or []
        self.layers = image_layers(self.config, len(blobs))
        self.blobs = {layer.index: blob["digest"] for layer, blob in zip(self.layers, blobs, strict=True)}
        what = f"{platform} image" if pushed.index else "image"
        say(f"    layers from {self.registry} ({len(blobs)} blobs, {what} {self.digest[:19]})")

    @contextmanager
    def open_layer(self, layer: Layer) -> Iterator[tarfile.TarFile]:
        digest = self.blobs[layer.index]
        with self.pushed.get(self.pushed.url("blobs", digest)) as resp:
            blob = DigestReader(resp, digest, f"{self.image} {layer.where}")
            with layer_tar(blob, f"{self.image} {layer.where}") as tar:
                yield tar
            blob.finish()


def registry_for_scan() -> str | None:
    """The registry the gate reads layers through (None: docker save)."""
    value = os.environ.get(REGISTRY_ENV, DEFAULT_REGISTRY).strip()
    return None if value in ("", "save", "none") else value


class OpenedImage:
    """An image opened for the scan once for all its platforms: an index pushed to the registry (each platform read
    by its own manifest digest), or a single image already read (pushed, or saved)."""

    def __init__(self, image: str, how: str, pushed: PushedImage | None = None,
                 single: RegistryImage | SavedImage | None = None) -> None:
        self.image, self.how, self.pushed, self.single = image, how, pushed, single
        self.seconds = 0.0  # how long opening it took (the push, or a single image's save): the scan's fetch phase

    @property
    def index(self) -> bool:
        """Whether the image is an index (its platforms are scanned each on its own)."""
        return self.single is None

    @property
    def platforms(self) -> list[str]:
        if self.single is None:
            return list(self.pushed.platforms)
        return [image_platform(self.single.config) or "unknown"]

    def choose(self, wanted: Sequence[str]) -> list[str]:
        """The platforms to scan: each of an index's, or those `wanted` names (bad input where it has none)."""
        return platform_choice.choose(self.image, self.platforms, wanted, self.index)

    def one(self, wanted: str | None) -> str:
        """The one platform to read: `wanted`, or a single image's own; an index without `wanted` is bad input."""
        chosen = self.choose([wanted] if wanted else [])
        if len(chosen) > 1:
            raise AnIndex(self)
        return chosen[0]

    def source(self, platform: str, say=print) -> RegistryImage | SavedImage:
        """The image of one of its platforms (one of `platforms`)."""
        return self.single if self.single is not None else RegistryImage(self.pushed, platform, say)


class AnIndex(NgcPaddleError):
    """open_image of an index without a platform: it is several images, and none is picked silently. It carries the
    index as pushed, so that a caller scanning each platform (scan/per_platform.py) does not push it again."""

    def __init__(self, opened: OpenedImage) -> None:
        super().__init__(f"{opened.image}: is an index of {', '.join(opened.platforms)}; fix: scan it with "
                         "'ngc-paddle scan' (each platform on its own), or name one of its platforms")
        self.opened = opened


def open_image(image: str, work: Path, say=print, platform: str | None = None
               ) -> tuple[RegistryImage | SavedImage, str]:
    """The image to scan, read through the registry where one answers or can be started, else saved; with how. An
    index needs `platform` (the one of its images to read; AnIndex without it): none is picked silently. A saved
    archive of an index is refused (platform_choice.refuse_index)."""
    registry = registry_for_scan()
    if registry is not None:
        try:
            pushed = PushedImage(image, registry)
        except ToolchainError as exc:
            say(f"    no layer registry ({exc}); saving the image instead")
        else:
            how = f"registry {registry}"
            if pushed.index:
                opened = OpenedImage(image, how, pushed=pushed)
                return opened.source(opened.one(platform), say), how
            single = RegistryImage(pushed, next(iter(pushed.platforms)), say)
            OpenedImage(image, how, single=single).one(platform)  # a single image of another platform: bad input
            return single, how
    saved = SavedImage(save(image, work / "image.tar"))
    platform_choice.refuse_index(saved.path, image, REGISTRY_ENV)
    OpenedImage(image, "docker save", single=saved).one(platform)
    return saved, "docker save"
