"""A layer blob (gzip-compressed or plain tar) opened as a tar, read forward only, entry by entry.

Why its own module: both ways the gate reads an image's layers (saved_image: inside a `docker save` archive;
layer_source: from a registry by digest) open each blob the same way; saved_image must not import the
registry reader, which builds on it.
"""

import io
import tarfile
from typing import IO

from isal import igzip

from ngc_paddle.host_errors import NgcPaddleError

GZIP_MAGIC, ZSTD_MAGIC = b"\x1f\x8b", b"\x28\xb5\x2f\xfd"


class ForwardReader(io.RawIOBase):
    """A read-only stream that can seek forward (by reading and dropping) but never back: what tarfile's random
    access mode needs to skip the contents nobody reads, over a stream that cannot seek (a gzip or HTTP body)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream, self._pos = stream, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self._pos += len(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        target = offset if whence == io.SEEK_SET else self._pos + offset if whence == io.SEEK_CUR else None
        if target is None or target < self._pos:
            raise io.UnsupportedOperation("a layer stream only seeks forward")
        while self._pos < target:
            if not self.read(min(target - self._pos, 1 << 20)):
                break
        return self._pos


def layer_tar(blob: IO[bytes], where: str) -> tarfile.TarFile:
    """A layer blob (gzip-compressed or plain tar) opened for reading entry by entry, forward only."""
    buffered = io.BufferedReader(blob, 1 << 20)  # type: ignore[arg-type]
    magic = buffered.peek(4)[:4]
    if magic.startswith(GZIP_MAGIC):
        stream: IO[bytes] = igzip.IGzipFile(fileobj=buffered, mode="rb")  # ISA-L: twice zlib's speed here
    elif magic == ZSTD_MAGIC:
        raise NgcPaddleError(f"{where}: a zstd-compressed layer, which the gate cannot read; fix: build with gzip "
                             "layers (the default) or set NGC_PADDLE_SCAN_REGISTRY=save")
    else:
        stream = buffered
    try:
        return tarfile.open(fileobj=ForwardReader(stream), mode="r:")  # type: ignore[arg-type]
    except tarfile.TarError as exc:
        raise NgcPaddleError(f"{where}: not a layer tar ({exc}); fix: rebuild the image") from None
