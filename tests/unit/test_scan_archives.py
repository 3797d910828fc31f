"""The archive search (ngc_paddle.scan.checks.archives) called directly: nesting down to MAX_DEPTH and no further, a
member's own name for the name rules, a stream that cannot seek, every bound exactly at its limit and one past it,
directories skipped without ending the walk, and what a note or a bomb says."""

import io
import tarfile
import zipfile

import pytest

from ngc_paddle.scan.checks import archives, layer_checks
from ngc_paddle.scan.checks.layer_facts import LayerFacts
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.policy import Policy
from tests.unit.layer_tars import layer

NETRC = b"machine example.com login user password s3cretvalue1\n"


def tar(members: dict[str, bytes], dirs: tuple[str, ...] = ()) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as t:
        for name in dirs:  # before the files: a walk that stopped at a directory would miss them
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            t.addfile(info)
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()


def zipped(members: dict[str, bytes], dirs: tuple[str, ...] = ()) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in dirs:
            z.writestr(zipfile.ZipInfo(name.rstrip("/") + "/"), b"")
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


class Unseekable:
    """A stream with read() alone, as a layer's tar member can be."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self._data.read(size)


def scan(data: bytes, name: str = "/opt/a.tar") -> archives.Found:
    return archives.scan(name, io.BytesIO(data), len(data))


def test_nested_archives_are_opened_down_to_max_depth_and_no_further() -> None:
    three = tar({"b.tar": tar({"c.tar": tar({".netrc": NETRC})})})  # a!b!c!.netrc: c is the third archive
    assert scan(three).hits == [("/opt/a.tar!b.tar!c.tar!.netrc", "netrc-password", [])]
    four = tar({"b.tar": tar({"c.tar": tar({"d.tar": tar({".netrc": NETRC})})})})
    assert scan(four).hits == []  # d would be a fourth: not opened
    assert archives.MAX_DEPTH == 3


@pytest.mark.parametrize("pack", [tar, zipped])
def test_a_member_is_judged_by_its_own_name_and_directories_do_not_end_the_walk(pack) -> None:
    """A .netrc at an archive's root is named `.netrc` to the rules (the part after the last '!'): its name rule
    applies; a directory entry ahead of it is skipped, not the end."""
    found = scan(pack({".netrc": NETRC, "docs/readme.txt": b"no secret here\n"}, dirs=("docs",)), "/opt/x.bin")
    assert found.hits == [("/opt/x.bin!.netrc", "netrc-password", [])] and not found.unreadable


def test_a_stream_that_cannot_seek_is_spooled_first() -> None:
    data = tar({".netrc": NETRC})
    found = archives.scan("/opt/a.tar", Unseekable(data), len(data))
    assert found.hits == [("/opt/a.tar!.netrc", "netrc-password", [])] and not found.bomb


def test_an_archive_of_the_spool_limit_is_opened_and_a_larger_one_noted(monkeypatch) -> None:
    data = tar({".netrc": NETRC})
    monkeypatch.setattr(archives, "SPOOL_LIMIT", len(data))
    assert archives.scan("/opt/a.tar", io.BytesIO(data), len(data)).hits  # exactly the limit: read
    over = archives.scan("/opt/a.tar", io.BytesIO(data), len(data) + 1)
    assert over.hits == [] and over.unreadable == [
        f"/opt/a.tar: {len(data) + 1} bytes, larger than the 0 MiB inspected"]


@pytest.mark.parametrize(("pack", "says"), [
    (tar, "/opt/a.tar holds more than 3 members"), (zipped, "/opt/a.tar holds 4 members, more than 3")])
def test_the_member_bound_allows_its_limit_and_is_a_bomb_one_past_it(monkeypatch, pack, says: str) -> None:
    monkeypatch.setattr(archives, "MAX_MEMBERS", 3)
    at_limit = scan(pack({"a": b"1", "b": b"2", ".netrc": NETRC}))
    assert at_limit.bomb == "" and at_limit.hits == [("/opt/a.tar!.netrc", "netrc-password", [])]
    past = scan(pack({"a": b"1", "b": b"2", "c": b"3", ".netrc": NETRC}))
    assert past.bomb == says


def test_a_damaged_member_is_noted_and_the_others_are_still_read(monkeypatch) -> None:
    data = bytearray(zipped({"bad.txt": b"x" * 4000, ".netrc": NETRC}))
    start = data.index(b"x" * 100)
    data[start:start + 100] = b"y" * 100  # stored, not deflated: the CRC no longer holds
    found = scan(bytes(data), "/opt/z.zip")
    assert found.hits == [("/opt/z.zip!.netrc", "netrc-password", [])]
    assert found.unreadable == ["/opt/z.zip!bad.txt: BadZipFile: Bad CRC-32 for file 'bad.txt'"]


def test_a_bomb_by_size_or_time_says_which_bound(monkeypatch) -> None:
    monkeypatch.setattr(archives, "MAX_EXPANDED", 1024)
    assert scan(tar({"big": b"\0" * 4096})).bomb == "unpacks to more than 0 MiB"
    monkeypatch.setattr(archives, "MAX_EXPANDED", 2 * 1024 ** 3)
    monkeypatch.setattr(archives, "MAX_SECONDS", -1.0)  # the deadline has passed before the first header
    assert scan(tar({"a": b"1"})).bomb == "takes more than -1 s to unpack"


def test_a_private_key_in_an_archive_carries_its_digest_and_a_password_none() -> None:
    """The scan names a private key by the sha256 of its block (an allowlist entry may accept one key, not every
    key); any other rule's hit in the same archive carries no digest."""
    import hashlib

    key = (b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
           b"-----END RSA PRIVATE KEY-----\n")
    found = scan(tar({"deploy/id_rsa": key, ".netrc": NETRC + key}))  # the .netrc holds a key as well
    digest = hashlib.sha256(key.strip()).hexdigest()
    assert sorted(found.hits) == [("/opt/a.tar!.netrc", "netrc-password", []),
                                  ("/opt/a.tar!.netrc", "private-key", [digest]),
                                  ("/opt/a.tar!deploy/id_rsa", "private-key", [digest])]


def test_each_layer_archive_note_is_a_finding_naming_its_layer_and_every_layer_counts() -> None:
    """A bomb blocks (HIGH) and an unreadable archive is noted (LOW, its first three reasons), each with the
    archive and the layer; the findings of a lower layer stay beside a later one's."""
    low, high = layer(1, "os"), layer(2, "data")
    first = LayerFacts(low.diff_id, hits=[["/root/.netrc", "netrc-password", []]])
    second = LayerFacts(high.diff_id, archives=[
        {"path": "/srv/big.tar", "bomb": "unpacks to more than 2048 MiB", "unreadable": []},
        {"path": "/srv/odd.zip", "bomb": "", "unreadable": ["a: BadZipFile", "b: EOFError", "c: OSError", "d: x"]}])
    found = layer_checks.judge([low, high], [first, second], Policy())
    assert [(f.id, f.location) for f in found][:1] == [("netrc-password", low.where)]
    assert found[1:] == [
        Finding("archive", "archive-bomb", "HIGH", "archive past the gate's bounds: unpacks to more than 2048 MiB",
                package="/srv/big.tar", location=high.where, source="layers"),
        Finding("archive-unread", "archive-unreadable", "LOW", "could not be searched: a: BadZipFile; b: EOFError; "
                "c: OSError", package="/srv/odd.zip", location=high.where, source="layers")]


def test_the_layer_judgement_refuses_facts_of_fewer_layers_than_the_image() -> None:
    low, high = layer(1, "os"), layer(2, "data")
    with pytest.raises(ValueError):
        layer_checks.judge([low, high], [LayerFacts(low.diff_id)], Policy())
