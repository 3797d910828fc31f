"""The files registered for the generic property-based test (fuzz_support.register): the lock, the notes' record,
OSV's bulk export. Other files (fleets, attestations) register themselves the same way in their own module."""

import dataclasses
import io
import json
import zipfile
from functools import cache
from pathlib import Path
from types import MappingProxyType

from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.layers import LAYER_ORDER
from ngc_paddle.lock.check import lock_status
from ngc_paddle.lock.layer_args import layer_args, source_date_epoch
from ngc_paddle.lock.subject import ManifestFlavor
from ngc_paddle.manifest import load_manifest
from ngc_paddle.release.stages.notes import load_record, notes_text
from ngc_paddle.scan.checks import drift
from ngc_paddle.scan.vulnerabilities.osv_import import OsvImportError, import_zip
from tests.unit.fuzz_support import REPO, Reader, json_bytes, register

MANIFEST = REPO / "releases" / "26.12.yaml"
LOCK = REPO / "releases" / "26.12-cpu.lock.json"
RECORD = REPO / "release-notes" / "inputs" / "26.12.json"
OSV = sorted((REPO / "tests" / "data" / "osv").glob("*.json")) + sorted((REPO / "tests" / "data" / "osv-image")
                                                                        .glob("*.json"))


@cache
def manifest():
    return load_manifest(MANIFEST)


@cache
def release() -> ResolvedRelease:
    return ResolvedRelease.load(REPO, "26.12")


def _read_lock(path: Path):
    """As every build and `manifest check` read it: the file, then its agreement with the manifest."""
    _status, lock = lock_status(ManifestFlavor(manifest(), "cpu"), path.parent)
    return lock


def _use_lock(lock, _path: Path) -> None:
    """An accepted lock must give every layer its build arguments and the scan its expected packages."""
    source_date_epoch(lock)
    for layer in manifest().flavors["cpu"].layers:
        assert layer in LAYER_ORDER
        flavor = dataclasses.replace(ResolvedRelease(REPO, manifest(), MappingProxyType({})).flavor("cpu"), lock=lock)
        layer_args(flavor, layer, "ngc-paddle-base:bookworm")
    drift.expected_debian(lock)
    drift.expected_python(lock)


register(Reader("lock", "26.12-cpu.lock.json", LOCK.read_bytes, json.loads, json_bytes, _read_lock,
                use=_use_lock))


def _use_record(record: dict, _path: Path) -> None:
    text = notes_text(release(), record["flavors"], None)
    table = text.split("## Release gates", 1)[1].split("\n\n", 2)[1]
    assert all(line.count(" | ") - line.count("\\|") == 3 for line in table.splitlines()[2:]), table


register(Reader("notes-record", "26.12.json", RECORD.read_bytes, json.loads, json_bytes, load_record,
                use=_use_record))


def _zip_of(members: object) -> bytes:
    """An export of `members` (name -> record); anything else a mutation made of them, as one member."""
    if not isinstance(members, dict):
        members = {"GHSA-all.json": members}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, record in members.items():
            archive.writestr(str(name)[:200] or "x", json.dumps(record) if not isinstance(record, str) else record)
    return out.getvalue()


def _osv_sample() -> bytes:
    return _zip_of({p.name: json.loads(p.read_text()) for p in OSV})


def _members(raw: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        return {i.filename: json.loads(archive.read(i)) for i in archive.infolist()}


def _osv_import(path: Path):
    """`osv import` over a folder that already holds records: a refused export must leave them as they were."""
    into = path.parent / "osv"
    (into / "PyPI").mkdir(parents=True, exist_ok=True)
    (into / "PyPI" / "KEEP.json").write_text("{}")
    try:
        return import_zip(str(path), "PyPI", into, say=lambda _line: None)
    except OsvImportError:
        assert (into / "PyPI" / "KEEP.json").read_text() == "{}", "a refused import replaced the folder"
        raise


def _use_import(result, _path: Path) -> None:
    assert result.records > 0 and result.folder.is_dir()


register(Reader("osv-export", "all.zip", _osv_sample, _members, _zip_of, _osv_import, (OsvImportError,),
                use=_use_import))


def _read_fleet(path: Path):
    from ngc_paddle.release.fleet import fleet_schema

    return fleet_schema.load(path, REPO)


def _use_fleet(fleet, _path: Path) -> None:
    from ngc_paddle.release.fleet import fleet_schema

    for name, profile in fleet.profiles.items():
        assert fleet_schema.hardware_of(name, profile)


def _yaml_bytes(data) -> bytes:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode()


def _yaml_load(raw: bytes):
    import yaml

    return yaml.safe_load(raw)


FLEET = REPO / "fleets" / "example-gpu-site.yaml"
if FLEET.is_file():
    register(Reader("fleet", "fleet.yaml", FLEET.read_bytes, _yaml_load, _yaml_bytes, _read_fleet, use=_use_fleet))
