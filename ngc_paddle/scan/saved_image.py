"""Read an image as `docker save` writes it: its config and every layer, one after the other.

Why: the security checks must see every layer, not only the final filesystem, so that a file
added in one layer and deleted in a later one is still found. Layers are streamed (tarfile "r|")
so a multi-GB image is read once without unpacking it. Each layer is attributed to the ngc-paddle
build layer that made it, from the image history (LAYER_SPEC / APT_* build arguments, COPY steps).
"""

import json
import re
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ngc_paddle.errors import NgcPaddleError


@dataclass
class Layer:
    index: int
    name: str  # ngc-paddle layer (base, os, cuda, dali, tensorrt, paddle, suite) or "unknown"
    created_by: str


@dataclass
class Entry:
    layer: Layer
    path: str  # absolute, normalised
    mode: int
    size: int
    type: str  # file | dir | symlink | whiteout | opaque | other
    content: bytes | None  # for small regular files only

    def hides(self, path: str, layer_index: int) -> bool:
        """Whether this whiteout hides `path` as a layer below it had it.

        `.wh.NAME` removes NAME (and all under it); an opaque whiteout `.wh..wh..opq` removes
        everything the lower layers had under its folder (the OCI image spec's two kinds).
        """
        if self.type not in ("whiteout", "opaque") or layer_index >= self.layer.index:
            return False
        folder, name = self.path.rsplit("/", 1)
        if self.type == "opaque":
            return path.startswith(folder + "/")
        removed = f"{folder}/{name.removeprefix('.wh.')}"
        return path == removed or path.startswith(removed + "/")


def save(image: str, target: Path) -> Path:
    proc = subprocess.run(["docker", "image", "inspect", image], capture_output=True, text=True)
    if proc.returncode != 0:
        raise NgcPaddleError(f"image {image!r} not found; fix: build it (make image) or name a local image")
    out = subprocess.run(["docker", "save", "-o", str(target), image], capture_output=True, text=True)
    if out.returncode != 0:
        raise NgcPaddleError(f"docker save {image} failed: {out.stderr.strip()}")
    return target


def layer_name(created_by: str) -> str:
    spec = re.search(r'LAYER_SPEC=\{.*?"layer": "([a-z]+)"', created_by)
    if spec:
        return spec.group(1)
    if "APT_PACKAGES=" in created_by:
        return "os"
    if any(word in created_by for word in ("COPY ", "WORKDIR", "/opt/ngc-paddle", "useradd", "rm -rf /tmp/ngc")):
        return "suite"
    if "Imported from" in created_by or not created_by:
        return "base"
    return "unknown"


class SavedImage:
    def __init__(self, tar_path: Path) -> None:
        self.path = tar_path
        try:
            with tarfile.open(tar_path) as outer:
                manifest = json.load(outer.extractfile("manifest.json"))[0]
                self.config = json.load(outer.extractfile(manifest["Config"]))
        except (tarfile.TarError, KeyError, ValueError, TypeError) as exc:
            raise NgcPaddleError(f"{tar_path} is not an image saved by docker save ({exc}); "
                                 "fix: save it again") from exc
        self.layer_files: list[str] = manifest["Layers"]
        history = [h for h in self.config.get("history", []) if not h.get("empty_layer")]
        self.layers = [Layer(i, layer_name(h.get("created_by", "")), h.get("created_by", ""))
                       for i, h in enumerate(history[: len(self.layer_files)])]
        while len(self.layers) < len(self.layer_files):
            self.layers.append(Layer(len(self.layers), "unknown", ""))

    @property
    def env(self) -> dict[str, str]:
        pairs = (item.split("=", 1) for item in self.config.get("config", {}).get("Env") or [])
        return {k: v for k, v in pairs}

    @property
    def labels(self) -> dict[str, str]:
        return self.config.get("config", {}).get("Labels") or {}

    @property
    def user(self) -> str:
        return self.config.get("config", {}).get("User") or "root"

    def entries(self, content_limit: int = 256 * 1024, want_content=None) -> Iterator[Entry]:
        """Every entry of every layer, bottom to top; small files carry their content when wanted.

        Layers are read in the order of the image's manifest, not the order `docker save` archived
        them in (which follows layer hashes): a later layer must come later, or an older dpkg status
        or a whiteout read out of turn hides what the upper layers installed. Each layer itself is
        streamed.
        """
        with tarfile.open(self.path) as outer:  # random access: the outer archive has one member per layer
            for layer, name in zip(self.layers, self.layer_files, strict=True):
                with tarfile.open(fileobj=outer.extractfile(outer.getmember(name)), mode="r|") as inner:
                    for item in inner:
                        yield self._entry(layer, inner, item, content_limit, want_content)

    @staticmethod
    def _entry(layer: Layer, inner: tarfile.TarFile, item: tarfile.TarInfo, limit: int, want) -> Entry:
        path = "/" + item.name.lstrip("./")
        base = path.rsplit("/", 1)[-1]
        if base == ".wh..wh..opq":
            kind = "opaque"
        elif base.startswith(".wh."):
            kind = "whiteout"
        elif item.isreg():
            kind = "file"
        elif item.isdir():
            kind = "dir"
        elif item.issym():
            kind = "symlink"
        else:
            kind = "other"
        content = None
        if kind == "file" and item.size <= limit and (want is None or want(path, item.size)):
            handle = inner.extractfile(item)
            content = handle.read() if handle else None
        return Entry(layer, path, item.mode, item.size, kind, content)
