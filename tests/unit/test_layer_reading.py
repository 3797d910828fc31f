"""A layer's facts are the same whether its files are read whole or streamed in chunks.

Small files are read into memory and larger ones streamed (layer_facts.SMALL); both paths hash, capture, match
secrets, open archives and keep a compiled module's header. Reading the same layer with every file over the
limit must give the same facts, and the stream path's own limits (capture, archive spool) hold at their edges.
"""

import hashlib
import io
import zipfile

import pytest

from ngc_common import secret_patterns as patterns
from ngc_paddle.scan.checks import archives, layer_facts
from tests.unit.layer_tars import Member, facts
from tests.unit.test_scan_classes import KEY

SITE = "/opt/venv/lib/python3.11/site-packages"


def _filler(seed: str, size: int) -> bytes:
    block = hashlib.sha256(seed.encode()).hexdigest().encode() + b"\n"
    return (block * (size // len(block) + 1))[:size]


def _zip(members: dict[str, bytes], size: int | None = None) -> bytes:
    """A zip, its members compressed (their bytes appear only once it is opened); with `size`, padded (one more
    member, stored) to exactly that many bytes."""
    def build(pad: int) -> bytes:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in members.items():
                z.writestr(name, data)
            if size is not None:
                z.writestr("pad.bin", b"\0" * pad, compress_type=zipfile.ZIP_STORED)
        return out.getvalue()
    data = build(0)
    return build(size - len(data)) if size is not None else data


def _members() -> list[Member]:
    pyc_header = bytes.fromhex("a70d0d0a") + bytes(4) + (1234).to_bytes(4, "little") + (99).to_bytes(4, "little")
    return [
        Member(f"{SITE}/pkg/mod.py", _filler("mod", 9000), mtime=1234),
        Member(f"{SITE}/pkg/__pycache__/mod.cpython-311.pyc", pyc_header + _filler("pyc", 5000)),
        Member("/usr/lib/python3/dist-packages/deb_mod.py", _filler("deb", 7000)),
        Member("/usr/bin/tool", _filler("tool", 12000), mode=0o4755),
        Member("/usr/lib/x86_64-linux-gnu/libz.so.1", _filler("lib", 20000)),
        Member("/etc/passwd", b"root:x:0:0::/root:/bin/bash\n" + b"u:x:1000:1000::/home/u:/bin/sh\n" * 40),
        Member("/srv/notes.txt", _filler("a", 6000) + KEY + _filler("b", 6000)),
        Member("/usr/share/data/keys.zip", _zip({"deploy/id_rsa": KEY, "readme.txt": _filler("r", 4000)})),
    ]


def _as_read(monkeypatch: pytest.MonkeyPatch, small: int) -> dict:
    with monkeypatch.context() as m:
        m.setattr(layer_facts, "SMALL", small)
        m.setattr(patterns, "CHUNK", 1024)  # several chunks per file, each longer than a compiled module's header
        found = facts(1, _members())[1].as_dict()
    found.pop("seconds")
    return found


def test_streamed_files_give_the_facts_of_files_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _as_read(monkeypatch, 1024 * 1024)
    streamed = _as_read(monkeypatch, 64)
    assert streamed == whole
    # and the facts are there to compare: hashes, md5s, a header, secrets in a file and in an archive
    assert set(whole["hashes"]) == {f"{SITE}/pkg/mod.py", "/usr/lib/python3/dist-packages/deb_mod.py"}
    assert whole["integrity"]["/usr/bin/tool"][1] == hashlib.md5(_filler("tool", 12000)).hexdigest()
    assert whole["integrity"][f"{SITE}/pkg/__pycache__/mod.cpython-311.pyc"][0] == "pyc"
    assert [h[:2] for h in whole["hits"]] == [["/srv/notes.txt", "private-key"],
                                              ["/usr/share/data/keys.zip!deploy/id_rsa", "private-key"]]
    assert whole["special"][0]["md5"] == whole["integrity"]["/usr/bin/tool"][1]
    assert whole["files"]["/etc/passwd"]["content"] is not None


def test_a_streamed_file_is_captured_up_to_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layer_facts, "SMALL", 64)
    monkeypatch.setattr(layer_facts, "CAPTURE_LIMIT", 1000)
    at_limit = b"root:x:0:0::/root:/bin/bash\n" + b"#" * 971 + b"\n"
    assert len(at_limit) == 1000
    _, kept = facts(1, [Member("/etc/passwd", at_limit), Member("/etc/group", at_limit + b"\n")])
    assert kept.content("/etc/passwd") == at_limit
    assert kept.content("/etc/group") is None  # over the limit: its mode and owner kept, not its bytes
    assert kept.files["/etc/group"]["size"] == 1001


def test_a_streamed_archive_is_opened_up_to_the_spool_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    limit = 2 * 1024 ** 2
    monkeypatch.setattr(layer_facts, "SMALL", 64)
    monkeypatch.setattr(archives, "SPOOL_LIMIT", limit)
    at_limit = _zip({"id_rsa": KEY}, size=limit)
    over = _zip({"id_rsa": KEY}, size=limit + 1)
    _, found = facts(1, [Member("/srv/at.zip", at_limit), Member("/srv/over.zip", over)])
    assert [h[:2] for h in found.hits] == [["/srv/at.zip!id_rsa", "private-key"]]
    assert found.archives == [{"path": "/srv/over.zip", "bomb": "", "unreadable": [
        f"/srv/over.zip: {limit + 1} bytes, larger than the 2 MiB inspected"]}]
