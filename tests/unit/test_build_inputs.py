"""Inputs digests and the no-change shortcut: what changes a digest, what does not, when the build is skipped."""

import json
from pathlib import Path

import pytest

from ngc_paddle import engine
from ngc_paddle.attestations import SLSA_V02
from ngc_paddle.flavor import resolve
from ngc_paddle.image_build import build_flavor, inputs, nochange, provenance
from ngc_paddle.image_build.scratch import scratch_copy
from tests.conftest import REPO

BASE_ID = "sha256:" + "b" * 64
FLAVOR = "cpu"


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scratch_copy(REPO, tmp_path_factory.mktemp("inputs") / "repo", "ngc-paddle-unit")


def digests(root: Path, base_id: str = BASE_ID) -> nochange.FlavorInputs:
    return nochange.compute_inputs(resolve(root, "26.12", FLAVOR), "ngc-paddle-base:bookworm", base_id)


def edited(path: Path, extra: str = "\n# edited by a test\n"):
    """Context manager-free edit: returns a function that restores the file."""
    text = path.read_text()
    path.write_text(text + extra)
    return lambda: path.write_text(text)


def changed(before: nochange.FlavorInputs, after: nochange.FlavorInputs) -> list[str]:
    return [layer for layer in before.layers if before.layers[layer] != after.layers[layer]]


def test_digests_are_stable_and_the_top_one_is_the_whole(copy: Path) -> None:
    first, second = digests(copy), digests(copy)
    assert first == second
    assert list(first.layers) == ["os", "dali", "paddle", "suite"]
    assert first.layers["suite"] == first.image
    assert len(set(first.layers.values())) == 4 and all(d.startswith("sha256:") for d in first.layers.values())


@pytest.mark.parametrize(("path", "expected"), [
    ("README.md", []),  # not in the build context
    ("releases/23.01.yaml", []),  # another release
    ("layers/cuda/install.sh", ["suite"]),  # in the context, used by no cpu layer: only the whole changes
    ("layers/dali/install.sh", ["dali", "paddle", "suite"]),  # dali's own file: dali and every layer above
    ("layers/lib/install_pip_layer.py", ["dali", "paddle", "suite"]),  # mounted by every pip layer, not by os
    ("layers/os/install.sh", ["os", "dali", "paddle", "suite"]),
    ("validation/layers/paddle/test_build.py", ["suite"]),  # copied by the suite layer only
    ("docker-bake.hcl", ["suite"]),
    ("ngc_paddle/image_build/build_flavor.py", ["suite"]),  # tooling that shapes the build: the whole only
    ("ngc_paddle/cli.py", []),
])
def test_what_a_change_changes(copy: Path, path: str, expected: list[str], monkeypatch) -> None:
    monkeypatch.setattr(inputs, "_PACKAGE", copy / "ngc_paddle")  # the tooling hashed is the running package's
    before = digests(copy)
    target = copy / path
    existed = target.exists()
    if not existed:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("# new\n")
        restore = target.unlink
    else:
        restore = edited(target)
    try:
        assert changed(before, digests(copy)) == expected
    finally:
        restore()
    assert digests(copy) == before


def test_ignored_files_and_the_tooling_of_the_copy_do_not_count(copy: Path) -> None:
    before = digests(copy)
    junk = copy / "validation" / "__pycache__" / "x.cpython-311.pyc"
    junk.parent.mkdir(exist_ok=True)
    junk.write_bytes(b"\0")
    (copy / "build" / "bake").mkdir(parents=True, exist_ok=True)
    (copy / "build" / "bake" / "26.12.json").write_text("{}")
    try:
        assert digests(copy) == before
    finally:
        junk.unlink()


def test_the_lock_and_the_base_change_what_they_feed(copy: Path) -> None:
    before = digests(copy)
    assert changed(before, digests(copy, "sha256:" + "c" * 64)) == ["os", "dali", "paddle", "suite"]
    lock_file = copy / "releases" / "26.12-cpu.lock.json"
    text = lock_file.read_text()
    lock = json.loads(text)
    entry = next(e for e in lock["pip"] if e["layer"] == "paddle")
    entry["sha256"] = "0" * 64
    lock_file.write_text(json.dumps(lock, indent=1))
    try:
        assert changed(before, digests(copy)) == ["paddle", "suite"]
    finally:
        lock_file.write_text(text)


def test_context_follows_dockerignore(copy: Path) -> None:
    files = inputs.context_files(copy)
    assert "layers/os/install.sh" in files and "security/policy.yaml" in files
    assert "ngc_common/secret_patterns.py" in files and "ngc_paddle/cli.py" not in files
    assert "README.md" not in files and "Dockerfile" not in files and "releases/26.12.yaml" not in files
    assert not any("__pycache__" in f for f in files)


def test_dockerfile_sources() -> None:
    text = ("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nARG MANIFEST_FILE=build/manifests/missing.json\n"
            "RUN --mount=type=cache,target=/c \\\n    --mount=type=bind,source=layers/lib,target=/l \\\n"
            "    --mount=type=bind,from=other,source=/x,target=/x true\n"
            "COPY --chown=1:1 image/ validation/ /opt/\nCOPY ${MANIFEST_FILE} /m.json\nCOPY --from=b /a /b\n")
    assert inputs.dockerfile_sources(text, {"MANIFEST_FILE": "build/manifests/26.12-cpu.json"}) == [
        "layers/lib", "image", "validation", "build/manifests/26.12-cpu.json"]
    assert inputs.dockerfile_sources("FROM x\nRUN --mount=type=bind,target=/ctx true\n", {}) == ["."]


# ---- the shortcut decision, engine faked ------------------------------------------------------------------

EXPECTED = [nochange.Expected("os", "r-layers:26.12-cpu-os", "sha256:" + "1" * 64),
            nochange.Expected("suite", "r:26.12-cpu", "sha256:" + "2" * 64)]


def image(digest: str | None, image_id: str = "sha256:" + "a" * 64) -> dict:
    return {"Id": image_id, "Size": 100, "Config": {"Labels": {inputs.LABEL: digest} if digest else {}}}


def test_all_equal_is_unchanged() -> None:
    found = {e.tag: image(e.digest, f"sha256:{n}" * 1) for n, e in enumerate(EXPECTED)}
    found["r:26.12"] = found["r:26.12-cpu"]
    same, lines = nochange.compare(EXPECTED, ["r:26.12"], found)
    assert same
    assert lines == ["[1/2] os: unchanged (inputs sha256:111111111111…, image 0)",
                     "[2/2] suite: unchanged (inputs sha256:222222222222…, image 1)"]


def test_a_missing_tag_or_label_or_alias_builds() -> None:
    found = {e.tag: image(e.digest) for e in EXPECTED}
    same, lines = nochange.compare(EXPECTED, [], {EXPECTED[1].tag: found[EXPECTED[1].tag]})
    assert not same and lines[0] == "[1/2] os: not built (r-layers:26.12-cpu-os missing)"
    same, lines = nochange.compare(EXPECTED, [], {**found, "r:26.12-cpu": image("sha256:" + "3" * 64)})
    assert not same and lines[1].startswith("[2/2] suite: inputs changed (image aaaaaaaaaaaa has sha256:333333333333…")
    same, _ = nochange.compare(EXPECTED, [], {**found, "r:26.12-cpu": image(None)})
    assert not same
    same, lines = nochange.compare(EXPECTED, ["r:26.12"], {**found, "r:26.12": image(None, "sha256:other")})
    assert not same and lines[-1] == "r:26.12 does not point at r:26.12-cpu"


def test_the_no_change_question_answers_from_labels_and_writes_the_report(copy: Path, monkeypatch) -> None:
    flavor = resolve(copy, "26.12", FLAVOR)
    want = digests(copy)
    tags = flavor.tags
    images = {e.tag: image(e.digest, f"sha256:{e.layer}") for e in nochange.expected_images(flavor, want)}
    images[tags[1]] = images[tags[0]]
    monkeypatch.setattr(nochange, "present_base_image", lambda *_: ("ngc-paddle-base:bookworm", BASE_ID))
    monkeypatch.setattr(engine, "inspect_images", lambda refs: {r: images[r] for r in refs if r in images})
    lines: list[str] = []
    # Without the BuildKit provenance of the final image (the release signs it) the image is built again.
    assert nochange.ask(flavor, "t0", lines.append).report is None
    assert lines[-1].startswith(f"==> no BuildKit provenance of {tags[0]} recorded here")
    reports = copy / "build/reports/26.12-cpu"
    reports.mkdir(parents=True)
    (reports / provenance.FILE_NAME).write_text(json.dumps({
        "image_ids": [images[tags[0]]["Id"]], "predicateType": SLSA_V02, "predicate": {"buildType": "x"}}))
    lines.clear()
    report = nochange.ask(flavor, "t0", lines.append).report
    assert report is not None and report.status == "unchanged" and report.inputs_digest == want.image
    assert [layer.status for layer in report.layers] == ["unchanged"] * 4
    assert sum(": unchanged (inputs sha256:" in line for line in lines) == 4
    assert lines[-1].startswith(f"==> unchanged {tags[0]}, {tags[1]} (image ")
    written = json.loads((copy / "build/reports/26.12-cpu/build.json").read_text())
    assert written["status"] == "unchanged" and written["layers"][0]["inputs_digest"] == want.layers["os"]

    images["ngc-paddle-unit-layers:26.12-cpu-dali"] = image("sha256:" + "9" * 64)
    lines.clear()
    assert nochange.ask(flavor, "t0", lines.append).report is None
    assert lines[1].startswith("    [2/4] dali: inputs changed") and lines[-1].startswith("==> inputs differ")

    monkeypatch.setattr(nochange, "present_base_image", lambda *_: None)  # never bootstrapped on this path
    assert nochange.ask(flavor, "t0", lines.append).report is None


class EngineWork(Exception):
    pass


def test_build_returns_the_unchanged_report_before_any_engine_work_and_force_skips_it(copy: Path,
                                                                                     monkeypatch) -> None:
    calls: list[str] = []
    sentinel = object()

    def fake_try(*_args, **_kw):
        calls.append("try")
        return nochange.NoChange(report=sentinel)

    def engine_work() -> None:
        raise EngineWork

    monkeypatch.setattr(nochange, "ask", fake_try)
    monkeypatch.setattr(engine, "ensure_engine", engine_work)
    flavor = resolve(copy, "26.12", FLAVOR)
    assert build_flavor.build(flavor, say=lambda _: None) is sentinel
    with pytest.raises(EngineWork):
        build_flavor.build(flavor, force=True, say=lambda _: None)
    assert calls == ["try"]


@pytest.mark.parametrize(("build_base_id", "hashed"), [(BASE_ID, 1), ("sha256:" + "c" * 64, 2)])
def test_the_build_labels_with_the_inputs_the_question_hashed_on_the_same_base(copy: Path, monkeypatch,
                                                                              build_base_id: str, hashed: int) -> None:
    computed: list[str] = []
    compute = nochange.compute_inputs

    def counted(flavor, base_ref, base_id):
        computed.append(base_id)
        return compute(flavor, base_ref, base_id)

    def labelled(_release, _bases, labels, *_args):
        raise EngineWork(labels)

    monkeypatch.setattr(nochange, "compute_inputs", counted)
    monkeypatch.setattr(nochange, "present_base_image", lambda *_: ("ngc-paddle-base:bookworm", BASE_ID))
    monkeypatch.setattr(engine, "inspect_images", lambda refs: {})  # nothing built yet: the question says build
    monkeypatch.setattr(engine, "ensure_engine", lambda: None)
    monkeypatch.setattr(engine, "image_id", lambda ref: build_base_id)
    monkeypatch.setattr(build_flavor, "ensure_base_image", lambda *_a, **_k: "ngc-paddle-base:bookworm")
    monkeypatch.setattr(build_flavor, "compare_base", lambda *_a, **_k: True)
    monkeypatch.setattr(build_flavor, "write_override", lambda _release: False)
    monkeypatch.setattr(build_flavor, "write_build_inputs", labelled)
    with pytest.raises(EngineWork) as raised:
        build_flavor.build(resolve(copy, "26.12", FLAVOR), say=lambda _: None)
    assert len(computed) == hashed and computed[-1] == build_base_id
    want = digests(copy, build_base_id)
    assert raised.value.args[0] == nochange.layer_labels(FLAVOR, want)


def test_a_layer_built_on_other_layers_than_the_checked_one_below_takes_no_tag(monkeypatch) -> None:
    """Each layer's target re-solves the targets below it from BuildKit's cache; where the cache holds two results of
    one step, the layer can sit on other layers than those checked: the build stops there, naming both and the fix."""
    from ngc_paddle import engine
    from ngc_paddle.host_errors import BuildError

    layers = {"below": ["sha256:a", "sha256:b"], "good": ["sha256:a", "sha256:b", "sha256:c"],
              "other": ["sha256:a", "sha256:x", "sha256:c"]}
    monkeypatch.setattr(engine, "inspect_images", lambda refs: {
        r: {"RootFS": {"Layers": layers[r]}} for r in refs if r in layers})
    build_flavor.check_chain("below", "good", "paddle")  # sits on the checked layers
    with pytest.raises(BuildError) as err:
        build_flavor.check_chain("below", "other", "paddle")
    line = str(err.value)
    assert "\n" not in line and line.startswith("other: layer paddle was built on other layers than the checked below")
    assert "(layer 2 of 2 differs)" in line and line.endswith("then build again")
    build_flavor.check_chain("below", "missing", "paddle")  # an engine that shows no layers: nothing to compare
