"""Write layers/os/etc.tar: the os layer's /etc/hosts and /etc/resolv.conf with fixed metadata.

Why: the base has neither file, so BuildKit (dockerd 20.10's) makes an empty stub of each for every RUN
step and removes it afterwards, leaving /etc stamped with the build time in every RUN layer. The os layer
ADDs this tar first, so the files exist; a tar rather than COPY because ADD keeps the tar's times (its
/etc entry too), while COPY stamps the folder it writes into with the build time. Every time in it is 0
and owner root: the same bytes, and the same layer, in every build. The contents are the files beside
this script (layers/os/etc/). Plain standard library; run it after changing them (a unit test checks
that the committed tar is what it writes):

    python layers/os/etc_tar.py
"""

import io
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = ("hosts", "resolv.conf")


def _info(name: str, kind: bytes, mode: int, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size = kind, mode, size
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "root", "root"
    return info


def tar_bytes(folder: Path = HERE / "etc") -> bytes:
    """The tar of /etc (the folder entry) and FILES from `folder`, in that order, all times 0."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        tar.addfile(_info("etc/", tarfile.DIRTYPE, 0o755))
        for name in FILES:
            data = (folder / name).read_bytes()
            tar.addfile(_info(f"etc/{name}", tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
    return out.getvalue()


if __name__ == "__main__":
    (HERE / "etc.tar").write_bytes(tar_bytes())
    sys.exit(0)
