"""A flavor is resolved once, and what it feeds is what it was: every report of a build trip compared with a
golden that the code before the resolve-once change produced (issue 31), for the same inputs.

Inputs: golden/resolve_once/ holds a copy of releases/ (26.12 with its locks, and 23.01 before it) and the
notes' record, so the goldens do not move when a release is edited. Outputs compared: the bake file of the
newest release (`docker-bake.override.json`) and one build's bake file (base image, labels, cache), each
flavor's image manifest (mirrors applied, as built; and as `manifest show` and a layer image's checks see it),
the lock command's unpinned os arguments, the lock status, tags, the scan's view of the image's release, and
the release notes. Regenerate only on purpose: `python tests/unit/test_resolve_once.py > .../golden.json`.
"""

import json
import sys
from pathlib import Path

import pytest

from ngc_paddle import layer_checks
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.image_build import bakefile
from ngc_paddle.lock.check import lock_status
from ngc_paddle.lock.layer_args import layer_args
from ngc_paddle.manifest.resolve import image_manifest
from ngc_paddle.release.stages import notes
from ngc_paddle.scan.checks.image_checks import release_of

HERE = Path(__file__).resolve().parent / "golden" / "resolve_once"
MIRROR = {"pypi": "https://mirror.example/pypi/simple"}
BASE = "ngc-paddle-base:bookworm@sha256:" + "ab" * 32


def reports(root: Path) -> dict:
    release = ResolvedRelease.load(root, "26.12", MIRROR)
    plain = ResolvedRelease.load(root, "26.12")
    out = {"bake_override": bakefile.override_text(plain.manifest, root / "releases")}
    flavors = {}
    for name in release.manifest.flavors:
        f = release.flavor(name)
        status, _ = (lock_status(f.manifest, name, root / "releases") if not f.lock_problem else ("unusable", None))
        rel = release_of({"config": {"Labels": {"ngc-paddle.release": "26.12", "ngc-paddle.flavor": name,
                                                "ngc-paddle.layer": f.spec.layers[0]}}}, None, root, None)
        flavors[name] = {
            "manifest_text": f.manifest_text,
            "manifest_show": json.dumps(image_manifest(plain.manifest, name), indent=2),
            "lock_os_args": layer_args(plain.manifest, name, "os", "debian:bookworm"),
            "layer_check_manifest": layer_checks.resolved_manifest(
                root, layer_checks.LayerImage("26.12", name, f.spec.layers[-1])),
            "lock_status": status, "tags": list(f.tags), "layer_tags": dict(f.layer_tags), "pending": f.pending,
            "scan_release": {"flavor": rel.flavor, "why_no_lock": rel.why_no_lock,
                             "layers": sorted(rel.layers or []), "lock": rel.lock is not None},
        }
        if name == "gpu-cu118":
            targets = bakefile.flavor_targets(f.manifest, name)
            labels = {t: {"ngc-paddle.inputs": "sha256:" + "cd" * 32} for t in targets}
            cache = bakefile.registry_cache(f.manifest, name, "127.0.0.1:5000")
            locks = bakefile.flavor_locks(f.manifest, root / "releases", f)
            out["bake_build"] = bakefile.definition_text(
                bakefile.bake_definition(f.manifest, {name: BASE}, locks, labels, cache))
    out["flavors"] = flavors
    data = notes.load_record(notes.record_path(root, "26.12"))
    out["notes"] = notes.notes_text(plain.manifest, plain.previous, data["flavors"], notes.known_issues(root, "26.12"))
    return out


@pytest.fixture(scope="module")
def produced() -> dict:
    return json.loads(json.dumps(reports(HERE)))  # as JSON holds it (tuples as lists)


GOLDEN = json.loads((HERE / "golden.json").read_text())


@pytest.mark.parametrize("kind", sorted(k for k in GOLDEN if k != "flavors"))
def test_each_release_report_is_as_before(produced: dict, kind: str) -> None:
    assert produced[kind] == GOLDEN[kind]


@pytest.mark.parametrize("flavor", sorted(GOLDEN["flavors"]))
def test_each_flavors_reports_are_as_before(produced: dict, flavor: str) -> None:
    for kind, golden in GOLDEN["flavors"][flavor].items():
        assert produced["flavors"][flavor][kind] == golden, f"{flavor}: {kind}"


if __name__ == "__main__":
    json.dump(reports(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE), sys.stdout, indent=1, sort_keys=True)
    print()
