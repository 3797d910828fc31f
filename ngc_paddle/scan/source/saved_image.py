"""Read an image as `docker save` writes it: its config and every layer, one after the other.

Why: the security checks must see every layer, not only the final filesystem, so that a file
added in one layer and deleted in a later one is still found. Each layer is read in place inside
the saved archive (docker save stores layers as plain tar), headers in order, seeking past the
contents no check wants, so a multi-GB image is read once without unpacking or copying it.
Each layer is attributed to the ngc-paddle build layer that made it, from the image history
(LAYER_SPEC / APT_* build arguments, COPY steps).
"""

import json
import re
import shutil
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ngc_paddle import engine
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.layers import BASE_LAYER, LAYER_PATTERN, TOP_LAYER
from ngc_paddle.scan.source.layer_tar import layer_tar

BASE = "base"  # the name layer_names gives an image's imported first layer


@dataclass
class Layer:
    index: int
    name: str  # "base", an ngc-paddle layer (ngc_paddle.layers.LAYER_ORDER), a foreign step or "unknown"
    created_by: str
    diff_id: str = ""  # sha256:... of the uncompressed layer tar (the image config's rootfs.diff_ids)

    @property
    def where(self) -> str:
        """How a finding names the layer that introduced it."""
        return f"layer {self.index} ({self.name})"


@dataclass
class Entry:
    layer: Layer
    path: str  # absolute, normalised
    mode: int
    size: int
    type: str  # file | dir | symlink | whiteout | opaque | other
    content: bytes | None  # for small regular files only
    # A larger wanted file: read it in chunks before asking for the next entry (the layer is streamed).
    stream: IO[bytes] | None = None
    caps: bytes | None = None  # the security.capability extended attribute (a PAX header of the layer tar)
    uid: int = 0
    gid: int = 0
    link: str = ""  # a symlink's or hard link's target
    mtime: int = 0  # whole seconds, as the file system has it (a compiled module's header records its source's)

    def hides(self, path: str, layer_index: int) -> bool:
        """Whether this whiteout hides `path` as a layer below it had it.

        `.wh.NAME` removes NAME (and all under it); an opaque whiteout `.wh..wh..opq` removes
        everything the lower layers had under its folder (the OCI image spec's two kinds).
        """
        if self.type not in ("whiteout", "opaque") or layer_index >= self.layer.index:
            return False
        return whiteout_hides(self.type, self.path, path)


def whiteout_hides(kind: str, marker: str, path: str) -> bool:
    """Whether a later layer's whiteout (`kind` whiteout or opaque, at the path `marker`) removes `path` as a lower
    layer had it: `.wh.NAME` removes NAME and all under it, `.wh..wh..opq` all under its folder."""
    folder, name = marker.rsplit("/", 1)
    if kind == "opaque":
        return path.startswith(folder + "/")
    removed = f"{folder}/{name.removeprefix('.wh.')}"
    return path == removed or path.startswith(removed + "/")


def save(image: str, target: Path) -> Path:
    """`docker save` into `target`, refused up front (one line) when its disk cannot hold the image."""
    size = engine.image_size_or_none(image)
    if size is None:
        raise NgcPaddleError(f"image {image!r} not found; fix: build it (make image) or name a local image")
    free = shutil.disk_usage(target.parent).free
    if size * 1.05 > free:  # the tar is the uncompressed layers plus a little; a multi-GB save fails late otherwise
        raise NgcPaddleError(f"no room to save {image} in {target.parent}: it needs about {size / 1e9:.1f} GB, "
                             f"{free / 1e9:.1f} GB free; fix: free disk space or set TMPDIR to a larger disk")
    out = engine.save(image, target)
    if out.returncode != 0:
        raise NgcPaddleError(f"docker save {image} failed: {out.stderr.strip()}")
    return target


# How containerd and BuildKit store a file capability in a layer tar (GNU tar and libarchive too).
CAPABILITY_HEADER = "SCHILY.xattr.security.capability"
BUILD_ARGS = re.compile(r"^(?:RUN )?\|(\d+) ")
ARG_NAME = re.compile(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=")
SHELL_START = re.compile(r"\s(/\S*/(?:ba|da|z|a)?sh)\s")
# How a base image's one rootfs layer was made: `docker import`, our mmdebstrap base (layers/os/base.Dockerfile,
# `ADD rootfs.tar /`), or a Docker official image (`ADD file:<sha> in /`).
BASE_ROOTFS_STEP = re.compile(r"^(?:Imported from|ADD rootfs\.tar / |ADD file:[0-9a-f]+ in / )")


def split_build_args(created_by: str) -> tuple[list[tuple[str, str]], str]:
    """The build arguments BuildKit recorded for a RUN step ("RUN |2 A=1 B=x y /bin/sh -c cmd": 2 of them) and
    the command after them. Only those N are arguments: NAME=value text inside the command is not."""
    head = BUILD_ARGS.match(created_by)
    if not head:
        return [], created_by
    count, rest = int(head.group(1)), created_by[head.end():]
    starts = []
    for m in ARG_NAME.finditer(rest):
        if len(starts) == count:
            break
        if not starts and m.start() != 0:
            break
        starts.append(m)
    args = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(rest)
        args.append((m.group(1), rest[m.end():end].strip()))
    if not args:
        return [], rest
    last_name, last_value = args[-1]
    shell = SHELL_START.search(" " + last_value)
    command = last_value[shell.start(): ] if shell else ""
    if shell:
        args[-1] = (last_name, last_value[: shell.start()].strip())
    return args, command.strip()


def _ngc_layer(created_by: str) -> str | None:
    spec = re.search(rf'LAYER_SPEC=\{{.*?"layer": "({LAYER_PATTERN})"', created_by)
    if spec:
        return spec.group(1)
    if "APT_PACKAGES=" in created_by:
        return BASE_LAYER
    # A layer's own files (the os layer's etc.tar).
    copied = re.match(rf"(?:COPY|ADD) (?:--\S+ )*layers/({LAYER_PATTERN})/", created_by)
    if copied:
        return copied.group(1)
    if any(word in created_by for word in ("/opt/ngc-paddle", "rm -rf /tmp/ngc")):
        return TOP_LAYER
    return None


def step_text(created_by: str, width: int = 60) -> str:
    """A history step as people read it, short: the command without build arguments (they may hold secrets)
    or the shell prefix, e.g. "RUN cp /bin/bash /usr/bin/su && chmod 4755 /usr/bin/su"."""
    text = created_by.removesuffix(" # buildkit").strip()
    args, command = split_build_args(text)
    if args or BUILD_ARGS.match(text):
        text = "RUN " + command
    text = re.sub(r"^(RUN )?(/bin/sh|/bin/bash)( -o pipefail)? -c ", r"RUN ", text)
    text = re.sub(r"^/bin/sh -c #\(nop\)\s*", "", text)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def layer_names(history: list[str]) -> list[str]:
    """Name each layer: "base" or the ngc-paddle build layer that made it (ngc_paddle.layers.LAYER_ORDER)
    up to the last step of ours; above that (an image derived from ours, or a foreign one) the step itself."""
    ours = [_ngc_layer(h) for h in history]
    last_ours = max((i for i, name in enumerate(ours) if name), default=-1)
    names = []
    for i, created_by in enumerate(history):
        if i <= last_ours and ours[i]:
            names.append(ours[i])
        elif i == 0 and (not created_by or BASE_ROOTFS_STEP.match(created_by + " ")):
            names.append(BASE)
        elif i <= last_ours and any(w in created_by for w in ("COPY ", "WORKDIR")):
            names.append(TOP_LAYER)
        else:
            names.append(step_text(created_by) or "unknown")
    return names


def layer_name(created_by: str) -> str:
    """The name of one layer seen alone (see layer_names for a whole image)."""
    return layer_names([created_by])[0]


def image_layers(config: dict, count: int) -> list[Layer]:
    """The image's `count` layers, bottom first, each named by the history step that made it, with its diff id."""
    history = [h for h in config.get("history") or [] if isinstance(h, dict) and not h.get("empty_layer")]
    steps = [str(h.get("created_by", "")) for h in history[:count]]
    diff_ids = [str(d) for d in (config.get("rootfs") or {}).get("diff_ids") or []]
    layers = [Layer(i, name, step) for i, (name, step) in enumerate(zip(layer_names(steps), steps, strict=True))]
    while len(layers) < count:
        layers.append(Layer(len(layers), "unknown", ""))
    for layer, diff_id in zip(layers, diff_ids, strict=False):
        layer.diff_id = diff_id
    return layers


class ImageConfig:
    """What the image config says: ENV, labels, USER (the gate's config checks read these)."""

    config: dict

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


class SavedImage(ImageConfig):
    reference: str | None = None  # not in a registry: trivy reads the saved tar

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
        self.layers = image_layers(self.config, len(self.layer_files))

    @contextmanager
    def open_layer(self, layer: Layer) -> Iterator[tarfile.TarFile]:
        """One layer's tar, read in place inside the saved archive (the containerd image store saves layers
        gzip-compressed, as it stores them)."""
        with tarfile.open(self.path) as outer:
            blob = outer.extractfile(outer.getmember(self.layer_files[layer.index]))
            with layer_tar(blob, f"{self.path} {layer.where}") as inner:
                yield inner

    def entries(self, content_limit: int = 256 * 1024, want_content=None) -> Iterator[Entry]:
        """Every entry of every layer, bottom to top (in the order of the image's manifest, not of the archive);
        small files carry their content when wanted."""
        for layer in self.layers:
            with self.open_layer(layer) as inner:
                for item in inner:
                    yield entry_of(layer, inner, item, content_limit, want_content)


def entry_of(layer: Layer, inner: tarfile.TarFile, item: tarfile.TarInfo, limit: int = 256 * 1024,
             want=None) -> Entry:
    """One tar member of a layer as an Entry; a wanted small file's content is read, a larger one handed over
    as a stream to read before the next member."""
    name = item.name
    while name.startswith("./"):
        name = name[2:]
    path = "/" + name.lstrip("/")
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
    content, stream = None, None
    if kind == "file" and (want is None or want(path, item.size)):
        handle = inner.extractfile(item)
        if item.size <= limit:
            content = handle.read() if handle else None
        else:
            stream = handle  # read in chunks by the consumer, never whole (files of GBs)
    caps = item.pax_headers.get(CAPABILITY_HEADER)
    return Entry(layer, path, item.mode, item.size, kind, content, stream,
                 caps.encode("utf-8", "surrogateescape") if caps is not None else None, item.uid, item.gid,
                 item.linkname if item.issym() or item.islnk() else "", int(item.mtime))
