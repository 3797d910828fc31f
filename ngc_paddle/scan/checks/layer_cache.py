"""The per-layer cache: each layer's facts (layer_facts.LayerFacts) kept by the layer's diff id.

Why: layers are reproducible (same lock, same bytes, same diff id), so what one scan learnt of a layer holds
for every later scan of any image that has it: a rescan after a change to the top layer reads only that
layer. The key is the diff id (sha256 of the layer's uncompressed tar, from the image config, checked by the
engine and the registry) and facts_version(), a digest of the code that gathers the facts: a change to a rule
or to what is gathered makes every entry stale at once, without anyone bumping a number. The policy is not
part of the key: it is applied to the facts afterwards. Entries are gzip'd JSON, written atomically; an
unreadable entry is read again from the layer (and replaced), never trusted; the oldest entries beyond
MAX_ENTRIES are removed.
"""

import ast
import functools
import gzip
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from ngc_paddle import user_cache
from ngc_paddle.scan.checks.layer_facts import LayerFacts

MAX_ENTRIES = 400
CACHE_ENV = "NGC_PADDLE_SCAN_CACHE"
DIFF_ID = re.compile(r"sha256:[0-9a-f]{64}")
_REPO = Path(__file__).resolve().parents[3]
_OURS = ("ngc_paddle", "ngc_common")


def fact_sources(module: str = "ngc_paddle.scan.checks.layer_facts") -> list[Path]:
    """The code whose output the cache keeps: `module` and every module of ours it imports, followed through,
    with the packages those imports run (a hand-kept list missed the dpkg reader once)."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        path = _REPO / Path(*name.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if name in seen or not path.is_file():
            continue
        seen[name] = path
        todo += [name.rsplit(".", n)[0] for n in range(1, name.count(".") + 1)]  # the packages an import runs
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(_OURS):
                todo += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names if alias.name.startswith(_OURS)]
    return sorted(seen.values())


@functools.cache
def facts_version() -> str:
    """The digest of fact_sources(): made on the first cache lookup, not at import (the walk parses two dozen
    modules, some 80 ms every command that imports the scan would pay)."""
    return hashlib.sha256(b"".join(p.read_bytes() for p in fact_sources())).hexdigest()[:12]


def default_folder() -> Path:
    """NGC_PADDLE_SCAN_CACHE, else the user's cache (XDG, as trivy's ~/.cache/trivy): one for every checkout, since
    the key holds the digest of the code that gathers the facts, so a checkout with other rules never reads them."""
    return user_cache.folder("scan-layers", CACHE_ENV)


class LayerCache:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.hits = 0
        self.misses = 0

    def _path(self, diff_id: str) -> Path | None:
        if not DIFF_ID.fullmatch(diff_id):
            return None  # no trustworthy key (an image config without diff ids): never cached
        return self.folder / f"{diff_id.removeprefix('sha256:')}.{facts_version()}.json.gz"

    def get(self, diff_id: str) -> LayerFacts | None:
        path = self._path(diff_id)
        facts = None
        if path is not None and path.is_file() and not path.is_symlink():
            try:
                data = json.loads(gzip.decompress(path.read_bytes()))
                facts = LayerFacts.from_dict(data) if data.get("diff_id") == diff_id else None
            except (OSError, ValueError, TypeError, EOFError, AttributeError):
                facts = None  # damaged: read the layer again
        if facts is None:
            self.misses += 1
        else:
            self.hits += 1
            os.utime(path)  # recently used: kept by the pruning below
        return facts

    def put(self, facts: LayerFacts) -> None:
        path = self._path(facts.diff_id)
        if path is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".layer-", suffix=".tmp", dir=self.folder)
        with os.fdopen(fd, "wb") as out:
            out.write(gzip.compress(json.dumps(facts.as_dict()).encode(), compresslevel=3))
        os.replace(tmp, path)
        self._prune()

    def _prune(self) -> None:
        entries = sorted(self.folder.glob("*.json.gz"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[MAX_ENTRIES:]:
            old.unlink(missing_ok=True)
