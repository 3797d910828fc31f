"""Compiled Python the interpreter would run instead of a module's source (ngc_paddle.scan.checks.bytecode), called
directly: the header as CPython's SourceLoader reads it, and where a .pyc was written against where its source or its
package was installed."""

import importlib.util
import sys

import pytest

from ngc_paddle.scan.checks import bytecode
from ngc_paddle.scan.checks.bytecode import Source

TAG = sys.implementation.cache_tag
PYC = f"/opt/venv/lib/mod/__pycache__/x.{TAG}.pyc"
SOURCE = Source("/opt/venv/lib/mod/x.py", layer=3, mtime=1_700_000_001, size=1234)  # every byte of the header counts


def header(flags: int = 0, mtime: int = SOURCE.mtime, size: int = SOURCE.size,
           magic: bytes = importlib.util.MAGIC_NUMBER) -> bytes:
    return magic + flags.to_bytes(4, "little") + mtime.to_bytes(4, "little") + size.to_bytes(4, "little")


def test_the_loader_runs_a_pyc_whose_header_matches_its_source_or_is_hash_based() -> None:
    assert bytecode.loaded_instead(PYC, header(), SOURCE)
    assert bytecode.loaded_instead(PYC, header(flags=0b01, mtime=0, size=0), SOURCE)  # unchecked hash-based
    assert bytecode.loaded_instead(PYC, header(flags=0b11, mtime=0, size=0), SOURCE)  # checked: a hash anyone writes
    assert not bytecode.loaded_instead(PYC, header(mtime=SOURCE.mtime + 1), SOURCE)  # stale: compiled again
    assert not bytecode.loaded_instead(PYC, header(size=SOURCE.size + 1), SOURCE)
    assert not bytecode.loaded_instead(PYC, header(flags=0b100), SOURCE)  # invalid flags: ImportError, recompiled
    assert not bytecode.loaded_instead(PYC, header()[:15], SOURCE)  # short: EOFError, recompiled
    assert bytecode.loaded_instead(PYC, header() + b"code", SOURCE)  # the code after the 16 bytes is not read


def test_the_interpreters_own_tag_is_held_to_its_magic_and_another_tag_is_taken_as_current() -> None:
    wrong = b"\x00\x00\r\n"
    assert not bytecode.loaded_instead(PYC, header(magic=wrong), SOURCE)
    other = "/opt/venv/lib/mod/__pycache__/x.cpython-27.pyc"
    assert bytecode.loaded_instead(other, header(magic=wrong), SOURCE)  # another Python in the image may run it
    legacy = "/opt/venv/lib/mod/x.pyc"  # not a __pycache__ name: no tag to hold it to
    assert bytecode.loaded_instead(legacy, header(magic=wrong), SOURCE)


def test_the_source_a_pyc_stands_for() -> None:
    assert bytecode.source_of(PYC) == ("/opt/venv/lib/mod/x.py", True)
    assert bytecode.source_of("/opt/venv/lib/mod/__pycache__/x.cpython-311.opt-1.pyc") == ("/opt/venv/lib/mod/x.py",
                                                                                           True)
    assert bytecode.source_of("/opt/venv/lib/mod/x.pyc") == ("/opt/venv/lib/mod/x.py", False)
    assert bytecode.source_of("/opt/venv/lib/mod/x.txt") == (None, False)


def judge(pyc: str, layer: int, source: Source | None, installs: dict[str, set[int]],
          head: bytes | None = None) -> bytecode.Verdict | None:
    return bytecode.judge(pyc, header() if head is None else head, layer,
                          lambda path: source if source and path == source.path else None,
                          lambda path: installs.get(path, set()))


@pytest.mark.parametrize(("layer", "found"), [(3, False), (4, True)])
def test_a_pyc_run_instead_of_its_source_is_a_finding_only_when_written_after_its_install(layer: int,
                                                                                        found: bool) -> None:
    verdict = judge(PYC, layer, SOURCE, {SOURCE.path: {2, 3}})
    assert (verdict is not None) == found
    if found:
        assert (verdict.path, verdict.source) == (PYC, SOURCE.path)
        assert verdict.what == (f"compiled code Python runs instead of {SOURCE.path}, written in layer 4, not "
                                "where its source was installed (layer 2, 3)")
    # no package lists the source: the layer that wrote the source counts as its install
    assert (judge(PYC, layer, SOURCE, {}) is not None) == found


def test_a_pyc_never_loaded_is_no_finding() -> None:
    assert judge(PYC, 9, SOURCE, {}, head=header(mtime=1)) is None  # stale: compiled again
    assert judge(PYC, 9, None, {}) is None  # no source: orphaned
    assert judge("/opt/venv/lib/mod/x.txt", 9, None, {}) is None


@pytest.mark.parametrize(("layer", "installs", "what"), [
    (5, set(), "that no package lists"), (5, {4}, "written after its package's install")])
def test_a_sourceless_pyc_is_a_finding_unless_its_package_installed_it(layer: int, installs: set[int],
                                                                       what: str) -> None:
    legacy = "/opt/venv/lib/mod/y.pyc"
    verdict = judge(legacy, layer, None, {legacy: installs})
    assert verdict is not None and (verdict.path, verdict.source) == (legacy, None)
    assert verdict.what == f"compiled code with no source beside it, which Python imports as it is, {what}"
    assert judge(legacy, 4, None, {legacy: {4}}) is None  # written by its package's install
    assert judge(legacy, 3, None, {legacy: {2, 4}}) is None  # the newest install counts
    beside = Source("/opt/venv/lib/mod/y.py", 1, 0, 0)
    assert judge(legacy, layer, beside, {}) is None  # y.py wins over a legacy y.pyc
