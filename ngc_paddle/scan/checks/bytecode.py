"""Compiled Python (.pyc) that the interpreter would run instead of a module's source, and where it came from.

The long form: docs/design-notes.md, section `ngc_paddle/scan/checks/bytecode.py`.
"""

import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

PYCACHE = re.compile(r"^(?P<folder>.*)/__pycache__/(?P<name>[^/.]+)\.(?P<tag>[^/.]+)(?:\.opt-[12])?\.pyc$")
SOURCELESS = re.compile(r"^(?P<folder>.*)/(?P<name>[^/.]+)\.pyc$")
HEADER = 16  # magic, flags, then the source's mtime and size, or its hash (PEP 552)


@dataclass
class Source:
    """A module's source file as the final image has it."""

    path: str
    layer: int
    mtime: int
    size: int


@dataclass
class Verdict:
    path: str  # the .pyc
    source: str | None  # the module it is loaded as (None: sourceless)
    what: str


def source_of(pyc: str) -> tuple[str | None, bool]:
    """(the source NAME.py a .pyc stands for, whether it lives in __pycache__) or (None, False)."""
    cached = PYCACHE.match(pyc)
    if cached:
        return f"{cached['folder']}/{cached['name']}.py", True
    legacy = SOURCELESS.match(pyc)
    return (f"{legacy['folder']}/{legacy['name']}.py", False) if legacy else (None, False)


def loaded_instead(pyc: str, header: bytes, source: Source) -> bool:
    """Whether CPython would run this __pycache__ .pyc instead of compiling `source` (its header as
    SourceLoader.get_code reads it). The interpreter's own tag is held to its magic; another tag's .pyc (of
    another Python in the image) is taken as current."""
    if len(header) < HEADER:
        return False  # EOFError: compiled again
    cached = PYCACHE.match(pyc)
    if cached and cached["tag"] == sys.implementation.cache_tag and header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags = int.from_bytes(header[4:8], "little")
    if flags & ~0b11:
        return False  # invalid flags: ImportError, compiled again
    if flags & 0b01:
        return True  # hash-based: unchecked, or checked against a hash anyone can compute and write
    return (int.from_bytes(header[8:12], "little") == source.mtime & 0xFFFFFFFF
            and int.from_bytes(header[12:16], "little") == source.size & 0xFFFFFFFF)


def judge(pyc: str, header: bytes, layer: int, sources: Callable[[str], Source | None],
          install_layers: Callable[[str], set[int]]) -> Verdict | None:
    """One .pyc of the final image: a verdict when Python would run it and no install accounts for it.
    `sources`: path -> the final image's regular file there, if any; `install_layers`: path -> the layers
    that installed it (its distributions' RECORDs, its package's file list; empty when no package owns it)."""
    source_path, in_cache = source_of(pyc)
    if source_path is None:
        return None
    source = sources(source_path)
    if not in_cache:
        if source is not None:
            return None  # NAME.py wins over a legacy NAME.pyc beside it
        installs = install_layers(pyc)
        if installs and layer <= max(installs):
            return None
        return Verdict(pyc, None, ("compiled code with no source beside it, which Python imports as it is, "
                                   + ("written after its package's install" if installs else "that no package lists")))
    if source is None or not loaded_instead(pyc, header, source):
        return None  # never loaded: orphaned, stale or damaged (compiled again)
    installs = install_layers(source.path) or {source.layer}
    if layer <= max(installs):
        return None
    return Verdict(pyc, source.path, (f"compiled code Python runs instead of {source.path}, written in layer "
                                      f"{layer}, not where its source was installed (layer "
                                      f"{', '.join(map(str, sorted(installs)))})"))
