"""What one pass over a layer keeps of each entry: which files are captured whole, each entry's integrity facts
by type (file, Python source, compiled module, symlink, hard link, device), the special folders, and the captured
files replayed as layer entries for the inventory."""

import hashlib
import tarfile

import pytest

from ngc_paddle.scan.checks import layer_facts
from ngc_paddle.scan.source.saved_image import Entry
from tests.unit.layer_tars import Member
from tests.unit.layer_tars import facts as layer_facts_of


@pytest.mark.parametrize("path, kept", [
    ("/var/lib/dpkg/info/login.md5sums", True), ("/srv/backup/login.md5sums", False),
    ("/opt/venv/lib/python3.11/site-packages/a-1.dist-info/RECORD", True), ("/srv/RECORD", False),
    ("/opt/venv/lib/python3.11/site-packages/a-1.dist-info/top_level.txt", False),
    ("/etc/skel/.bashrc", True), ("/srv/etc/skel/.bashrc", False),
    ("/etc/passwd", True), ("/etc/profile.d/a.sh", True), ("/var/lib/dpkg/status", True), ("/usr/bin/ls", False),
])
def test_which_files_are_captured_whole(path: str, kept: bool) -> None:
    assert layer_facts.captured(path) is kept


PYC = bytes.fromhex("a70d0d0a00000000") + (5).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"\xe3rest"


def test_each_entry_type_has_its_integrity_facts_and_only_open_folders_are_special() -> None:
    _, facts = layer_facts_of(1, [
        Member("/usr/bin/tool", b"tool"), Member("/usr/bin/tool-again", link="usr/bin/tool", type=tarfile.LNKTYPE),
        Member("/usr/bin/sh", link="dash"), Member("/usr/lib/python3/dist-packages/m.py", b"x = 1\n", mtime=5),
        Member("/usr/lib/python3/dist-packages/__pycache__/m.cpython-311.pyc", PYC),
        Member("/usr/lib/fifo", type=tarfile.FIFOTYPE), Member("/usr/share", None, 0o755),
        Member("/usr/share/drop", None, 0o777), Member("/usr/share/tmp", None, 0o1777)])
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
    at, facts = layer_facts_of(2, [Member("/etc/passwd", passwd, 0o640, gid=42),
                                   Member("/etc/profile.d/x.sh", link="/opt/x.sh", mode=0o777, uid=7, gid=8),
                                   Member("/etc/.wh.group"), Member("/usr/bin/ls", b"ls")])
    assert facts.replay(at) == [
        Entry(at, "/etc/.wh.group", 0, 0, "whiteout", None),  # the marker, as whiteout_hides reads it
        Entry(at, "/etc/passwd", 0o640, len(passwd), "file", passwd, uid=0, gid=42),
        Entry(at, "/etc/profile.d/x.sh", 0o777, 0, "symlink", None, uid=7, gid=8, link="/opt/x.sh"),
    ]
