"""`ngc-paddle osv import`: fill the offline OSV folder from OSV's per-ecosystem bulk export (`all.zip`).

Why: build hosts that reach no vulnerability feed still need data for the scan gate. OSV publishes
one `all.zip` per ecosystem (`PyPI/all.zip`, `Debian/all.zip`, ...); a security team mirrors it or
carries the file in. The archive is someone else's file: it is read with bounds (member count,
member and total size, compression ratio), every member must be a plain `NAME.json` (no folder,
no `..`, no absolute path, no link), and every record is checked with the gate's own OSV model.
One bad member stops the import with one line naming it, and nothing is written: records are
staged in a new folder beside the target and replace the ecosystem's folder only when all passed.
"""

import os
import re
import shutil
import stat
import tempfile
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import RootModel, ValidationError

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_paddle import outputs
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.scan.vulnerabilities.report_models import OsvAdvisory, timestamp

ECOSYSTEM_RE = re.compile(r"PyPI|Debian:[0-9]{1,3}|Ubuntu:[0-9]{2}\.[0-9]{2}(:LTS)?")  # see ngc_paddle/distro.py
MEMBER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}\.json")  # OSV ids: GHSA-..., PYSEC-..., DEBIAN-CVE-...
MAX_MEMBERS = 500_000  # PyPI's export holds ~20k records, Debian's ~100k
MAX_MEMBER_BYTES = 4 * 1024 * 1024
MAX_TOTAL_BYTES = 4 * 1024 * 1024 * 1024
MAX_ZIP_BYTES = 2 * 1024 * 1024 * 1024
MAX_RATIO = 200  # JSON compresses ~10x; far more is a zip bomb
_RECORDS = RootModel[list[OsvAdvisory]]
UNREADABLE = (zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError, EOFError, OSError, ValueError)


class OsvImportError(NgcPaddleError):
    """The bulk export cannot be imported."""


@dataclass
class Imported:
    ecosystem: str
    folder: Path
    records: int  # records with an entry for the ecosystem, written
    skipped: int  # records of other ecosystems (e.g. Debian:11 records of Debian/all.zip)
    newest: str | None  # newest `modified` of the written records


def folder_name(ecosystem: str) -> str:
    return ecosystem.replace(":", "-")  # Debian:12 -> Debian-12


def fetch(source: str, into: Path) -> Path:
    """The zip at `source`: a local path, or an http(s) URL downloaded (bounded) into `into`."""
    if not source.startswith(("http://", "https://")):
        return Path(source)
    target = into / "all.zip"
    try:
        with urllib.request.urlopen(source, timeout=60) as response, target.open("wb") as out:
            total = 0
            while chunk := response.read(1 << 20):
                total += len(chunk)
                if total > MAX_ZIP_BYTES:
                    raise OsvImportError(f"{source}: (download): more than {MAX_ZIP_BYTES} bytes; "
                                       "fix: point at the per-ecosystem all.zip")
                out.write(chunk)
    except OSError as exc:
        raise OsvImportError(f"{source}: (download): {exc}; fix: check the mirror URL, or give a local path") from None
    return target


def _check_member(zip_path: Path | str, info: zipfile.ZipInfo) -> None:
    name = info.filename
    if info.is_dir():
        return
    if not MEMBER_RE.fullmatch(name):
        raise OsvImportError(f"{zip_path}: {name[:120]!r}: not a plain NAME.json member (folders, '..', absolute "
                           "paths are refused); fix: use OSV's all.zip as published")
    if (info.external_attr >> 16) & 0o170000 not in (0, 0o100000):  # a symlink or device stored in the zip
        raise OsvImportError(f"{zip_path}: {name}: not a regular file; fix: use OSV's all.zip as published")
    if info.file_size > MAX_MEMBER_BYTES:
        raise OsvImportError(f"{zip_path}: {name}: {info.file_size} bytes, more than {MAX_MEMBER_BYTES}; "
                           "fix: use OSV's all.zip as published")
    if info.compress_size and info.file_size / info.compress_size > MAX_RATIO:
        raise OsvImportError(f"{zip_path}: {name}: compressed {info.file_size // info.compress_size}:1; "
                           "fix: use OSV's all.zip as published")


def import_zip(source: str, ecosystem: str, into: Path, say=print) -> Imported:
    """Import OSV's all.zip of `ecosystem` into `into`: checked whole before anything is read, each record
    validated, the ecosystem's folder replaced only when the import succeeds."""
    if not ECOSYSTEM_RE.fullmatch(ecosystem):
        raise OsvImportError(f"--ecosystem {ecosystem[:40]!r}: (argument): not PyPI, Debian:N or Ubuntu:YY.MM[:LTS]; "
                             "fix: e.g. --ecosystem PyPI or --ecosystem Debian:12")
    outputs.ensure_folder(into)
    with tempfile.TemporaryDirectory(prefix=".osv-import-", dir=into) as tmp:
        zip_path = fetch(source, Path(tmp))
        stage = Path(tmp) / folder_name(ecosystem)
        stage.mkdir()
        with _open_archive(zip_path) as archive:
            kept, skipped, newest = _unpack_records(zip_path, archive, ecosystem, stage)
        if kept == 0:  # an empty export, or another ecosystem's: the folder we have is better than none
            raise OsvImportError(f"{zip_path}: (archive): no records of {ecosystem} in it ({skipped} of other "
                                 f"ecosystems); fix: give the all.zip of {ecosystem} (the existing folder is kept)")
        final = into / folder_name(ecosystem)
        old = Path(tmp) / "previous"
        if final.exists():
            final.rename(old)
        stage.rename(final)  # same filesystem: the folder is replaced as a whole
        shutil.rmtree(old, ignore_errors=True)
    result = Imported(ecosystem, final, kept, skipped, newest)
    say(f"==> {ecosystem}: {kept} records -> {final}"
        + (f" ({skipped} records of other ecosystems skipped)" if skipped else "")
        + f"; newest modified {newest or 'unknown'}")
    return result


def _open_archive(zip_path: Path) -> zipfile.ZipFile:
    """The export, opened only once it is a regular file within the limits, and every member's name and size
    checked before anything is read."""
    try:
        st = os.stat(zip_path)  # a FIFO or a device would block zipfile for ever: refused before it opens
    except OSError as exc:
        raise OsvImportError(f"{zip_path}: (file): cannot be read ({exc.strerror}); fix: give the path of OSV's "
                             "all.zip") from None
    if not stat.S_ISREG(st.st_mode):
        raise OsvImportError(f"{zip_path}: (file): not a regular file; fix: give the path of OSV's all.zip")
    if st.st_size > MAX_ZIP_BYTES:
        raise OsvImportError(f"{zip_path}: (file): {st.st_size} bytes, more than {MAX_ZIP_BYTES}; fix: give "
                             "OSV's per-ecosystem all.zip")
    try:
        archive = zipfile.ZipFile(zip_path)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise OsvImportError(f"{zip_path}: (file): not a readable zip ({exc}); "
                             "fix: give OSV's per-ecosystem all.zip") from None
    members = archive.infolist()
    try:
        if len(members) > MAX_MEMBERS:
            raise OsvImportError(f"{zip_path}: (archive): {len(members)} members, more than {MAX_MEMBERS}; "
                                 "fix: use OSV's per-ecosystem all.zip")
        for info in members:  # every name and size is checked before anything is read
            _check_member(zip_path, info)
        if sum(i.file_size for i in members) > MAX_TOTAL_BYTES:
            raise OsvImportError(f"{zip_path}: (archive): more than {MAX_TOTAL_BYTES} bytes unpacked; "
                                 "fix: use OSV's per-ecosystem all.zip")
    except OsvImportError:
        archive.close()
        raise
    return archive


def _unpack_records(zip_path: Path, archive: zipfile.ZipFile, ecosystem: str,
                    stage: Path) -> tuple[int, int, str | None]:
    """Unpack each member into `stage`, validated as OSV records; a member without a record of `ecosystem` is
    dropped. (kept, skipped, the newest `modified`)."""
    kept, skipped, newest = 0, 0, None
    for info in archive.infolist():
        if info.is_dir():
            continue
        target = stage / info.filename
        try:
            with archive.open(info) as src, target.open("wb") as out:
                data = src.read(MAX_MEMBER_BYTES + 1)
                if len(data) != info.file_size:  # a size the central directory lies about
                    raise zipfile.BadZipFile(f"{len(data)} bytes where the archive says {info.file_size}")
                out.write(data)
        except UNREADABLE as exc:  # bad CRC, corrupt deflate, encrypted, unknown compression, lying sizes
            why = f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}"
            raise OsvImportError(f"{zip_path}: {info.filename}: cannot be read ({why}); fix: download the "
                                 "export again") from None
        try:
            records = bounded_read.load_json(target, OsvImportError, MAX_MEMBER_BYTES)
        except OsvImportError as exc:  # named by the export and its member, not the staged copy
            what = str(exc).removeprefix(f"{target}: (file): ").rsplit("; fix: ", 1)[0]
            raise OsvImportError(f"{zip_path}: {info.filename}: {what}; fix: download the export "
                                 "again") from None
        records = records if isinstance(records, list) else [records]
        try:
            _RECORDS.model_validate(records)
        except ValidationError as exc:
            raise OsvImportError(one_line(f"{zip_path}: {info.filename}", exc,
                                          "replace the export; OSV records follow the OSV schema")) from None
        if not any((x.get("package") or {}).get("ecosystem") == ecosystem
                   for r in records for x in r.get("affected", [])):
            target.unlink()
            skipped += 1
            continue
        kept += 1
        for r in records:
            if r.get("modified") and (newest is None or timestamp(r["modified"]) > timestamp(newest)):
                newest = r["modified"]
    return kept, skipped, newest
