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
from ngc_paddle.lock.layer_args import os_args
from ngc_paddle.release.stages import notes
from ngc_paddle.scan.checks.image_checks import release_of
from ngc_paddle.scan.source.image_release import of_image

HERE = Path(__file__).resolve().parent / "golden" / "resolve_once"
MIRROR = {"pypi": "https://mirror.example/pypi/simple"}
BASE = "ngc-paddle-base:bookworm@sha256:" + "ab" * 32


def reports(root: Path) -> dict:
    release = ResolvedRelease.load(root, "26.12", MIRROR)
    plain = ResolvedRelease.load(root, "26.12")
    out = {"bake_override": bakefile.override_text(plain)}
    flavors = {}
    for name, f in release.flavors().items():
        status = "unusable" if f.lock_problem else "ok" if f.lock is not None else "pending"
        rel = release_of(of_image({"config": {"Labels": {"ngc-paddle.release": "26.12", "ngc-paddle.flavor": name,
                                                         "ngc-paddle.layer": f.layers[0]}}}, None, root, {}))
        shown = plain.flavor(name)
        flavors[name] = {
            "manifest_text": f.manifest_text,
            "manifest_show": json.dumps(shown.declared_manifest, indent=2),
            "lock_os_args": os_args(shown.manifest, shown.spec, "debian:bookworm", None, shown.apt_packages),
            "layer_check_manifest": layer_checks.resolved_manifest(
                root, layer_checks.LayerImage("26.12", name, f.layers[-1])),
            "lock_status": status, "tags": list(f.tags), "layer_tags": dict(f.layer_tags), "pending": f.pending,
            "scan_release": {"flavor": rel.flavor, "why_no_lock": rel.why_no_lock,
                             "layers": sorted(rel.layers or []), "lock": rel.lock is not None},
        }
        if name == "gpu-cu118":
            labels = {t: {"ngc-paddle.inputs": "sha256:" + "cd" * 32} for t in bakefile.flavor_targets(f)}
            cache = bakefile.registry_cache(f, "127.0.0.1:5000")
            out["bake_build"] = bakefile.definition_text(bakefile.bake_definition(release, {name: BASE}, labels, cache))
    out["flavors"] = flavors
    data = notes.load_record(notes.record_path(root, "26.12"))
    out["notes"] = notes.notes_text(plain, data["flavors"], notes.known_issues(root, "26.12"))
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


def _entries_into_resolve(trip) -> list[tuple[str, str]]:
    """(calling file, function) of each call into manifest/resolve.py from another file while `trip` runs."""
    import ngc_paddle.manifest.resolve as resolve_module

    target = resolve_module.__file__
    seen: list[tuple[str, str]] = []

    def profile(frame, event, _arg) -> None:
        if event == "call" and frame.f_code.co_filename == target and frame.f_back is not None \
                and frame.f_back.f_code.co_filename != target:
            seen.append((Path(frame.f_back.f_code.co_filename).name, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        trip()
    finally:
        sys.setprofile(None)
    return seen


def test_a_build_trip_enters_the_resolver_once_per_flavor() -> None:
    """What `make image` computes on the host for one flavor (the run's release with a mirror, the flavor, its
    inputs digests, the bake file naming every flavor, the cache settings, the manifest the checks expect): the
    resolver is entered from flavor.py only, once for the mirrors and once per flavor, however often asked."""
    from ngc_paddle.image_build import nochange

    counted = {}

    def trip() -> None:
        release = ResolvedRelease.load(HERE.parents[3], None, MIRROR)  # the repository: its layers are hashed
        counted["flavors"] = len(release.manifest.flavors)
        flavor = release.flavor("cpu")
        assert release.flavor("cpu") is flavor  # asked again: the same, not resolved again
        inputs = nochange.compute_inputs(flavor, BASE, "sha256:" + "ef" * 32)
        labels = nochange.layer_labels(flavor.name, inputs)
        bakefile.bake_definition(flavor.release_run, {flavor.name: BASE}, labels,
                                 bakefile.registry_cache(flavor, "127.0.0.1:5000"))
        assert flavor.image_manifest["flavor"] == "cpu" and flavor.layer_args("suite")["MANIFEST_JSON"]

    entries = _entries_into_resolve(trip)
    flavors = counted["flavors"]
    assert sorted(entries) == sorted([("flavor.py", "apply_source_overrides")]
                                     + [("flavor.py", "image_manifest")] * flavors), entries


def test_the_entry_counter_sees_a_second_resolution() -> None:
    """The counter above is not blind: a module below that resolves again is seen, with its file."""
    from ngc_paddle.manifest.resolve import flavor_of

    release = ResolvedRelease.load(HERE, "26.12")
    assert _entries_into_resolve(lambda: flavor_of(release.manifest, "cpu")) == [
        ("test_resolve_once.py", "flavor_of")]
