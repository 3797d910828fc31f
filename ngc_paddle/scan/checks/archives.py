"""Archives inside an image (.tar, .tar.gz, .tgz, .zip, .whl, .jar), searched with the same secret rules.

Why: a private key inside `/opt/backup.tar.gz` or a `.netrc` inside a `.zip` is in the image as much as one
lying in a folder, and no rule sees it through the compression. Each archive is opened with the standard
library (tarfile, zipfile) and every member is read through secret_patterns.StreamScan, as files in a layer
are; archives inside archives too, down to MAX_DEPTH. Everything is bounded, because the archive is
someone else's file: its own size (SPOOL_LIMIT), the members of one archive (MAX_MEMBERS), the bytes it
unpacks to (MAX_EXPANDED, nested ones included), and the time spent in it (MAX_SECONDS). An archive that
exceeds a bound is an `archive-bomb` finding; one that cannot be read (damaged, encrypted) is noted, not
a crash.
"""

import contextlib
import lzma
import shutil
import tarfile
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import IO

from ngc_common import secret_patterns as patterns

SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip", ".whl", ".jar")
MAX_DEPTH = 3  # an archive in an archive in an archive
MAX_MEMBERS = 100_000
MAX_EXPANDED = 2 * 1024 ** 3  # bytes unpacked from one top-level archive, nested ones included
MAX_SECONDS = 60.0
SPOOL_LIMIT = 1024 ** 3  # larger archives are noted, not opened
MEMORY_SPOOL = 32 * 1024 * 1024
READ_ERRORS = (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, lzma.LZMAError, EOFError,
               OSError, RuntimeError, NotImplementedError, ValueError, KeyError, UnicodeError)


class Bomb(Exception):
    """An archive past one of the bounds."""


def is_archive(path: str) -> bool:
    return path.lower().endswith(SUFFIXES)


@dataclass
class Found:
    """What one top-level archive holds: rule hits per member (`outer!inner`), and notes."""

    hits: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (member, rule, key digests)
    bomb: str = ""  # why it is a bomb ("" when it is not)
    unreadable: list[str] = field(default_factory=list)  # members or archives that could not be read, and why


@dataclass
class _Budget:
    deadline: float
    expanded: int = 0

    def spend(self, size: int) -> None:
        self.expanded += size
        if self.expanded > MAX_EXPANDED:
            raise Bomb(f"unpacks to more than {MAX_EXPANDED // 1024 ** 2} MiB")
        if time.monotonic() > self.deadline:
            raise Bomb(f"takes more than {MAX_SECONDS:.0f} s to unpack")


def scan(name: str, stream: IO[bytes], size: int) -> Found:
    """Search the archive `name` (read from `stream`, `size` bytes) and every archive inside it."""
    found = Found()
    if size > SPOOL_LIMIT:
        found.unreadable.append(f"{name}: {size} bytes, larger than the {SPOOL_LIMIT // 1024 ** 2} MiB inspected")
        return found
    budget = _Budget(time.monotonic() + MAX_SECONDS)
    seekable = stream.seekable() if hasattr(stream, "seekable") else False
    with contextlib.nullcontext(stream) if seekable else tempfile.SpooledTemporaryFile(MEMORY_SPOOL) as spool:
        if not seekable:
            shutil.copyfileobj(stream, spool, 1 << 20)
        spool.seek(0)
        try:
            _archive(name, spool, 1, budget, found)
        except Bomb as exc:
            found.bomb = str(exc)
    return found


def _archive(name: str, fh: IO[bytes], depth: int, budget: _Budget, found: Found) -> None:
    try:
        if zipfile.is_zipfile(fh):
            fh.seek(0)
            _zip(name, fh, depth, budget, found)
        else:
            fh.seek(0)
            _tar(name, fh, depth, budget, found)
    except READ_ERRORS as exc:
        found.unreadable.append(f"{name}: {type(exc).__name__}: {' '.join(str(exc).split())[:120]}")


def _zip(name: str, fh: IO[bytes], depth: int, budget: _Budget, found: Found) -> None:
    with zipfile.ZipFile(fh) as archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise Bomb(f"{name} holds {len(members)} members, more than {MAX_MEMBERS}")
        for info in members:
            if info.is_dir():
                continue
            member = f"{name}!{info.filename}"
            try:
                with archive.open(info) as src:
                    _member(member, src, depth, budget, found)
            except READ_ERRORS as exc:  # one encrypted or damaged member: the others are still read
                found.unreadable.append(f"{member}: {type(exc).__name__}: {' '.join(str(exc).split())[:120]}")


def _tar(name: str, fh: IO[bytes], depth: int, budget: _Budget, found: Found) -> None:
    with tarfile.open(fileobj=fh, mode="r:*") as archive:
        count = 0
        for info in archive:
            count += 1
            if count > MAX_MEMBERS:
                raise Bomb(f"{name} holds more than {MAX_MEMBERS} members")
            budget.spend(512)  # a header: an archive of empty members still costs time
            if not info.isreg():
                continue
            src = archive.extractfile(info)
            if src is not None:
                _member(f"{name}!{info.name}", src, depth, budget, found)


def _member(member: str, src: IO[bytes], depth: int, budget: _Budget, found: Found) -> None:
    """Read one member in chunks through the secret rules (bounded); an archive member is opened in turn."""
    inner = member.rsplit("!", 1)[-1]
    nested = is_archive(inner) and depth < MAX_DEPTH
    check = patterns.StreamScan("/" + inner.lstrip("/"))
    with tempfile.SpooledTemporaryFile(MEMORY_SPOOL) if nested else contextlib.nullcontext() as spool:
        while chunk := src.read(patterns.CHUNK):
            budget.spend(len(chunk))
            check.feed(chunk)
            if spool is not None:
                spool.write(chunk)
        for rule in sorted(check.hits):
            found.hits.append((member, rule, sorted(check.keys) if rule == "private-key" else []))
        if spool is not None:
            spool.seek(0)
            _archive(member, spool, depth + 1, budget, found)
