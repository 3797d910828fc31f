"""What one pass over a layer keeps of each entry: which files are captured whole, each entry's integrity facts
by type (file, Python source, compiled module, symlink, hard link, device), the special folders, and the captured
files replayed as layer entries for the inventory."""

import hashlib
import io
import tarfile

import pytest

from ngc_paddle.scan.checks import layer_facts
from ngc_paddle.scan.checks.layer_facts import scan_layer
from ngc_paddle.scan.source.saved_image import Entry
from tests.unit.layer_tars import layer


@pytest.mark.parametrize("path, kept", [
    ("/var/lib/dpkg/info/login.md5sums", True), ("/srv/backup/login.md5sums", False),
    ("/opt/venv/lib/python3.11/site-packages/a-1.dist-info/RECORD", True), ("/srv/RECORD", False),
    ("/opt/venv/lib/python3.11/site-packages/a-1.dist-info/top_level.txt", False),
    ("/etc/skel/.bashrc", True), ("/srv/etc/skel/.bashrc", False),
    ("/etc/passwd", True), ("/etc/profile.d/a.sh", True), ("/var/lib/dpkg/status", True), ("/usr/bin/ls", False),
])
def test_which_files_are_captured_whole(path: str, kept: bool) -> None:
    assert layer_facts.captured(path) is kept


def _tar(*infos: tuple[tarfile.TarInfo, bytes | None]) -> tarfile.TarFile:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in infos:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    out.seek(0)
    return tarfile.open(fileobj=out, mode="r:")


def _info(name: str, kind: bytes = tarfile.REGTYPE, data: bytes | None = None, mode: int = 0o644,
          link: str = "", uid: int = 0, gid: int = 0, mtime: int = 0) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.uid, info.gid, info.mtime = kind, mode, link, uid, gid, mtime
    if data is not None:
        info.size = len(data)
    return info, data


PYC = bytes.fromhex("a70d0d0a00000000") + (5).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"\xe3rest"


def test_each_entry_type_has_its_integrity_facts_and_only_open_folders_are_special() -> None:
    tar = _tar(_info("usr/bin/tool", data=b"tool"), _info("usr/bin/tool-again", tarfile.LNKTYPE, link="usr/bin/tool"),
               _info("usr/bin/sh", tarfile.SYMTYPE, link="dash"),
               _info("usr/lib/python3/dist-packages/m.py", data=b"x = 1\n", mtime=5),
               _info("usr/lib/python3/dist-packages/__pycache__/m.cpython-311.pyc", data=PYC),
               _info("usr/lib/fifo", tarfile.FIFOTYPE), _info("usr/share", tarfile.DIRTYPE, mode=0o755),
               _info("usr/share/drop", tarfile.DIRTYPE, mode=0o777),
               _info("usr/share/tmp", tarfile.DIRTYPE, mode=0o1777))
    facts = scan_layer(layer(1), tar)
    m_py = hashlib.md5(b"x = 1\n").hexdigest()
    assert facts.integrity == {
        "/usr/bin/tool": ["file", hashlib.md5(b"tool").hexdigest(), ""],
        "/usr/bin/tool-again": ["hardlink", "", "usr/bin/tool"],
        "/usr/bin/sh": ["symlink", "", "dash"],
        "/usr/lib/python3/dist-packages/m.py": ["file", m_py, "", 5, 6],
        "/usr/lib/python3/dist-packages/__pycache__/m.cpython-311.pyc": ["pyc", PYC[:16].hex(), ""],
    }
    assert facts.special == [{"path": "/usr/share/drop", "type": "dir", "mode": 0o777, "md5": "", "caps": ""}]
    assert (facts.entries, facts.size) == (9, 4 + 6 + len(PYC)) and 0 <= facts.seconds < 60  # the progress shows both


def test_captured_files_and_whiteouts_replay_as_the_layer_had_them() -> None:
    passwd = b"root:x:0:0::/root:/bin/sh\n"
    tar = _tar(_info("etc/passwd", data=passwd, mode=0o640, uid=0, gid=42),
               _info("etc/profile.d/x.sh", tarfile.SYMTYPE, link="/opt/x.sh", mode=0o777, uid=7, gid=8),
               _info("etc/.wh.group"), _info("usr/bin/ls", data=b"ls"))
    at = layer(2)
    facts = scan_layer(at, tar)
    assert facts.replay(at) == [
        Entry(at, "/etc/.wh.group", 0, 0, "whiteout", None),  # the marker, as whiteout_hides reads it
        Entry(at, "/etc/passwd", 0o640, len(passwd), "file", passwd, uid=0, gid=42),
        Entry(at, "/etc/profile.d/x.sh", 0o777, 0, "symlink", None, uid=7, gid=8, link="/opt/x.sh"),
    ]
