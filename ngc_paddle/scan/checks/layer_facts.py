"""What one layer holds, as facts that do not depend on the policy: the unit the per-layer cache keeps.

Why: every check of the gate needs something of each layer (a key anywhere in it, the setuid and capability
files with their md5, the dpkg database and dist-infos it leaves, the account files, startup hooks, the
hashes of installed Python files), and reading a layer (decompressing, hashing, matching rules over every
byte) is the cost of a scan. One pass over a layer's tar gathers all of it here; the policy (which setuid
paths and capabilities are allowed, which key is a known fixture) is applied afterwards (layer_checks.py),
so the facts of a layer are valid for any policy and any image that shares the layer, and layer_cache.py
keeps them by the layer's diff id.
"""

import base64
import contextlib
import hashlib
import io
import stat
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import IO

import ahocorasick_rs

from ngc_common import secret_patterns as patterns
from ngc_common.image_paths import SUITE_RECORD
from ngc_paddle.scan.checks import accounts, archives, file_scope, hooks
from ngc_paddle.scan.source import inventory
from ngc_paddle.scan.source.inventory import record_hash
from ngc_paddle.scan.source.saved_image import Entry, Layer, entry_of

patterns.use_matcher(ahocorasick_rs.BytesAhoCorasick)  # every rule's anchors in one pass over each file
SMALL = 256 * 1024  # files up to this size are read whole; larger ones in chunks
CAPTURE_LIMIT = 4 * 1024 * 1024  # a captured file (dpkg status, RECORD, hooks) larger than this keeps no content
PYTHON_TREES = ("/site-packages/", "/dist-packages/")
DIST_INFO_FILES = ("/RECORD", "/WHEEL", "/INSTALLER", "/direct_url.json")
HEAD = 16  # the header of a compiled module (PEP 552): what the integrity check reads of a .pyc


def captured(path: str) -> bool:
    """Files whose content the whole-image checks read (the inventory, dpkg's md5sums, dist-info records,
    account files, startup hooks, the suite's record of its files)."""
    return (inventory.wants_content(path, 0) or (path.startswith("/var/lib/dpkg/info/") and path.endswith(".md5sums"))
            or (".dist-info/" in path and path.endswith(DIST_INFO_FILES)) or accounts.wants(path)
            or hooks.wants(path) or path.startswith("/etc/skel/") or file_scope.captured(path)
            or path == SUITE_RECORD)


@dataclass
class LayerFacts:
    diff_id: str
    hits: list[list] = field(default_factory=list)  # [path, rule, [sha256 of each private-key block]]
    special: list[dict] = field(default_factory=list)  # setuid/setgid/capability/world-writable entries
    files: dict[str, dict] = field(default_factory=dict)  # captured path -> mode, uid, gid, type, link, content
    removed: list[list] = field(default_factory=list)  # [whiteout | opaque, path]
    hashes: dict[str, str] = field(default_factory=dict)  # installed Python file -> RECORD-style sha256
    archives: list[dict] = field(default_factory=list)  # path, bomb, unreadable
    # every file and link under the system's paths (file_scope.in_scope) -> file_scope.entry: [file | symlink |
    # hardlink | pyc, md5 (dpkg's trees) or RECORD-style sha256 (pip's) or a .pyc's header, link target] and, for
    # a Python source, [.., mtime, size] (what a compiled module's header must match to be loaded instead)
    integrity: dict[str, list] = field(default_factory=dict)
    entries: int = 0
    size: int = 0  # bytes of its regular files
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "LayerFacts":
        return cls(**data)

    def content(self, path: str) -> bytes | None:
        item = self.files.get(path)
        return base64.b64decode(item["content"]) if item and item.get("content") is not None else None

    def replay(self, layer: Layer) -> list[Entry]:
        """The captured files and the whiteouts as layer entries, in the layer's order (for the inventory)."""
        entries = [Entry(layer, path, 0, 0, kind, None) for kind, path in self.removed]
        for path, item in self.files.items():
            entries.append(Entry(layer, path, item["mode"], item["size"], item["type"], self.content(path),
                                 uid=item["uid"], gid=item["gid"], link=item["link"]))
        return entries


def _special(e: Entry) -> bool:
    if e.type == "file":
        return bool(e.mode & (stat.S_ISUID | stat.S_ISGID | stat.S_IWOTH) or e.caps is not None)
    return e.type == "dir" and bool(e.mode & stat.S_IWOTH) and not e.mode & stat.S_ISVTX


def scan_layer(layer: Layer, tar: tarfile.TarFile) -> LayerFacts:
    """One pass over a layer's tar: every fact the checks need of it."""
    start = time.perf_counter()
    facts = LayerFacts(layer.diff_id)
    for item in tar:
        e = entry_of(layer, tar, item, SMALL, None)
        facts.entries += 1
        if e.type in ("whiteout", "opaque"):
            facts.removed.append([e.type, e.path])
            continue
        keep = captured(e.path)
        special = _special(e)
        md5, head = None, b""
        if e.type == "file":
            facts.size += e.size
            md5, content, head = _read(e, facts, special or file_scope.wants_md5(e.path), keep)
            if keep:
                facts.files[e.path] = _file(e, content)
        elif keep:
            facts.files[e.path] = _file(e, None)
        if file_scope.in_scope(e.path) and (kept := file_scope.entry(e, md5 or facts.hashes.get(e.path, ""), head)):
            facts.integrity[e.path] = kept
        if special:
            facts.special.append({"path": e.path, "type": e.type, "mode": e.mode, "md5": md5 or "",
                                  "caps": e.caps.hex() if e.caps is not None else ""})
    facts.seconds = time.perf_counter() - start
    return facts


def _file(e: Entry, content: bytes | None) -> dict:
    kept = content if content is not None and len(content) <= CAPTURE_LIMIT else None
    return {"mode": e.mode, "uid": e.uid, "gid": e.gid, "size": e.size, "type": e.type, "link": e.link,
            "content": base64.b64encode(kept).decode() if kept is not None else None}


def _read(e: Entry, facts: LayerFacts, special: bool, keep: bool) -> tuple[str | None, bytes | None, bytes]:
    """Run the rules over one file and hash it as needed; (its md5 when special or dpkg's, its content when
    captured, its first bytes: a compiled module's header). A .pyc gets no sha256: RECORDs list none for them."""
    python = (any(tree in e.path for tree in PYTHON_TREES) or file_scope.wants_sha256(e.path)) \
        and not e.path.endswith(".pyc")
    archive = archives.is_archive(e.path)
    if e.content is not None:
        data = e.content
        hits = patterns.buffer_hits(data, e.path)
        keys = patterns.key_digests(data) if "private-key" in hits else set()
        if python:
            facts.hashes[e.path] = record_hash(hashlib.sha256(data).digest())
        if archive:
            _archive(e.path, io.BytesIO(data), len(data), facts)
        _hits(facts, e.path, hits, keys)
        return (hashlib.md5(data).hexdigest() if special else None), data, data[:HEAD]
    if e.stream is None:
        return None, None, b""
    wanted = (["md5"] if special else []) + (["sha256"] if python else [])
    check = patterns.StreamScan(e.path, wanted)
    whole = io.BytesIO() if keep and e.size <= CAPTURE_LIMIT else None
    spooled = archive and e.size <= archives.SPOOL_LIMIT
    head = b""
    with tempfile.SpooledTemporaryFile(archives.MEMORY_SPOOL) if spooled else contextlib.nullcontext() as spool:
        while chunk := e.stream.read(patterns.CHUNK):
            head = head or chunk[:HEAD]
            check.feed(chunk)
            for sink in (whole, spool):
                if sink is not None:
                    sink.write(chunk)
        if python:
            facts.hashes[e.path] = record_hash(check.hashes["sha256"].digest())
        if archive:  # archives.scan rewinds the spool; one over the spool limit it notes by its size, unread
            _archive(e.path, spool if spool is not None else io.BytesIO(), e.size, facts)
    _hits(facts, e.path, check.hits, check.keys)
    return check.digest("md5"), whole.getvalue() if whole is not None else None, head


def _hits(facts: LayerFacts, path: str, hits: set[str], keys: set[str]) -> None:
    for rule in sorted(hits):
        facts.hits.append([path, rule, sorted(keys) if rule == "private-key" else []])


def _archive(path: str, stream: IO[bytes], size: int, facts: LayerFacts) -> None:
    found = archives.scan(path, stream, size)
    for member, rule, keys in found.hits:
        facts.hits.append([member, rule, keys])
    if found.bomb or found.unreadable:
        facts.archives.append({"path": path, "bomb": found.bomb, "unreadable": found.unreadable[:20]})
