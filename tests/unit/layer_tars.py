"""Layer tars made in memory for the scan's unit tests: members with modes, capabilities and whiteouts."""

import io
import stat
import tarfile
from dataclasses import dataclass

from ngc_paddle.scan.checks.layer_facts import LayerFacts, scan_layer
from ngc_paddle.scan.source.saved_image import CAPABILITY_HEADER, Layer


@dataclass
class Member:
    path: str
    content: bytes | None = b""  # None: a folder
    mode: int = 0o644
    caps: bytes | None = None  # the security.capability value
    link: str = ""  # a symlink's target (a hard link's, with `type`)
    mtime: int = 0
    uid: int = 0
    gid: int = 0
    type: bytes = b""  # another tar entry type than the one the fields imply: tarfile.LNKTYPE, FIFOTYPE...


def layer_tar(members: list[Member]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for m in members:
            info = tarfile.TarInfo(m.path.lstrip("/"))
            info.mode, info.mtime, info.uid, info.gid = m.mode, m.mtime, m.uid, m.gid
            if m.caps is not None:
                info.pax_headers = {CAPABILITY_HEADER: m.caps.decode("utf-8", "surrogateescape")}
            if m.type:
                info.type, info.linkname = m.type, m.link
                tar.addfile(info)
            elif m.link:
                info.type, info.linkname = tarfile.SYMTYPE, m.link
                tar.addfile(info)
            elif m.content is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(m.content)
                tar.addfile(info, io.BytesIO(m.content))
    return out.getvalue()


def layer(index: int, name: str = "x") -> Layer:
    return Layer(index, name, f"RUN {name}", f"sha256:{index:064x}")


def facts(index: int, members: list[Member], name: str = "x") -> tuple[Layer, LayerFacts]:
    """The layer and what scan_layer gathers from a tar of `members`."""
    at = layer(index, name)
    with tarfile.open(fileobj=io.BytesIO(layer_tar(members)), mode="r:") as tar:
        return at, scan_layer(at, tar)


S_FILE, S_DIR = stat.S_IFREG, stat.S_IFDIR
