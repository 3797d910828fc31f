"""Which layers are ours rests on diff ids our build recorded, never on the history's text (issue 30): a derived
image's step that mentions /opt/ngc-paddle or copies layers/os/... is that step, and what it writes where our
layers declare files (the CA bundle, /etc/passwd) is a finding."""

import json
from pathlib import Path

import pytest

from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.scan import gate
from ngc_paddle.scan.checks import image_checks, integrity
from ngc_paddle.scan.source import own_layers
from ngc_paddle.scan.source.image_release import ImageRelease
from ngc_paddle.scan.source.saved_image import image_layers, step_text
from tests.unit.layer_tars import Member, facts

REPO = Path(__file__).resolve().parents[2]
FLAVOR = ResolvedRelease.load(REPO, "26.12").flavor("cpu")
LABELS = {"ngc-paddle.release": "26.12", "ngc-paddle.flavor": "cpu"}
BASE, OS1, OS2, DALI, PADDLE, SUITE = (f"sha256:{n:064x}" for n in range(1, 7))
DERIVED = [f"sha256:{n:064x}" for n in (7, 8)]
OURS_BY_LAYER = {"os": [BASE, OS1, OS2], "dali": [BASE, OS1, OS2, DALI], "paddle": [BASE, OS1, OS2, DALI, PADDLE],
                 "suite": [BASE, OS1, OS2, DALI, PADDLE, SUITE]}
HISTORY = ["ADD rootfs.tar / # buildkit", "ADD layers/os/etc.tar / # buildkit",
           'RUN |7 APT_MIRROR=x APT_PACKAGES=ca-certificates /bin/sh -c install.sh # buildkit',
           'RUN |2 LAYER_SPEC={"flavor": "cpu", "layer": "dali"} /bin/bash -c x # buildkit',
           'RUN |2 LAYER_SPEC={"flavor": "cpu", "layer": "paddle"} /bin/bash -c x # buildkit',
           'RUN |3 LAYER_SPEC={"flavor": "cpu", "layer": "suite"} /bin/bash -c x # buildkit',
           # a derived image: steps whose text once made them `suite` and `os`
           "RUN /bin/sh -c cat /tmp/ca.pem >> /etc/ssl/certs/ca-certificates.crt && ls /opt/ngc-paddle # buildkit",
           "COPY layers/os/passwd /etc/passwd # buildkit"]


def config(diff_ids: list[str]) -> dict:
    return {"history": [{"created_by": h} for h in HISTORY[: len(diff_ids)]], "rootfs": {"diff_ids": diff_ids}}


def inspector(images: dict[str, list[str]]):
    def inspect(refs: list[str]) -> dict[str, dict]:
        return {r: {"RootFS": {"Layers": images[r]}} for r in refs if r in images}
    return inspect


def write_report(root: Path) -> None:
    folder = root / "build" / "reports" / "26.12-cpu"
    folder.mkdir(parents=True)
    folder.joinpath("build.json").write_text(json.dumps({"base_image": "ngc-paddle-base:bookworm", "layers": [
        {"layer": layer, "image_id": f"sha256:{layer}-image"} for layer in OURS_BY_LAYER]}))


REPORTED = {"ngc-paddle-base:bookworm": [BASE],
            **{f"sha256:{layer}-image": ids for layer, ids in OURS_BY_LAYER.items()}}
TAGGED = {"ngc-paddle-base:bookworm": [BASE], **{FLAVOR.layer_tags[layer]: ids for layer, ids in OURS_BY_LAYER.items()}}


def test_a_derived_images_layers_are_named_by_their_steps_whatever_their_text_says(tmp_path: Path) -> None:
    write_report(tmp_path)
    layers = image_layers(config(OURS_BY_LAYER["suite"] + DERIVED), 8)
    assert [layer.name for layer in layers][6:] == ["suite", "os"]  # what the text alone made of them
    found = own_layers.attribute(layers, LABELS, tmp_path, ImageRelease(FLAVOR), inspect=inspector(REPORTED))
    assert (found.ours, found.claims, found.missing) == (6, "26.12 cpu", False) and "build report" in found.source
    assert [layer.name for layer in layers] == ["base", "os", "os", "dali", "paddle", "suite",
                                                step_text(HISTORY[6]), "COPY layers/os/passwd /etc/passwd"]


def test_what_a_derived_layer_writes_where_ours_declare_files_is_a_finding(tmp_path: Path) -> None:
    write_report(tmp_path)
    layers = image_layers(config(OURS_BY_LAYER["suite"] + DERIVED), 8)
    own_layers.attribute(layers, LABELS, tmp_path, ImageRelease(FLAVOR), inspect=inspector(REPORTED))
    bundle, passwd = "/etc/ssl/certs/ca-certificates.crt", "/etc/passwd"
    members = [[Member("/etc/hostname", b"base\n")], [Member(bundle, b"the os layer's bundle\n")], [], [], [],
               [Member(passwd, b"root:x:0:0::/root:/bin/bash\npaddle:x:1000:1000::/home/paddle:/bin/bash\n")],
               [Member(bundle, b"the os layer's bundle\nplus a planted CA\n")],
               [Member(passwd, b"root:x:0:0::/root:/bin/bash\nevil:x:0:0::/root:/bin/bash\n")]]
    stack = [facts(i, m, layers[i].name) for i, m in enumerate(members)]
    for at, layer in zip(stack, layers, strict=True):
        at[0].name = layer.name
    declared = integrity.load_declarations(REPO)
    clean = integrity.check(layers[:6], [f for _, f in stack[:6]], {}, declared)
    assert clean == []  # our own layers' declared files
    found = integrity.check(layers, [f for _, f in stack], image_checks.owned_by_dists([]), declared)
    assert {(f.kind, f.id, f.package) for f in found} == {("integrity", "unowned-file", bundle),
                                                          ("integrity", "unowned-file", passwd)}, found


def test_the_layer_images_on_this_engine_record_the_chain_where_no_build_report_is(tmp_path: Path) -> None:
    layers = image_layers(config(OURS_BY_LAYER["paddle"]), 5)
    found = own_layers.attribute(layers, LABELS, tmp_path, ImageRelease(FLAVOR), inspect=inspector(TAGGED))
    assert found.ours == 5 and "layer images" in found.source and not found.missing


def test_an_arm64_image_is_held_to_its_own_platforms_build_record(tmp_path: Path) -> None:
    """The arm64 build writes build/reports/26.12-cpu-arm64/ (the amd64 one's is 26.12-cpu): the scan of the index's
    arm64 image reads that record, and says so."""
    arm64 = ResolvedRelease.load(REPO, "26.12").flavor("cpu", "linux/arm64")
    folder = tmp_path / "build" / "reports" / "26.12-cpu-arm64"
    folder.mkdir(parents=True)
    folder.joinpath("build.json").write_text(json.dumps({"base_image": arm64.lock.base.image, "layers": [
        {"layer": layer, "image_id": f"sha256:{layer}-image"} for layer in OURS_BY_LAYER]}))
    recorded = {arm64.lock.base.image: [BASE], **{f"sha256:{layer}-image": ids for layer, ids in OURS_BY_LAYER.items()}}
    layers = image_layers(config(OURS_BY_LAYER["suite"]), 6)
    found = own_layers.attribute(layers, LABELS, tmp_path, ImageRelease(arm64), inspect=inspector(recorded))
    assert (found.ours, found.claims) == (6, "26.12 cpu-arm64") and "26.12-cpu-arm64/build.json" in found.source


def test_without_any_record_of_the_build_nothing_is_ours_and_the_report_says_what_was_missing(tmp_path: Path) -> None:
    layers = image_layers(config(OURS_BY_LAYER["suite"]), 6)
    found = own_layers.attribute(layers, LABELS, tmp_path, ImageRelease(FLAVOR), inspect=inspector({}))
    assert (found.ours, found.missing) == (0, True) and "build/reports/26.12-cpu/build.json" in found.source
    assert [layer.name for layer in layers][1:3] == ["ADD layers/os/etc.tar /", "RUN install.sh"]
    report = {"vulnerabilities": {"status": "scanned"}, "own_layers": found.as_dict()}
    line = next(p for p in gate.not_run_parts(report) if p.startswith("own layers: NOT RUN"))
    assert "26.12 cpu" in line and "fix: " in line


@pytest.mark.parametrize("bottom", [[BASE, OS1, f"sha256:{99:064x}"], [f"sha256:{98:064x}"]])
def test_an_image_whose_layers_differ_from_the_recorded_chain_has_no_layer_of_ours(tmp_path: Path,
                                                                                  bottom: list[str]) -> None:
    write_report(tmp_path)
    layers = image_layers(config(bottom), len(bottom))
    found = own_layers.attribute(layers, LABELS, tmp_path, ImageRelease(FLAVOR), inspect=inspector(REPORTED))
    assert found.ours == len(bottom) - 1 and not found.missing
    assert "os" not in [layer.name for layer in layers[found.ours:]]


def test_an_image_naming_no_release_of_ours_keeps_its_base_and_loses_the_names_its_text_gave() -> None:
    layers = image_layers(config(OURS_BY_LAYER["os"]), 3)
    found = own_layers.attribute(layers, {}, REPO, ImageRelease(None, "no labels"), inspect=inspector(TAGGED))
    assert (found.ours, found.claims, found.missing) == (0, None, False)
    assert layers[0].name == "base" and "os" not in [layer.name for layer in layers]


def test_the_build_record_is_read_where_the_flavor_keeps_its_reports(tmp_path: Path, monkeypatch) -> None:
    """One owner of the reports folder's path (ResolvedFlavor.reports_dir): the scan reads the build record there."""
    monkeypatch.setattr(type(FLAVOR), "reports_dir", property(lambda f: f.root / "build" / "elsewhere" / f.build_name))
    layers = image_layers(config(OURS_BY_LAYER["suite"]), 6)
    found = own_layers.attribute(layers, LABELS, tmp_path, ImageRelease(FLAVOR), inspect=inspector({}))
    assert "build/elsewhere/cpu/build.json" in found.source
