"""The release of a flavor of several platforms (cpu: linux/amd64 and linux/arm64 in one image index), with the
engine and the registry faked: the candidate index's platform digests checked against the build's index record, each
further platform gated on its own digest (an emulated run NOT PROVEN, saying so), the push keeping each platform's
digest for the notes, the attestations on every platform's digest and on the index, and `verify` of an index."""

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from ngc_common.exit_codes import ExitCode
from ngc_paddle import attestations, cosign, engine
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.image_build import build_flavor as image_pipeline
from ngc_paddle.image_build import provenance
from ngc_paddle.release import pipeline as release_pipeline
from ngc_paddle.release import registry, verify_image
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.stages import Built, Outcome, Step, attest, bench, build, candidate, push, release_folder, scan
from ngc_paddle.release.stages import validate as validate_stage
from ngc_paddle.release.state_file import State
from tests.unit.attest_support import no_signing
from tests.unit.test_attest import V02, FakeRegistry
from tests.unit.test_attest import registry as fake_registry  # noqa: F401 (a fixture)

INDEX, AMD, ARM = ("sha256:" + c * 64 for c in "1a2")
REPO_REF = "127.0.0.1:5000/ngc-paddle"
REFS = {"linux/amd64": f"{REPO_REF}@{AMD}", "linux/arm64": f"{REPO_REF}@{ARM}"}
EMULATED = ("emulated: aarch64 programs run under qemu-user on a x86_64 CPU, so timings measure the emulator, not the "
            "image; run on a native host to prove performance")


def releases(repo: Path, root: Path) -> None:
    """The committed manifests and locks in `root`, the images named ngc-paddle (a worktree may rename its own)."""
    shutil.copytree(repo / "releases", root / "releases")
    manifest = root / "releases" / "26.12.yaml"
    manifest.write_text(re.sub(r"(?m)^image: .*$", "image: ngc-paddle", manifest.read_text()))


def inspect_answer(data: object) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess([], 0, json.dumps(data), "")


def index_entries(platforms: dict[str, str]) -> list[dict]:
    """An index as `docker manifest inspect --verbose` prints it."""
    return [{"Ref": f"{REPO_REF}@{d}", "Descriptor": {"digest": d, "platform": {"os": p.split("/")[0],
                                                                                 "architecture": p.split("/")[1]}}}
            for p, d in platforms.items()]


def test_an_index_push_is_verified_by_its_platforms(monkeypatch) -> None:
    served = {f"{REPO_REF}:26.12-cpu": index_entries({"linux/amd64": AMD, "linux/arm64": ARM}),
              f"{REPO_REF}@{INDEX}": index_entries({"linux/amd64": AMD, "linux/arm64": ARM})}
    pushed = subprocess.CompletedProcess([], 0, f"26.12-cpu: digest: {INDEX} size: 685", "")
    monkeypatch.setattr(engine, "push", lambda ref: pushed)
    monkeypatch.setattr(engine, "manifest_inspect", lambda ref, insecure=False: inspect_answer(served[ref]))
    assert registry.served_platforms(f"{REPO_REF}:26.12-cpu") == {"linux/amd64": AMD, "linux/arm64": ARM}
    assert registry.served_digest(f"{REPO_REF}:26.12-cpu") is None  # an index has no single manifest digest
    assert registry.push_and_verify(f"{REPO_REF}:26.12-cpu") == INDEX
    served[f"{REPO_REF}@{INDEX}"] = index_entries({"linux/amd64": AMD})  # the digest pushed is another index
    with pytest.raises(registry.DigestMismatch):
        registry.push_and_verify(f"{REPO_REF}:26.12-cpu")
    served[f"{REPO_REF}:one"] = {"Descriptor": {"digest": AMD}}
    assert registry.served_platforms(f"{REPO_REF}:one") is None and registry.served_digest(f"{REPO_REF}:one") == AMD


def test_a_resumed_release_finds_its_index_already_there_and_pushes_nothing(tmp_path: Path, monkeypatch) -> None:
    """docker manifest inspect shows an index's entries, not its digest: the tag serves the recorded index when it
    serves the same platforms' manifests as that digest."""
    served = {f"{REPO_REF}:26.12-cpu-candidate": index_entries({"linux/amd64": AMD, "linux/arm64": ARM}),
              f"{REPO_REF}@{INDEX}": index_entries({"linux/amd64": AMD, "linux/arm64": ARM})}
    monkeypatch.setattr(engine, "manifest_inspect", lambda ref, insecure=False: inspect_answer(served[ref]))
    monkeypatch.setattr(engine, "image_id", lambda image: INDEX)
    monkeypatch.setattr(engine, "push", lambda ref: pytest.fail(f"pushed {ref} again"))
    monkeypatch.setattr(engine, "tag", lambda image, target: pytest.fail(f"tagged {target} again"))
    state = State(tmp_path / "state.json")
    target = f"{REPO_REF}:26.12-cpu-candidate"
    key = push.digest(INDEX, "127.0.0.1:5000")
    state.record("cpu", candidate.NAME, key, "passed", f"{target}@{INDEX}", digest=INDEX, image_id=INDEX)
    lines: list[str] = []
    assert push.push_tag(state, "cpu", candidate.NAME, "ngc-paddle:26.12-cpu", target, lines.append) == INDEX
    assert lines == [f"--> push {target}: already there ({INDEX[:19]}), skipped"]
    served[target] = index_entries({"linux/amd64": AMD, "linux/arm64": "sha256:" + "9" * 64})  # moved since
    with pytest.raises(pytest.fail.Exception, match="tagged"):
        push.push_tag(state, "cpu", candidate.NAME, "ngc-paddle:26.12-cpu", target, lines.append)


def test_the_candidate_index_must_hold_the_images_the_build_folded(tmp_path: Path, monkeypatch) -> None:
    record = tmp_path / "index.json"
    record.write_text(json.dumps({"index": INDEX, "platforms": {"linux/amd64": AMD, "linux/arm64": ARM}}))
    state = State(tmp_path / "state.json")
    state.record("cpu", candidate.NAME, "k", "passed", f"{REPO_REF}@{INDEX}", digest=INDEX, image_id=INDEX)
    monkeypatch.setattr(candidate, "served_platforms", lambda ref: {"linux/amd64": AMD, "linux/arm64": ARM})
    assert candidate.platform_refs(state, "cpu", f"{REPO_REF}@{INDEX}", record) == REFS
    assert state.data["cpu"]["candidate"]["platform_digests"] == {"linux/amd64": AMD, "linux/arm64": ARM}
    assert State(tmp_path / "state.json").data["cpu"]["candidate"]["digest"] == INDEX  # read back through the model
    assert candidate.platform_refs(state, "cpu", f"{REPO_REF}@{INDEX}", record) == REFS  # a resumed run, again

    other = "sha256:" + "9" * 64
    monkeypatch.setattr(candidate, "served_platforms", lambda ref: {"linux/amd64": AMD, "linux/arm64": other})
    with pytest.raises(candidate.IndexMismatch) as err:
        candidate.platform_refs(state, "cpu", f"{REPO_REF}@{INDEX}", record)
    assert "\n" not in str(err.value) and err.value.exit_code == ExitCode.BAD_INPUT
    assert f"linux/arm64 served {other}, built {ARM}" in str(err.value) and "linux/amd64" not in str(err.value)
    record.write_text("{}")
    with pytest.raises(candidate.IndexMismatch, match="no record of the flavor's image index; fix: build"):
        candidate.platform_refs(state, "cpu", f"{REPO_REF}@{INDEX}", record)


# ---- the pipeline, each platform gated ---------------------------------------------------------------------------

@pytest.fixture
def tree(tmp_path: Path, repo: Path) -> Path:
    releases(repo, tmp_path)
    reports = tmp_path / "build" / "reports" / "26.12-cpu"
    reports.mkdir(parents=True)
    (reports / "index.json").write_text(json.dumps({"index": INDEX, "tags": ["ngc-paddle:26.12-cpu"],
                                                    "platforms": {"linux/amd64": AMD, "linux/arm64": ARM}}))
    return tmp_path


@pytest.fixture
def faked(tree: Path, monkeypatch) -> dict:
    """The engine and the registry faked; the arm64 image's gates NOT PROVEN as its emulated run says."""
    seen: dict = {"runs": [], "pushed": []}
    ids = {"ngc-paddle:26.12-cpu": INDEX, "ngc-paddle:26.12-cpu-arm64": ARM}

    def gate(stage: str):
        def work(image, *args):
            seen["runs"].append((stage, image))
            if image.endswith("-arm64") and stage != "scan":
                return Outcome("not proven", f"{stage} 40 passed, 0 failed; {EMULATED}")
            if stage == "scan":
                args[0].mkdir(parents=True, exist_ok=True)
                (args[0] / "sbom.cdx.json").write_text(json.dumps({"bomFormat": "CycloneDX", "components": []}))
            return Outcome("passed", f"{stage} ran")
        return work

    def push_tag(state, flavor, stage, image, target, say):
        seen["pushed"].append(target)
        state.record(flavor, stage, "k", "passed", target, digest=INDEX, image_id=INDEX)
        return INDEX

    monkeypatch.setattr(image_pipeline, "build", lambda flavor, say: SimpleNamespace(
        image=flavor.image, layers=[SimpleNamespace(status="built")]))
    monkeypatch.setattr(engine, "image_id", ids.get)
    monkeypatch.setattr(engine, "image_size", lambda image: 1)
    monkeypatch.setattr(engine, "host_has_nvidia_gpus", lambda: False)
    monkeypatch.setattr(build, "read_back", lambda image, flavor: {})
    monkeypatch.setattr(validate_stage, "run_validation", gate("validate"))
    monkeypatch.setattr(bench, "run_benchmarks", gate("bench"))
    monkeypatch.setattr(scan, "run_scan", gate("scan"))
    monkeypatch.setattr(push, "ensure_registry", lambda registry_: None)
    monkeypatch.setattr(push, "push_tag", push_tag)
    monkeypatch.setattr(candidate, "push_tag", push_tag)
    served = {"linux/amd64": AMD, "linux/arm64": ARM}
    monkeypatch.setattr(candidate, "served_platforms", lambda ref: served)
    monkeypatch.setattr(push, "served_platforms", lambda ref: served)
    no_signing(monkeypatch)
    return seen


def test_each_platform_is_gated_on_its_digest_and_an_emulated_one_is_not_proven(tree: Path, faked: dict) -> None:
    opts = ReleaseOptions("26.12", ["cpu"], root=tree)
    lines: list[str] = []
    with pytest.raises(release_pipeline.ReleaseNotProven) as refused:
        release_pipeline.run(opts, say=lines.append)
    assert faked["pushed"] == ["127.0.0.1:5000/ngc-paddle:26.12-cpu-candidate"]  # the candidate alone
    assert ("validate", "ngc-paddle:26.12-cpu-arm64") in faked["runs"]
    assert ("bench", "ngc-paddle:26.12-cpu-arm64") in faked["runs"]
    assert ("scan", "ngc-paddle:26.12-cpu-arm64") in faked["runs"]
    assert "cpu-arm64: validate gate NOT PROVEN (validate 40 passed, 0 failed; emulated: aarch64" in str(refused.value)
    assert "cpu-arm64: bench gate NOT PROVEN" in str(refused.value) and "\n" not in str(refused.value)
    state = State(release_folder(tree, "26.12") / "state.json").data
    assert state["cpu-arm64"]["validate"]["image_id"] == ARM and state["cpu-arm64"]["build"]["key"] == ARM
    assert state["cpu"]["candidate"]["platform_digests"] == {"linux/amd64": AMD, "linux/arm64": ARM}
    assert any(line == f"=== gates of cpu-arm64 (linux/arm64, {REPO_REF}@{ARM})" for line in lines), lines

    faked["runs"].clear()
    pushed = release_pipeline.run(ReleaseOptions("26.12", ["cpu"], root=tree, accept_unproven="emulated here"),
                                  say=lambda _l: None)
    assert pushed["cpu"]["digest"] == INDEX and faked["runs"] == []  # stored NOT PROVEN results taken as they are
    state = State(release_folder(tree, "26.12") / "state.json").data
    assert state["cpu"]["push"]["platform_digests"] == {"linux/amd64": AMD, "linux/arm64": ARM}
    notes = (tree / "release-notes" / "26.12.md").read_text()
    assert "| cpu-arm64 | validate | NOT PROVEN, pushed on a person's word | validate 40 passed, 0 failed; " \
           "emulated: aarch64 programs run under qemu-user" in notes
    assert f"| `ngc-paddle:26.12-cpu` | {INDEX} (image index) |" in notes
    assert f"| `ngc-paddle:26.12-cpu` linux/amd64 | {AMD} |" in notes
    assert f"| `ngc-paddle:26.12-cpu` linux/arm64 | {ARM} |" in notes
    assert "| `ngc-paddle:26.12-cpu-arm64` |" not in notes  # a platform of the index, not an image of its own
    matrix = (tree / "release-notes" / "support-matrix.md").read_text()
    assert f"| linux/amd64 {AMD}, linux/arm64 {ARM} |" in matrix


def test_a_flavor_released_as_one_image_after_its_index_keeps_no_rows_of_the_other_platform(
        tree: Path, faked: dict, monkeypatch) -> None:
    """`make image PLATFORMS=linux/amd64` after an index run: the tag is the amd64 image alone, released as one image;
    the arm64 gates the earlier run stored are dropped, so the notes show no platform this release does not ship."""
    release_pipeline.run(ReleaseOptions("26.12", ["cpu"], root=tree, accept_unproven="emulated here"),
                         say=lambda _l: None)
    assert "cpu-arm64" in State(release_folder(tree, "26.12") / "state.json").data
    monkeypatch.setattr(engine, "image_id", {"ngc-paddle:26.12-cpu": AMD, "ngc-paddle:26.12-cpu-arm64": ARM}.get)
    faked["runs"].clear()
    lines: list[str] = []
    release_pipeline.run(ReleaseOptions("26.12", ["cpu"], root=tree), say=lines.append)
    assert all(not image.endswith("-arm64") for _stage, image in faked["runs"]) and faked["runs"], faked["runs"]
    assert any("released as one image" in line for line in lines), lines
    assert "    note: the gates an earlier run stored for cpu-arm64 dropped" in lines
    state = State(release_folder(tree, "26.12") / "state.json").data
    assert "cpu-arm64" not in state and "platform_digests" not in state["cpu"]["candidate"]
    notes = (tree / "release-notes" / "26.12.md").read_text()
    assert "cpu-arm64" not in notes and "(image index)" not in notes and "linux/arm64 |" not in notes


def test_an_index_whose_arm64_image_moved_stops_before_its_gates(tree: Path, faked: dict, monkeypatch) -> None:
    monkeypatch.setattr(engine, "image_id", {"ngc-paddle:26.12-cpu": INDEX,
                                             "ngc-paddle:26.12-cpu-arm64": "sha256:" + "7" * 64}.get)
    with pytest.raises(release_pipeline.NgcPaddleError, match=f"ngc-paddle:26.12-cpu-arm64 is sha256:7+, not {ARM} "
                                                              "of the index gated; fix: rerun the release"):
        release_pipeline.run(ReleaseOptions("26.12", ["cpu"], root=tree), say=lambda _l: None)
    assert ("validate", "ngc-paddle:26.12-cpu-arm64") not in faked["runs"]


# ---- attestations on each platform and on the index; verify -------------------------------------------------------

@pytest.fixture
def gated_index(tmp_path: Path, repo: Path) -> tuple[Built, State]:
    """The cpu index gated: each platform's provenance, SBOM and gate verdicts where its stages write them."""
    releases(repo, tmp_path)
    key = tmp_path / "owner.key"
    key.write_text("a key")
    resolved = ResolvedRelease.load(tmp_path, "26.12").flavor("cpu").with_digest(f"{REPO_REF}@{INDEX}")
    built = Built(resolved, INDEX, 1, release_folder(tmp_path, "26.12") / "cpu",
                  ReleaseOptions("26.12", ["cpu"], root=tmp_path, key=str(key)), platform_refs=REFS)
    state = State(tmp_path / "state.json")
    for entry, digest in (("cpu", AMD), ("cpu-arm64", ARM)):
        reports = tmp_path / "build" / "reports" / f"26.12-{entry}"
        reports.mkdir(parents=True)
        (reports / provenance.FILE_NAME).write_text(json.dumps({"image_ids": [digest], "predicate": V02}))
        sbom = scan.sbom(built.folder.parent / entry)
        sbom.parent.mkdir(parents=True)
        sbom.write_text(json.dumps({"bomFormat": "CycloneDX", "components": [], "for": entry}))
        (sbom.parent / "scan.json").write_text(json.dumps({"blocked": False}))
        for stage in ("validate", "bench", "scan"):
            state.record(entry, stage, "k", "passed", f"{stage} of {entry} ran")
    return built, state


def test_each_platform_and_the_index_carry_their_own_attestations(fake_registry: FakeRegistry,  # noqa: F811
                                                                   gated_index) -> None:
    built, state = gated_index
    lines: list[str] = []
    outcome = attest.run(built, state, lines.append)
    assert outcome.status == "passed", lines
    for platform, entry, lock in (("linux/amd64", "cpu", "26.12-cpu.lock.json"),
                                  ("linux/arm64", "cpu-arm64", "26.12-cpu.arm64.lock.json")):
        held = {s["predicateType"]: s for _, s in fake_registry.held[REFS[platform]]}
        assert list(held) == [attestations.SLSA_V02, attestations.CYCLONEDX, attestations.LOCK,
                              attestations.SCAN_VERDICT, attestations.GATE_VERDICTS], platform
        assert all(attestations.subject_digests(s) == [REFS[platform].rsplit("@", 1)[1]] for s in held.values())
        assert held[attestations.LOCK]["predicate"]["file"] == f"releases/{lock}"  # that platform's own lock
        assert held[attestations.CYCLONEDX]["predicate"]["for"] == entry  # that platform's own SBOM
        assert held[attestations.GATE_VERDICTS]["predicate"]["gates"]["validate"]["detail"] == \
            f"validate of {entry} ran"
    index = fake_registry.held[f"{REPO_REF}@{INDEX}"]
    assert [s["predicateType"] for _, s in index] == [attestations.INDEX]
    assert index[0][1]["predicate"]["platforms"] == {"linux/amd64": AMD, "linux/arm64": ARM}
    assert attestations.subject_digests(index[0][1]) == [INDEX]
    assert "linux/arm64" in outcome.detail and "1 signed and verified on " + INDEX[:19] in outcome.detail


def test_verify_accepts_the_index_and_each_platform_and_names_a_failing_platform(
        fake_registry: FakeRegistry, gated_index, monkeypatch, capsys) -> None:  # noqa: F811
    built, state = gated_index
    assert attest.run(built, state, lambda _l: None).status == "passed"
    public = Path(built.opts.key + ".pub")
    public.write_text(built.opts.key + ".pub")
    monkeypatch.setattr(verify_image, "served_platforms",
                        lambda ref: {"linux/amd64": AMD, "linux/arm64": ARM} if ref.endswith(INDEX) else None)
    say = lambda _l: None  # noqa: E731
    assert verify_image.verify(f"{REPO_REF}@{INDEX}", public, say) == verify_image.Verdict(ExitCode.PASS, "")
    assert verify_image.verify(REFS["linux/arm64"], public, say).code == ExitCode.PASS

    arm = fake_registry.held.pop(REFS["linux/arm64"])  # the arm64 digest without its attestations
    missing = verify_image.verify(f"{REPO_REF}@{INDEX}", public, say)
    assert missing.code == ExitCode.FAIL and "\n" not in missing.error
    assert missing.error.startswith(f"linux/arm64 {REFS['linux/arm64']}: attestation(s) failed: provenance missing")
    assert "linux/amd64" not in missing.error and "fix: ask the release owner" in missing.error

    # the arm64 digest carrying the amd64 one's statements (attestations made for another digest)
    fake_registry.held[REFS["linux/arm64"]] = fake_registry.held[REFS["linux/amd64"]]
    other = verify_image.verify(f"{REPO_REF}@{INDEX}", public, say)
    assert other.code == ExitCode.FAIL and other.error.startswith(f"linux/arm64 {REFS['linux/arm64']}: ")
    assert f"its subject is {AMD}, not {ARM}" in other.error

    fake_registry.held[REFS["linux/arm64"]] = arm
    fewer = Path(built.opts.key).with_name("fewer.json")  # an index attestation that leaves arm64 out
    fewer.write_text(json.dumps({"platforms": {"linux/amd64": AMD}}))
    fake_registry.attest(f"{REPO_REF}@{INDEX}", built.opts.key, attestations.INDEX, fewer)
    left_out = verify_image.verify(f"{REPO_REF}@{INDEX}", public, say)
    assert left_out.code == ExitCode.FAIL and "\n" not in left_out.error
    assert f"the index's attestation names {{'linux/amd64': '{AMD}'}}, the registry's index holds" in left_out.error

    fake_registry.held[f"{REPO_REF}@{INDEX}"] = []  # the index's own attestation gone
    gone = verify_image.verify(f"{REPO_REF}@{INDEX}", public, say)
    assert gone.code == ExitCode.FAIL and gone.error.startswith(f"{REPO_REF}@{INDEX}: attestation(s) failed: "
                                                                "index missing")


def test_the_verify_command_prints_one_error_line(fake_registry: FakeRegistry, gated_index, monkeypatch,  # noqa: F811
                                                  capsys) -> None:
    from ngc_paddle.cli import main

    built, state = gated_index
    assert attest.run(built, state, lambda _l: None).status == "passed"
    public = Path(built.opts.key).with_name("cosign.pub")
    public.write_text("-----BEGIN PUBLIC KEY-----\n")
    monkeypatch.setattr(cosign, "verified", lambda ref, key, t: fake_registry.verified(ref, Path(built.opts.key +
                                                                                                 ".pub"), t))
    (Path(built.opts.key + ".pub")).write_text(built.opts.key + ".pub")
    monkeypatch.setattr(verify_image, "served_platforms",
                        lambda ref: {"linux/amd64": AMD, "linux/arm64": ARM} if ref.endswith(INDEX) else None)
    assert main(["verify", f"{REPO_REF}@{INDEX}", "--key", str(public)]) == ExitCode.PASS
    assert "==> verified: the index" in capsys.readouterr().out
    fake_registry.held.pop(REFS["linux/arm64"])
    assert main(["verify", f"{REPO_REF}@{INDEX}", "--key", str(public)]) == ExitCode.FAIL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: linux/arm64 ")


def test_a_flavor_of_one_platform_other_than_the_default_keeps_its_own_name(tmp_path: Path, repo: Path) -> None:
    """A flavor built for linux/arm64 alone is a flavor of one platform: its gates are kept under its own name, where
    the build stage put it (an entry named cpu-arm64 was a KeyError in the tally)."""
    releases(repo, tmp_path)
    resolved = ResolvedRelease.load(tmp_path, "26.12").flavor("cpu")
    manifest = resolved.manifest
    arm_only = manifest.flavors["cpu"].model_copy(update={"platforms": ["linux/arm64"]})
    resolved = dataclasses.replace(resolved, platform="linux/arm64",
                                   manifest=manifest.model_copy(update={"flavors": {**manifest.flavors,
                                                                                    "cpu": arm_only}}))
    built = Built(resolved, ARM, 1, release_folder(tmp_path, "26.12") / "cpu", ReleaseOptions("26.12", ["cpu"],
                                                                                             root=tmp_path))
    assert built.entry == "cpu" and built.on_platforms() == [built]
    tally = release_pipeline.Tally(State(tmp_path / "state.json"), lambda _l: None, None)
    tally.infos["cpu"] = {"stages": {}}  # as _build_candidates keeps the flavor
    tally.gate(built, Step("validate", "k", lambda: Outcome("passed", "ran")))
    assert tally.state.data["cpu"]["validate"]["status"] == "passed" and not tally.failures


def test_the_registry_names_an_index_s_images_as_the_scan_does() -> None:
    """An index's attestation manifests (BuildKit's unknown/unknown entries) are documents, not a platform to gate or
    verify: the registry's reading of an index leaves them out, as the scan's does (one rule, platform_choice)."""
    entries = index_entries({"linux/amd64": AMD, "linux/arm64": ARM})
    entries.append({"Descriptor": {"digest": INDEX, "platform": {"os": "unknown", "architecture": "unknown"}}})
    assert registry.platforms_of(entries) == {"linux/amd64": AMD, "linux/arm64": ARM}


def test_a_host_of_another_platform_than_the_first_is_refused_before_any_gate(tree: Path, faked: dict,
                                                                               monkeypatch) -> None:
    """The first platform's gates run the index tag, and docker runs a tag as the host's own platform: an arm64 host
    would gate its arm64 image as cpu's linux/amd64 digest."""
    from ngc_paddle import platforms

    monkeypatch.setattr(platforms.host, "machine", lambda: "aarch64")
    line = ("cpu: its gates of linux/amd64 run ngc-paddle:26.12-cpu, which this linux/arm64 host runs as its own "
            "platform's image; fix: release cpu from a linux/amd64 host")
    with pytest.raises(release_pipeline.NgcPaddleError, match=f"^{re.escape(line)}$"):
        release_pipeline.run(ReleaseOptions("26.12", ["cpu"], root=tree), say=lambda _l: None)
    assert faked["runs"] == []
