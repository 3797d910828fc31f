"""The release stages' resume keys change exactly when their inputs do, and the pipeline skips a gate whose key
is unchanged since it passed (a NOT PROVEN or accepted one always reruns).

All on the host: no engine (the build, the image's facts and each gate's work are faked; the keys are real)."""

import json
import shutil
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar, get_args

import pytest

from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.image_build import build_flavor as image_pipeline
from ngc_paddle.manifest import load_manifest
from ngc_paddle.manifest.schema import MonthOverMonth
from ngc_paddle.release import pipeline as release_pipeline
from ngc_paddle.release import state_file
from ngc_paddle.release.new import create
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.stages import (
    Built,
    Outcome,
    attest,
    bench,
    build,
    candidate,
    month_over_month,
    push,
    release_folder,
    scan,
    validate,
)
from ngc_paddle.release.stages import gates as fleet_gates
from ngc_paddle.scan.vulnerabilities import sources
from tests.unit.attest_support import no_signing
from tests.unit.fuzz_support import bench_result

GB = 1_000_000_000


@pytest.fixture
def tree(tmp_path: Path, repo: Path) -> Path:
    """The committed manifests plus a 27.01 made from 26.12, whose previous release is 26.12 (with a cpu flavor)."""
    shutil.copytree(repo / "releases", tmp_path / "releases")
    create("27.01", "26.12", tmp_path, lookup=lambda package, index, python: None, say=lambda _l: None)
    return tmp_path


def built(root: Path, release: str = "27.01", image_id: str = "sha256:aaa", spec=None, **opts) -> Built:
    loaded = ResolvedRelease.load(root, release)
    resolved = loaded.flavor("cpu")
    if spec is not None:  # the flavor as another manifest would say it
        flavors = {**resolved.manifest.flavors, "cpu": spec}
        resolved = replace(resolved, manifest=resolved.manifest.model_copy(update={"flavors": flavors}))
    return Built(resolved, image_id, 2 * GB, release_folder(root, release) / "cpu",
                 ReleaseOptions(release, root=root, **opts))


def test_the_stage_names_are_those_of_the_state_model(tree: Path) -> None:
    gates = [plan(built(tree)).name for plan in release_pipeline.GATES]
    # bench reads the A/B (a benchmark no CPU floor decides takes its verdict); month-over-month the scan's SBOM
    assert gates == ["validate", "ab", "bench", "scan", "month-over-month"]
    local = [plan(built(tree)).name for plan in release_pipeline.LOCAL_GATES]
    assert local == ["scan", "month-over-month"]  # with a fleet, validate, bench and ab are the fan-out's `gates`
    assert [build.NAME, candidate.NAME, *gates[:3], fleet_gates.NAME, *local, attest.NAME, push.NAME] == \
        list(get_args(state_file.Stage))


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
    monkeypatch.setattr(image_pipeline, "build", lambda flavor, say: SimpleNamespace(
        image=flavor.image, layers=[SimpleNamespace(status="built")]))
    monkeypatch.setattr(engine, "image_id", lambda image: seen["image_id"])
    monkeypatch.setattr(engine, "image_size", lambda image: 2 * GB)
    monkeypatch.setattr(engine, "host_has_nvidia_gpus", lambda: seen["gpu_host"])
    monkeypatch.setattr(build, "read_back", lambda image, flavor: {})
    monkeypatch.setattr(validate, "run_validation", count("validate"))
    monkeypatch.setattr(bench, "run_benchmarks", count("bench"))
    monkeypatch.setattr(scan, "run_scan", fake_scan)
    monkeypatch.setattr(month_over_month, "run_gate", lambda *a: seen["runs"].append("month-over-month") or gate(*a))
    monkeypatch.setattr(push, "ensure_registry", lambda registry: None)
    no_signing(monkeypatch)

    def candidate_pushed(state, flavor, image, registry, say):
        seen["candidate_before"] = list(seen["runs"])  # the gates that had run when the candidate was pushed
        return f"{registry}/ngc-paddle@sha256:" + "e" * 64

    def pushed(state, flavor, image, registry, say, gated=None):
        seen["pushed"] += 1
        seen["gated"] = gated
        return "sha256:" + "e" * 64

    monkeypatch.setattr(candidate, "push", candidate_pushed)
    monkeypatch.setattr(push, "push", pushed)
    return seen


def test_the_pipeline_skips_a_gate_whose_key_is_unchanged(tree: Path, faked: dict) -> None:
    # 26.12's previous release (23.01) has no cpu flavor: month-over-month has nothing to compare and passes.
    opts = ReleaseOptions("26.12", ["cpu"], root=tree)
    release_pipeline.run(opts, say=lambda _l: None)
    assert faked["runs"] == ["validate", "bench", "scan", "month-over-month"] and faked["pushed"] == 1
    # The candidate is pushed before any gate, and the release tag moved to the digest the gates ran.
    assert faked["candidate_before"] == [] and faked["gated"] == "sha256:" + "e" * 64

    faked["runs"].clear()
    lines: list[str] = []
    release_pipeline.run(opts, say=lines.append)
    assert faked["runs"] == [] and faked["pushed"] == 2  # the push stages decide their own skip
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


class FakeGates:
    """The fan-out of a fleet, faked: each flavor's cells as the test says, recorded as the real stage records them."""

    cells: ClassVar[dict[str, dict[str, dict]]] = {}
    started: ClassVar[list] = []
    references: ClassVar = None

    def __init__(self, fleet, release, benchmarks, state, say, poll_s=None, references=None, ab_size=None) -> None:
        self.state = state
        FakeGates.references = references

    def start(self, flavors, background=False) -> None:
        assert background  # the jobs are watched while the local gates run
        FakeGates.started.append(flavors)

    def wait(self) -> dict:
        from ngc_paddle.release.fleet.cells import Cell

        found = {}
        for flavor, _gpu, _image in FakeGates.started[-1]:
            cells = {p: Cell.model_validate(c) for p, c in FakeGates.cells[flavor].items()}
            for profile, cell in cells.items():
                self.state.record_profile(flavor, fleet_gates.NAME, profile, cell.model_dump(mode="json"))
            found[flavor] = fleet_gates.outcome(cells)
        return found

    def abort(self, exc) -> None:
        FakeGates.started.append(("aborted", exc))


def cell(status: str, job: str = "slurm job 7", **extra) -> dict:
    return {"key": "k" + status.replace(" ", "").replace("/", ""), "status": status, "detail": f"{status} detail",
            "profile": "cpu", "hardware": "cpu", "runner": "slurm", "job": job, "node": "vm",
            "facts": {"hostname": "vm", "gpu_count": "0"}, "validation": "PASS", "bench": {"bench-rn50": status}
            if status in ("PASS", "FAIL") else {}, "finished": "2026-12-04T00:00:00+00:00", **extra}


@pytest.fixture
def fleet_release(tree: Path, faked: dict, monkeypatch) -> ReleaseOptions:
    fleet = tree / "fleets" / "lab.yaml"
    fleet.parent.mkdir()
    fleet.write_text("profiles:\n  cpu:\n    slurm: {partition: cpu}\n")
    shutil.copytree(Path(__file__).resolve().parents[2] / "benchmarks", tree / "benchmarks")
    monkeypatch.setattr(fleet_gates, "Gates", FakeGates)
    FakeGates.started = []
    return ReleaseOptions("26.12", ["cpu"], root=tree, fleet=fleet)


def test_with_a_fleet_validate_and_bench_run_as_the_fan_out_and_the_notes_show_each_profile(
        tree: Path, faked: dict, fleet_release: ReleaseOptions) -> None:
    FakeGates.cells = {"cpu": {"cpu": cell("PASS")}}
    release_pipeline.run(fleet_release, say=lambda _l: None)
    assert faked["runs"] == ["scan", "month-over-month"]  # validate and bench ran on the fleet, not here
    assert FakeGates.started == [[("cpu", False, "127.0.0.1:5000/ngc-paddle@sha256:" + "e" * 64)]]  # by digest
    assert faked["pushed"] == 1 and faked["gated"] == "sha256:" + "e" * 64
    state = json.loads((release_folder(tree, "26.12") / "state.json").read_text())
    assert state["cpu"]["gates"]["status"] == "passed" and state["cpu"]["gates"]["profiles"]["cpu"]["job"] == \
        "slurm job 7"
    notes = (tree / "release-notes" / "26.12.md").read_text()
    assert "| cpu | gates | passed | cpu: PASS (slurm job 7 on vm) |" in notes
    assert "### Gates per hardware profile" in notes
    assert "| cpu | cpu | PASS | PASS | PASS | vm (no GPU) | slurm job 7 |  |" in notes


def test_a_profile_that_is_not_proven_holds_the_release_back_with_exit_3(tree: Path, faked: dict,
                                                                          fleet_release: ReleaseOptions) -> None:
    FakeGates.cells = {"cpu": {"cpu": cell("PASS"), "cpu-empty": cell(
        "NOT PROVEN", job=None, runner="slurm", detail="partition 'empty' has no nodes (sinfo)")}}
    with pytest.raises(release_pipeline.ReleaseNotProven, match=r"cpu: gates gate NOT PROVEN \(cpu: PASS \(slurm job "
                                                                r"7 on vm\); cpu-empty: NOT PROVEN: partition 'empty'"):
        release_pipeline.run(fleet_release, say=lambda _l: None)
    assert faked["pushed"] == 0
    notes = (tree / "release-notes" / "26.12.md").read_text()
    assert "| cpu | cpu-empty (cpu) | NOT PROVEN | PASS | - | vm (no GPU) | - | partition 'empty' has no nodes " \
           "(sinfo) |" in notes
    FakeGates.cells["cpu"]["cpu-empty"] = cell("N/A", detail="node vm shows no NVIDIA GPU (nvidia-smi found none), "
                                               "not A100-80GB")
    fleet_release.accept_unproven = "the A100 partition is drained for maintenance"
    release_pipeline.run(fleet_release, say=lambda _l: None)  # a person's word pushes it, and the notes say so
    assert faked["pushed"] == 1
    notes = (tree / "release-notes" / "26.12.md").read_text()
    assert "| cpu | gates | NOT PROVEN, pushed on a person's word |" in notes and "drained for maintenance" in notes


def test_a_failing_profile_blocks_and_an_interrupt_cancels_the_fan_out(tree: Path, faked: dict,
                                                                       fleet_release: ReleaseOptions,
                                                                       monkeypatch) -> None:
    FakeGates.cells = {"cpu": {"cpu": cell("FAIL")}}
    with pytest.raises(release_pipeline.ReleaseBlocked) as err:
        release_pipeline.run(fleet_release, say=lambda _l: None)
    assert err.value.exit_code == 1 and faked["pushed"] == 0
    monkeypatch.setattr(scan, "run_scan", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    faked["image_id"] = "sha256:two"  # a new image: the scan runs again, and is interrupted
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C while the local gates run: the fleet's jobs are cancelled
        release_pipeline.run(fleet_release, say=lambda _l: None)
    assert FakeGates.started[-1][0] == "aborted"


def test_a_bad_fleet_file_stops_before_anything_is_built_or_pushed(tree: Path, faked: dict,
                                                                    fleet_release: ReleaseOptions) -> None:
    fleet_release.fleet.write_text("profiles:\n  cpu:\n    slurm: {partition: cpu, gres: gpu}\n")
    with pytest.raises(NgcPaddleError) as err:
        release_pipeline.run(fleet_release, say=lambda _l: None)
    assert err.value.exit_code == 2 and "slurm.gres" in str(err.value) and faked["pushed"] == 0
    assert not (release_folder(tree, "26.12") / "state.json").exists()


def test_a_stage_before_the_release_tag_can_block_it(tree: Path, faked: dict, monkeypatch) -> None:
    seen = []

    def attesting(built, state, say):
        seen.append(built.resolved.reference)  # the gated digest
        return Outcome("failed", "attest: the provenance signature does not verify")

    monkeypatch.setattr(release_pipeline, "BEFORE_RELEASE_TAG", (attesting,))
    with pytest.raises(release_pipeline.ReleaseBlocked, match="cpu: attest: the provenance signature does not"):
        release_pipeline.run(ReleaseOptions("26.12", ["cpu"], root=tree), say=lambda _l: None)
    assert seen == ["127.0.0.1:5000/ngc-paddle@sha256:" + "e" * 64] and faked["pushed"] == 0


def test_the_baseline_of_a_profile_is_the_previous_releases_passing_result_on_that_profile(tree: Path) -> None:
    runs = release_folder(tree, "26.12") / "cpu" / "gates"
    release = ResolvedRelease.load(tree, "27.01")
    assert release.previous_release.release == "26.12"
    assert fleet_gates.previous_result(release, "cpu", "cpu", "bench-rn50") is None
    first = ResolvedRelease.load(tree, "23.01")
    assert fleet_gates.previous_result(first, "gpu", "cpu", "bench-rn50") is None  # a first release
    passing = runs / "cpu" / "20261201T000000000000Z" / "attempt-1" / "bench" / "bench-rn50" / "rn50-1" / "result.json"
    passing.parent.mkdir(parents=True)
    passing.write_text(json.dumps(bench_result("rn50")))
    failing = runs / "cpu" / "20261202T000000000000Z" / "attempt-1" / "bench" / "bench-rn50" / "rn50-2" / "result.json"
    failing.parent.mkdir(parents=True)
    failing.write_text(json.dumps({**bench_result("rn50"), "verdict": "FAIL", "passed": False}))  # newer, no baseline
    assert fleet_gates.previous_result(release, "cpu", "cpu", "bench-rn50") == passing
    assert fleet_gates.previous_result(release, "cpu", "A100-80GB", "bench-rn50") is None  # per profile


def test_an_unsigned_release_is_pushed_and_its_notes_say_unsigned(tree: Path, faked: dict, monkeypatch) -> None:
    monkeypatch.setattr(release_pipeline, "BEFORE_RELEASE_TAG", (attest.run,))  # the real stage, with --no-attest
    release_pipeline.run(ReleaseOptions("26.12", ["cpu"], root=tree, no_attest=True), say=lambda _l: None)
    assert faked["pushed"] == 1
    state = json.loads((release_folder(tree, "26.12") / "state.json").read_text())
    assert state["cpu"]["attest"]["status"] == "unsigned"
    notes = (tree / "release-notes" / "26.12.md").read_text()
    assert "| cpu | attest | unsigned | unsigned: --no-attest given, no attestation attached |" in notes


def test_the_read_back_gives_each_kind_of_component_its_installed_version(monkeypatch) -> None:
    """pip distributions from the probe, Debian packages (tini) from dpkg, Python and the OS by their short forms."""
    spec = load_manifest(Path(__file__).resolve().parents[2] / "releases" / "26.12.yaml").flavors["cpu"]
    commands: list[str] = []

    def fake_run(image, *cmd, flags=(), check=True):
        commands.append(cmd[-1])
        probe = {"python": "3.11.2", "distributions": {"paddlepaddle": {"version": "3.3.1"}}}
        return SimpleNamespace(returncode=0, stderr="",
                               stdout=f"tini 0.19.0-1+b3\npython3 3.11.2-1+b1\n{json.dumps(probe)}\n12\n")

    monkeypatch.setattr(engine, "run", fake_run)
    found = build.read_back("ngc-paddle:26.12-cpu", spec)
    assert "dpkg-query" in commands[0] and " tini" in commands[0]
    assert (found["tini"], found["python"], found["os"], found["paddle"]) == ("0.19.0-1+b3", "3.11", "12", "3.3.1")
    assert found["dali"] == "missing"
