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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ngc_paddle import engine
from ngc_paddle.host_errors import NgcPaddleError, ToolchainError
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


class RegistryImage(ImageConfig):
    """An image pushed to a registry: its config, and each layer read on its own by digest."""

    def __init__(self, image: str, registry: str, say=print) -> None:
        self.image, self.registry = image, registry
        image_id = engine.image_id(image)
        if image_id is None:
            raise NgcPaddleError(f"image {image!r} not found; fix: build it (make image) or name a local image")
        engine.ensure_registry(registry)
        target = f"{registry}/{REPOSITORY}:{image_id.removeprefix('sha256:')[:32]}"
        engine.tag(image, target)
        try:
            proc = engine.push(target)
        finally:
            engine.untag(target)
        found = PUSHED.findall(proc.stdout)
        if proc.returncode != 0 or not found:
            tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["no output"]
            raise ToolchainError(f"docker push {target} failed ({tail[0][:200]}); fix: check the registry {registry}, "
                                 f"or set {REGISTRY_ENV}=save to scan a docker save instead")
        self.digest = found[-1]
        self.reference = f"{registry}/{REPOSITORY}@{self.digest}"  # what trivy scans: the very same image
        manifest = self._manifest(self.digest)
        self.config = json.loads(self._blob(manifest["config"]["digest"], MAX_DOCUMENT))
        blobs = manifest.get("layers") or []
        self.layers = image_layers(self.config, len(blobs))
        self.blobs = {layer.index: blob["digest"] for layer, blob in zip(self.layers, blobs, strict=True)}
        say(f"    layers from {registry} ({len(blobs)} blobs, image {self.digest[:19]})")

    def _url(self, kind: str, ref: str) -> str:
        return f"http://{self.registry}/v2/{REPOSITORY}/{kind}/{ref}"

    def _get(self, url: str, accept: str | None = None):
        request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
        try:
            return urllib.request.urlopen(request, timeout=TIMEOUT_S)
        except (urllib.error.URLError, OSError) as exc:
            raise ToolchainError(f"registry {self.registry}: GET {url.split('/v2/', 1)[-1][:80]} failed ({exc}); "
                                 f"fix: check the registry, or set {REGISTRY_ENV}=save") from None

    def _blob(self, digest: str, limit: int) -> bytes:
        with self._get(self._url("blobs", digest)) as resp:
            data = resp.read(limit + 1)
        if len(data) > limit or "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            raise ToolchainError(f"registry {self.registry}: blob {digest[:19]} is not what its digest names; fix: "
                                 f"check the registry, or set {REGISTRY_ENV}=save")
        return data

    def _manifest(self, digest: str) -> dict:
        manifest = json.loads(self._blob_manifest(digest))
        if "manifests" in manifest:  # an index: the linux/amd64 image of it
            entry = next((m for m in manifest["manifests"]
                          if (m.get("platform") or {}).get("architecture") in ("amd64", None)
                          and (m.get("platform") or {}).get("os", "linux") == "linux"), None)
            if entry is None:
                raise NgcPaddleError(f"{self.image}: no linux/amd64 image in its index; fix: scan a single-platform "
                                     "image")
            manifest = json.loads(self._blob_manifest(entry["digest"]))
        return manifest

    def _blob_manifest(self, digest: str) -> bytes:
        with self._get(self._url("manifests", digest), ", ".join(MANIFEST_TYPES)) as resp:
            data = resp.read(MAX_DOCUMENT + 1)
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            raise ToolchainError(f"registry {self.registry}: manifest {digest[:19]} is not what its digest names; "
                                 f"fix: check the registry, or set {REGISTRY_ENV}=save")
        return data

    @contextmanager
    def open_layer(self, layer: Layer) -> Iterator[tarfile.TarFile]:
        digest = self.blobs[layer.index]
        with self._get(self._url("blobs", digest)) as resp:
            blob = DigestReader(resp, digest, f"{self.image} {layer.where}")
            with layer_tar(blob, f"{self.image} {layer.where}") as tar:
                yield tar
            blob.finish()


def registry_for_scan() -> str | None:
    """The registry the gate reads layers through (None: docker save)."""
    value = os.environ.get(REGISTRY_ENV, DEFAULT_REGISTRY).strip()
    return None if value in ("", "save", "none") else value


def open_image(image: str, work: Path, say=print) -> tuple[RegistryImage | SavedImage, str]:
    """The image to scan, read through the registry where one answers or can be started, else saved; with how."""
    registry = registry_for_scan()
    if registry is not None:
        try:
            return RegistryImage(image, registry, say), f"registry {registry}"
        except ToolchainError as exc:
            say(f"    no layer registry ({exc}); saving the image instead")
    return SavedImage(save(image, work / "image.tar")), "docker save"
