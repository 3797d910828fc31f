"""The release stages' resume keys change exactly when their inputs do, and the pipeline skips a gate whose key
is unchanged since it passed (a NOT PROVEN or accepted one always reruns).

All on the host: no engine (the build, the image's facts and each gate's work are faked; the keys are real)."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import get_args

import pytest

from ngc_paddle import engine
from ngc_paddle.image_build import pipeline as image_pipeline
from ngc_paddle.manifest import load_manifest
from ngc_paddle.manifest.schema import MonthOverMonth
from ngc_paddle.release import notes as release_notes
from ngc_paddle.release import pipeline as release_pipeline
from ngc_paddle.release import state_file
from ngc_paddle.release.new import create
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.stages import (
    Built,
    Outcome,
    bench,
    build,
    month_over_month,
    push,
    release_folder,
    scan,
    validate,
)
from ngc_paddle.scan import sources
from tests.unit.fuzz_support import bench_result

GB = 1_000_000_000


@pytest.fixture
def tree(tmp_path: Path, repo: Path) -> Path:
    """The committed manifests plus a 27.01 made from 26.12, whose previous release is 26.12 (with a cpu flavor)."""
    shutil.copytree(repo / "releases", tmp_path / "releases")
    create("27.01", "26.12", tmp_path, lookup=lambda package, index, python: None, say=lambda _l: None)
    return tmp_path


def built(root: Path, release: str = "27.01", image_id: str = "sha256:aaa", spec=None, **opts) -> Built:
    manifest = load_manifest(root / "releases" / f"{release}.yaml")
    return Built(release, "cpu", spec or manifest.flavors["cpu"], f"ngc-paddle:{release}-cpu", image_id, 2 * GB,
                 release_folder(root, release) / "cpu", root, ReleaseOptions(release, root=root, **opts))


def test_the_stage_names_are_those_of_the_state_model(tree: Path) -> None:
    gates = [plan(built(tree)).name for plan in release_pipeline.GATES]
    assert gates == ["validate", "bench", "scan", "month-over-month"]  # month-over-month reads the scan's SBOM
    assert [build.NAME, *gates, push.NAME] == list(get_args(state_file.Stage))


def test_the_validate_key_is_the_image(tree: Path) -> None:
    assert validate.plan(built(tree)).key == validate.plan(built(tree)).key
    assert validate.plan(built(tree, image_id="sha256:bbb")).key != validate.plan(built(tree)).key


def test_the_bench_key_changes_with_the_benchmarks_and_the_baselines(tree: Path, monkeypatch) -> None:
    first = bench.plan(built(tree)).key
    assert bench.plan(built(tree)).key == first
    assert bench.plan(built(tree, benchmarks=("bench-rn50",))).key != first
    assert bench.plan(built(tree, image_id="sha256:bbb")).key != first

    stored = release_folder(tree, "26.12") / "cpu" / "bench" / "bench-rn50"
    passing = stored / "rn50-20261201T000000Z" / "result.json"
    passing.parent.mkdir(parents=True)
    passing.write_text(json.dumps(bench_result("rn50")))
    with_baseline = bench.plan(built(tree)).key
    assert with_baseline != first  # the previous release's result is now a baseline

    failing = stored / "rn50-20261202T000000Z" / "result.json"  # newer, but a failed run is no baseline
    failing.parent.mkdir()
    failing.write_text(json.dumps({**bench_result("rn50"), "verdict": "FAIL", "passed": False}))
    assert bench.plan(built(tree)).key == with_baseline
    newer = stored / "rn50-20261203T000000Z" / "result.json"
    newer.parent.mkdir()
    newer.write_text(json.dumps(bench_result("rn50")))
    assert bench.plan(built(tree)).key != with_baseline

    seen = []
    monkeypatch.setattr(bench, "run_benchmarks", lambda *args: seen.append(args) or Outcome("passed", "PASS"))
    bench.plan(built(tree)).run()  # the run gets the baselines its key was made of
    assert seen[0][3] == {"bench-rn50": newer}


def test_the_scan_key_changes_with_the_policy_and_the_vulnerability_data(tree: Path, monkeypatch) -> None:
    monkeypatch.setattr(sources, "trivy_cache", lambda: tree / "trivy-cache")
    policy = tree / "security" / "policy.yaml"
    policy.parent.mkdir()
    policy.write_text("severity_threshold: HIGH\n")
    osv = tree / "osv"
    osv.mkdir()
    first = scan.plan(built(tree, osv_dir=osv)).key
    assert scan.plan(built(tree, osv_dir=osv)).key == first
    policy.write_text("severity_threshold: CRITICAL\n")
    second = scan.plan(built(tree, osv_dir=osv)).key
    assert second != first
    (osv / "GHSA-x.json").write_text(json.dumps({"id": "GHSA-x", "modified": "2026-12-01T00:00:00Z"}))
    assert scan.plan(built(tree, osv_dir=osv)).key != second
    # The date is an input too (a waiver or an allowlist entry can expire): see test_scan_sources.


def test_the_month_over_month_key_changes_with_the_previous_results_and_the_reasons(tree: Path) -> None:
    first = month_over_month.plan(built(tree)).key
    assert month_over_month.plan(built(tree)).key == first
    previous = release_folder(tree, "26.12")
    sbom = scan.sbom(previous / "cpu")
    sbom.parent.mkdir(parents=True)
    sbom.write_text(json.dumps({"bomFormat": "CycloneDX", "components": []}))
    second = month_over_month.plan(built(tree)).key
    assert second != first  # the previous release's SBOM
    (previous / "state.json").write_text(json.dumps({"cpu": {"build": {
        "key": "sha256:old", "status": "passed", "detail": "", "size": 2 * GB,
        "finished": "2026-12-01T00:00:00+00:00"}}}))
    third = month_over_month.plan(built(tree)).key
    assert third != second  # its image size
    spec = load_manifest(tree / "releases" / "27.01.yaml").flavors["cpu"]
    reasons = spec.model_copy(update={"month_over_month": MonthOverMonth(size_growth="oneDNN doubles its kernels")})
    assert month_over_month.plan(built(tree, spec=reasons)).key != third  # a reason in the manifest
    assert month_over_month.plan(built(tree, image_id="sha256:bbb")).key != third

    outcome = month_over_month.plan(built(tree)).run()  # no SBOM of this image yet: nothing proven
    assert outcome.status == "not proven" and outcome.stored == {"changes": [], "since": "26.12"}


@pytest.fixture
def faked(tree: Path, monkeypatch) -> dict:
    """The build and each gate's work faked and counted; the pipeline, the keys and state.json are real."""
    seen: dict = {"runs": [], "image_id": "sha256:one", "bench": "passed", "pushed": 0, "gpu_host": False}

    def count(stage: str, status: str = "passed"):
        def work(*args):
            seen["runs"].append(stage)
            return Outcome(seen["bench"] if stage == "bench" else status, f"{stage} ran")
        return work

    def fake_scan(image, out, *args):
        seen["runs"].append("scan")
        out.mkdir(parents=True, exist_ok=True)
        (out / "sbom.cdx.json").write_text(json.dumps({"bomFormat": "CycloneDX", "components": []}))
        return Outcome("passed", "scan ran")

    gate = month_over_month.run_gate
    monkeypatch.setattr(image_pipeline, "build", lambda request, say: SimpleNamespace(
        image=f"ngc-paddle:{request.release}-{request.flavor}", layers=[SimpleNamespace(status="built")]))
    monkeypatch.setattr(engine, "image_id", lambda image: seen["image_id"])
    monkeypatch.setattr(engine, "image_size", lambda image: 2 * GB)
    monkeypatch.setattr(engine, "host_has_nvidia_gpus", lambda: seen["gpu_host"])
    monkeypatch.setattr(release_notes, "read_back", lambda image, flavor: {})
    monkeypatch.setattr(validate, "run_validation", count("validate"))
    monkeypatch.setattr(bench, "run_benchmarks", count("bench"))
    monkeypatch.setattr(scan, "run_scan", fake_scan)
    monkeypatch.setattr(month_over_month, "run_gate", lambda *a: seen["runs"].append("month-over-month") or gate(*a))
    monkeypatch.setattr(push, "ensure_registry", lambda registry: None)

    def pushed(state, flavor, image, registry, say):
        seen["pushed"] += 1
        return "sha256:" + "e" * 64

    monkeypatch.setattr(push, "push", pushed)
    return seen


def test_the_pipeline_skips_a_gate_whose_key_is_unchanged(tree: Path, faked: dict) -> None:
    # 26.12's previous release (23.01) has no cpu flavor: month-over-month has nothing to compare and passes.
    opts = ReleaseOptions("26.12", ["cpu"], root=tree)
    release_pipeline.run(opts, say=lambda _l: None)
    assert faked["runs"] == ["validate", "bench", "scan", "month-over-month"] and faked["pushed"] == 1

    faked["runs"].clear()
    lines: list[str] = []
    release_pipeline.run(opts, say=lines.append)
    assert faked["runs"] == [] and faked["pushed"] == 2  # the push stage decides its own skip
    skipped = [line.split(":")[0] for line in lines if ": unchanged since " in line]
    assert skipped == ["--> validate", "--> bench", "--> scan", "--> month-over-month"], lines
    assert any(line.endswith(", skipped (scan ran)") for line in lines)  # with the result it had
    state = json.loads((release_folder(tree, "26.12") / "state.json").read_text())
    assert state["cpu"]["scan"]["detail"] == "scan ran" and state["cpu"]["scan"]["image_id"] == "sha256:one"

    faked["runs"].clear()
    policy = tree / "security" / "policy.yaml"  # a changed policy: the scan alone runs again
    policy.parent.mkdir()
    policy.write_text("severity_threshold: HIGH\n")
    release_pipeline.run(opts, say=lambda _l: None)
    assert faked["runs"] == ["scan"]

    faked["runs"].clear()
    faked["image_id"] = "sha256:two"  # a new image: every gate runs again
    release_pipeline.run(opts, say=lambda _l: None)
    assert faked["runs"] == ["validate", "bench", "scan", "month-over-month"]


def test_a_gate_not_proven_blocks_the_push_with_exit_3_and_an_accepted_one_is_not_run_again(tree: Path,
                                                                                           faked: dict) -> None:
    faked["bench"] = "not proven"
    opts = ReleaseOptions("26.12", ["cpu"], root=tree)
    with pytest.raises(release_pipeline.ReleaseBlocked, match=r"cpu: bench gate NOT PROVEN \(bench ran; to push "
                                                              "anyway: --accept-unproven REASON\\)") as err:
        release_pipeline.run(opts, say=lambda _l: None)
    assert err.value.exit_code == 3 and faked["pushed"] == 0  # held back by missing evidence alone: NOT PROVEN

    faked["runs"].clear()
    opts.accept_unproven = "no GPU in the lab this month"
    lines: list[str] = []
    release_pipeline.run(opts, say=lines.append)
    # Same inputs (image, no GPU on this host): the stored NOT PROVEN result stands, taken on the person's word.
    assert faked["runs"] == [] and faked["pushed"] == 1
    assert any(line.startswith("--> bench: NOT PROVEN with the same inputs on ") for line in lines), lines
    entry = json.loads((release_folder(tree, "26.12") / "state.json").read_text())["cpu"]["bench"]
    assert entry["status"] == "accepted unproven" and entry["evidence"] == "bench ran"
    assert entry["detail"] == "bench ran; accepted by a person: no GPU in the lab this month"

    faked["runs"].clear()  # another reason replaces the first, never stacks on it
    opts.accept_unproven = "GPU lab booked until January"
    release_pipeline.run(opts, say=lambda _l: None)
    entry = json.loads((release_folder(tree, "26.12") / "state.json").read_text())["cpu"]["bench"]
    assert faked["runs"] == [] and entry["detail"] == "bench ran; accepted by a person: GPU lab booked until January"

    faked["runs"].clear()  # without a person's word an accepted gate is still not a passed one: it reruns
    opts.accept_unproven = None
    with pytest.raises(release_pipeline.ReleaseNotProven):
        release_pipeline.run(opts, say=lambda _l: None)
    assert faked["runs"] == ["bench"]

    faked["runs"].clear()  # a host that now offers a GPU: the gates whose evidence needs one run again
    faked["gpu_host"], faked["bench"] = True, "passed"
    opts.accept_unproven = "no GPU in the lab this month"
    release_pipeline.run(opts, say=lambda _l: None)
    assert faked["runs"] == ["validate", "bench"]


def test_a_failed_gate_beside_an_unproven_one_blocks_with_exit_1(tree: Path, faked: dict, monkeypatch) -> None:
    faked["bench"] = "not proven"
    monkeypatch.setattr(validate, "run_validation", lambda *a: Outcome("failed", "1 failed"))
    with pytest.raises(release_pipeline.ReleaseBlocked) as err:
        release_pipeline.run(ReleaseOptions("26.12", ["cpu"], root=tree), say=lambda _l: None)
    assert err.value.exit_code == 1 and "cpu: validate gate (1 failed)" in str(err.value)
