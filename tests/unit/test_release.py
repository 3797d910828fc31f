"""Release notes, driver requirements, `release new`, the pipeline's flavors and its registry client.

All on the host: no engine, no network (the engine calls of the pipeline are faked)."""

import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from ngc_common import bounded_read
from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import BuildError, ManifestError, NgcPaddleError
from ngc_paddle.image_build import build_flavor as image_pipeline
from ngc_paddle.manifest import load_manifest
from ngc_paddle.release import pipeline as release_pipeline
from ngc_paddle.release import registry
from ngc_paddle.release.new import create
from ngc_paddle.release.stages import Outcome
from ngc_paddle.release.stages import bench as bench_stage
from ngc_paddle.release.stages import build as build_stage
from ngc_paddle.release.stages import candidate as candidate_stage
from ngc_paddle.release.stages import notes as notes_stage
from ngc_paddle.release.stages import push as push_stage
from ngc_paddle.release.stages import scan as scan_stage
from ngc_paddle.release.stages import validate as validate_stage
from ngc_paddle.release.stages.notes import changes, notes_text, support_matrix
from ngc_paddle.release.state_file import State
from tests.unit.attest_support import no_signing


def test_changes_since_the_previous_release(repo: Path) -> None:
    old, new = load_manifest(repo / "releases/23.01.yaml"), load_manifest(repo / "releases/26.12.yaml")
    lines = changes(old.flavors["gpu"], new.flavors["gpu"])
    assert lines[0] == f"Based on CUDA {new.flavors['gpu'].cuda.version} (was 12.0.1)"
    assert f"cudnn: 8.7.0.84 -> {new.flavors['gpu'].components['cudnn'].version} (up)" in lines
    assert "os: ubuntu:20.04 20.04 -> debian:bookworm-slim 12 (changed)" in lines
    assert f"New: cufft {new.flavors['gpu'].components['cufft'].version}" in lines
    assert changes(None, new.flavors["cpu"]) == ["New flavor in this release."]
    assert changes(new.flavors["cpu"], new.flavors["cpu"]) == ["No component changed."]


def fake_index(newest: dict[str, str]):
    return lambda package, index, python: newest.get(package)


@pytest.fixture
def tree(tmp_path: Path, repo: Path) -> Path:
    shutil.copytree(repo / "releases", tmp_path / "releases")
    return tmp_path


def test_release_new_proposes_newest_versions_within_the_rules(tree: Path) -> None:
    newest = {"paddlepaddle": "3.4.0", "nvidia-dali-cuda120": "2.5.0", "pytest": "9.1.0",
              "nvidia-cuda-runtime-cu12": "12.9.79",
              "tensorrt-cu12-libs": "10.8.0", "numpy": "2.5.5", "paddle2onnx": "2.2.0"}
    path, diff, proposals = create("27.01", "26.12", tree, lookup=fake_index(newest), say=lambda _l: None)
    new = load_manifest(path)  # the result is a valid manifest
    assert new.release == "27.01"
    cpu, cu118 = new.flavors["cpu"].components, new.flavors["gpu-cu118"].components
    assert cpu["paddle"].version == "3.4.0" and cpu["dali"].version == "2.5.0" and cpu["pytest"].version == "9.1.0"
    assert cu118["numpy"].version == "1.26.4" and cu118["paddle2onnx"].version == "1.3.1"  # held
    # Paddle is built against TensorRT 10.5: TensorRT 10.8 is proposed, breaks the rule, and is taken back.
    assert new.flavors["gpu"].components["tensorrt"].version == "10.5.0"
    # The CUDA 12.9 runtime does not belong to the flavor's CUDA 12.6: taken back too.
    assert new.flavors["gpu"].components["cuda-runtime"].version == "12.6.77"
    notes = {(p.package, p.old): p.note for p in proposals}
    assert notes[("tensorrt-cu12-libs", "10.5.0")].startswith("kept: 10.8.0 breaks a rule")
    assert notes[("numpy", "1.26.4")].startswith("held: Paddle 2.6")
    assert notes[("paddlepaddle-gpu", "3.3.1")].startswith("kept: https://www.paddlepaddle.org.cn")  # no answer
    assert '-release: "26.12"' in diff and '+release: "27.01"' in diff
    assert "-      paddle: {layer: paddle, kind: pip, package: paddlepaddle, version: 3.3.1" in diff
    assert "# " in path.read_text().splitlines()[0]  # comments survive


def test_release_new_refuses_to_overwrite(tree: Path) -> None:
    create("27.01", "26.12", tree, lookup=fake_index({}), say=lambda _l: None)
    with pytest.raises(ManifestError, match="exists already"):
        create("27.01", "26.12", tree, lookup=fake_index({}), say=lambda _l: None)


def test_notes_of_two_consecutive_manifests(tree: Path) -> None:
    path, _diff, _ = create("27.01", "26.12", tree, lookup=fake_index({"paddlepaddle": "3.4.0"}),
                            say=lambda _l: None)
    current = ResolvedRelease.load(tree, path.stem)
    assert current.previous_release.release == "26.12"
    text = notes_text(current, {"cpu": {"image": "ngc-paddle:27.01-cpu", "stages": {}}}, "Known: none.")
    section = text.split("Changes since 26.12 (cpu):", 1)[1].split("Changes since", 1)[0]
    assert [line for line in section.splitlines() if line.startswith("- ")] == ["- paddle: 3.3.1 -> 3.4.0 (up)"]
    assert text.startswith("# PaddlePaddle Release 27.01") and "## Driver Requirements" in text
    matrix = support_matrix([current.previous_release.manifest, current.manifest])
    assert "| 27.01 | cpu |" in matrix and "| 26.12 | gpu |" in matrix


# --- the release pipeline's flavors, merged notes and registry client (no engine: the engine calls are faked) ---

RELEASE = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "releases").glob("*.yaml"))[-1]
CPU_DIGEST, CU118_DIGEST = "sha256:" + "c" * 64, "sha256:" + "d" * 64


def _entry(status: str, detail: str, **extra) -> dict:
    return {"key": "k", "status": status, "detail": detail, "finished": "2026-12-01T00:00:00+00:00", **extra}


@pytest.fixture
def notes_tree(tree: Path, repo: Path) -> Path:
    """A repository tree with the manifests, a hand-written known-issues file and a stored cpu benchmark."""
    (tree / "release-notes" / "known-issues").mkdir(parents=True)
    (tree / "release-notes" / "known-issues" / f"{RELEASE}.md").write_text("- Hand-written: DALI needs /dev/shm.\n")
    result = tree / "build" / "release" / RELEASE / "cpu" / "bench" / "bench-rn50" / "20261201-000000"
    result.mkdir(parents=True)
    (result / "result.md").write_text("# bench-rn50: PASS\n| gate | verdict |\n| train img/s | PASS 9.1 |\n")
    return tree


def _two_flavor_state() -> dict:
    return {
        "cpu": {"build": _entry("passed", "ngc-paddle:x-cpu 111 (cached)", key="sha256:cpu-image",
                                image=f"ngc-paddle:{RELEASE}-cpu", readback={"paddle": "3.3.1"}),
                "validate": _entry("passed", "65 passed, 0 failed", image_id="sha256:cpu-image"),
                "scan": _entry("passed", "0 blocking", image_id="sha256:cpu-image"),
                "push": _entry("passed", "pushed", digest=CPU_DIGEST, image_id="sha256:cpu-image")},
        "gpu-cu118": {"build": _entry("passed", "ngc-paddle:x-gpu-cu118 222 (built)", key="sha256:cu118-image",
                                      image=f"ngc-paddle:{RELEASE}-gpu-cu118", readback={"paddle": "2.6.2"}),
                      "validate": _entry("accepted unproven", "GPU checks skipped; accepted by a person: lab",
                                         image_id="sha256:cu118-image"),
                      "bench": _entry("passed", "bench-rn50: PASS", image_id="sha256:an-earlier-image"),
                      "push": _entry("passed", "pushed", digest=CU118_DIGEST, image_id="sha256:cu118-image")},
    }


def test_notes_merge_every_stored_flavor_and_the_known_issues(notes_tree: Path) -> None:
    # The committed record still holds gpu from an earlier run (not built then); the state holds cpu and gpu-cu118.
    old = {"release": RELEASE, "flavors": {"gpu": {"not_built": "layer tensorrt: pypi.nvidia.com unreachable",
                                                   "stages": {"build": _entry("failed", "unreachable")}}}}
    (notes_tree / "release-notes" / "inputs").mkdir(parents=True)
    (notes_tree / "release-notes" / "inputs" / f"{RELEASE}.json").write_text(json.dumps(old))
    state = State(notes_tree / "build" / "release" / RELEASE / "state.json")
    state.data = _two_flavor_state()
    release = ResolvedRelease.load(notes_tree, RELEASE)
    text = notes_stage.write(release, state).read_text()

    gates = text.split("## Release gates", 1)[1].split("\n## ", 1)[0]
    assert "| cpu | validate | passed | 65 passed, 0 failed |" in gates and "| cpu | scan | passed |" in gates
    assert "| gpu-cu118 | validate | NOT PROVEN, pushed on a person's word |" in gates
    assert "| gpu-cu118 | bench | stale | ran on an earlier image: bench-rn50: PASS |" in gates
    assert "| gpu | build | not built | unreachable |" in gates
    assert gates.index("| cpu |") < gates.index("| gpu |") < gates.index("| gpu-cu118 |")  # manifest order
    digests = text.split("## Image digests", 1)[1]
    assert f"| `ngc-paddle:{RELEASE}-cpu` | {CPU_DIGEST} |" in digests
    assert f"| `ngc-paddle:{RELEASE}-gpu-cu118` | {CU118_DIGEST} |" in digests
    assert f"| `ngc-paddle:{RELEASE}-gpu` | not built: layer tensorrt: pypi.nvidia.com unreachable |" in digests
    assert "## Benchmarks (cpu)" in text and "| train img/s | PASS 9.1 |" in text
    assert "## Benchmarks (gpu-cu118)" not in text  # nothing stored for it
    known = text.split("## Known Issues", 1)[1].split("## Image digests", 1)[0]
    assert "Hand-written: DALI needs /dev/shm." in known and "None known." not in known
    cu118 = text.split("### gpu-cu118:", 1)[1].split("###", 1)[0]
    assert "| paddlepaddle-gpu | 2.6.2 | 2.6.2 |" in cu118
    # The merged inputs were written back, so a later run of one flavor keeps the others (fresh state or not).
    stored = notes_stage.load_record(notes_tree / "release-notes" / "inputs" / f"{RELEASE}.json")
    assert set(stored["flavors"]) == {"cpu", "gpu", "gpu-cu118"}
    state.data = {"cpu": state.data["cpu"]}
    again = notes_stage.write(release, state).read_text()
    assert f"| `ngc-paddle:{RELEASE}-gpu-cu118` | {CU118_DIGEST} |" in again


def test_a_flavor_rebuilt_without_a_push_shows_no_digest_of_its_earlier_image(notes_tree: Path) -> None:
    state = _two_flavor_state()
    state["cpu"]["push"]["image_id"] = "sha256:an-earlier-image"
    infos = notes_stage.collect(notes_tree, RELEASE, state)
    assert "digest" not in infos["cpu"] and CPU_DIGEST in infos["cpu"]["digest_note"]


def test_committed_notes_are_the_output_of_the_current_code(repo: Path) -> None:
    records = sorted((repo / "release-notes" / "inputs").glob("*.json"))
    assert records, "release-notes/inputs/ holds the notes' committed inputs"
    for path in records:
        release = path.stem
        loaded = ResolvedRelease.load(repo, release)
        rendered = notes_text(loaded, notes_stage.load_record(path)["flavors"], notes_stage.known_issues(repo, release))
        committed = (repo / "release-notes" / f"{release}.md").read_text()
        assert committed == rendered, f"release-notes/{release}.md is stale; fix: make notes RELEASE={release}"
    manifests = [load_manifest(p) for p in sorted((repo / "releases").glob("*.yaml"))]
    assert (repo / "release-notes" / "support-matrix.md").read_text() == support_matrix(manifests)


def test_a_damaged_notes_record_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "26.12.json"
    path.write_text(json.dumps({"release": "26.12", "flavors": {"cpu": {"digets": "x"}}}))
    with pytest.raises(NgcPaddleError) as err:
        notes_stage.load_record(path)
    assert err.value.exit_code == 2 and "\n" not in str(err.value)
    assert str(err.value).startswith(f"{path}: flavors.cpu.digets: unknown key; fix:")


def test_requested_flavors(repo: Path) -> None:
    release = ResolvedRelease.load(repo, RELEASE)
    manifest = release.manifest

    def names(asked: list[str]) -> tuple[list[str], bool]:
        flavors, every = release_pipeline.requested_flavors(release, asked)
        assert all(f is release.flavor(f.name) for f in flavors)  # resolved once, for the whole run
        return [f.name for f in flavors], every

    assert names(["gpu-cu118 cpu"]) == (["cpu", "gpu-cu118"], False)
    assert names(["cpu", "gpu-cu118"]) == (["cpu", "gpu-cu118"], False)
    assert names([]) == ([manifest.default_flavor], False)
    assert names(["all"]) == (list(manifest.flavors), True)
    with pytest.raises(ManifestError, match="no flavor 'rocm'"):
        release_pipeline.requested_flavors(release, ["cpu rocm"])


@pytest.fixture
def fake_stages(notes_tree: Path, monkeypatch) -> dict:
    """Every engine-facing step of the pipeline faked: builds of `unbuildable` flavors fail with one line."""
    seen: dict = {"builds": [], "pushed": [], "unbuildable": set()}

    def build(flavor, say):
        seen["builds"].append((flavor.name, dict(flavor.sources)))
        if flavor.name in seen["unbuildable"]:
            raise BuildError(f"layer paddle of {flavor.name}: index unreachable; fix: SOURCES=")
        return SimpleNamespace(image=flavor.image, layers=[SimpleNamespace(status="built")])

    monkeypatch.setattr(image_pipeline, "build", build)
    monkeypatch.setattr(engine, "image_id", lambda image: "sha256:" + image.rsplit("-", 1)[-1])
    monkeypatch.setattr(engine, "image_size", lambda image: 2_000_000_000)
    monkeypatch.setattr(build_stage, "read_back", lambda image, flavor: {})
    monkeypatch.setattr(validate_stage, "run_validation", lambda image, out: Outcome("passed", "all passed"))
    monkeypatch.setattr(bench_stage, "run_benchmarks", lambda *a: Outcome("passed", "PASS"))
    monkeypatch.setattr(scan_stage, "run_scan", lambda *a: Outcome("passed", "0 blocking"))
    no_signing(monkeypatch)
    monkeypatch.setattr(push_stage, "ensure_registry", lambda registry: None)

    def push(state, flavor, image, registry_, say, gated=None):
        seen["pushed"].append(flavor)
        return "sha256:" + "e" * 64

    monkeypatch.setattr(push_stage, "push", push)
    monkeypatch.setattr(candidate_stage, "push", lambda state, flavor, image, registry_, say:
                        f"{registry_}/ngc-paddle@sha256:" + "e" * 64)
    return seen


def test_release_all_gates_what_builds_and_reports_the_rest(notes_tree: Path, fake_stages: dict) -> None:
    fake_stages["unbuildable"] = {"gpu"}
    lines: list[str] = []
    opts = release_pipeline.ReleaseOptions(RELEASE, ["all"], root=notes_tree, sources={"pypi": "https://m.example/s"})
    release_pipeline.run(opts, say=lines.append)
    manifest = load_manifest(notes_tree / "releases" / f"{RELEASE}.yaml")
    assert [f for f, _ in fake_stages["builds"]] == list(manifest.flavors)
    assert all(sources == {"pypi": "https://m.example/s"} for _, sources in fake_stages["builds"])
    assert fake_stages["pushed"] == [f for f in manifest.flavors if f != "gpu"]
    summary = lines[lines.index("==> summary:"):]
    assert "    gpu: not built: layer paddle of gpu: index unreachable; fix: SOURCES=" in summary
    text = (notes_tree / "release-notes" / f"{RELEASE}.md").read_text()
    assert f"| `ngc-paddle:{RELEASE}-gpu` | not built: layer paddle of gpu: index unreachable" in text


def test_a_release_run_opens_its_manifest_once(notes_tree: Path, fake_stages: dict, monkeypatch) -> None:
    """Resolved once (ngc_paddle.flavor) and passed to the build and every stage: every flavor built, gated,
    pushed and written into the notes twice, and releases/RELEASE.yaml is read one time."""
    opened: list[str] = []
    real = bounded_read.load_yaml

    def counting(path, *args, **kwargs):
        opened.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(bounded_read, "load_yaml", counting)
    opts = release_pipeline.ReleaseOptions(RELEASE, ["cpu gpu-cu118"], root=notes_tree)
    release_pipeline.run(opts, say=lambda _l: None)
    assert fake_stages["pushed"] == ["cpu", "gpu-cu118"]
    assert opened.count(f"{RELEASE}.yaml") == 1, opened


def test_release_of_named_flavors_pushes_none_when_one_cannot_build(notes_tree: Path, fake_stages: dict) -> None:
    fake_stages["unbuildable"] = {"gpu-cu118"}
    opts = release_pipeline.ReleaseOptions(RELEASE, ["cpu gpu-cu118"], root=notes_tree)
    with pytest.raises(release_pipeline.ReleaseBlocked, match="gpu-cu118: build"):
        release_pipeline.run(opts, say=lambda _l: None)
    assert fake_stages["pushed"] == [] and [f for f, _ in fake_stages["builds"]] == ["cpu", "gpu-cu118"]
    text = (notes_tree / "release-notes" / f"{RELEASE}.md").read_text()
    assert "| cpu | scan | passed | 0 blocking |" in text  # the flavor that built was still gated


def test_a_mirror_for_a_source_the_release_lacks_is_bad_input(notes_tree: Path, fake_stages: dict) -> None:
    opts = release_pipeline.ReleaseOptions(RELEASE, ["cpu"], root=notes_tree, sources={"nosuch": "https://m/s"})
    with pytest.raises(ManifestError, match="has no source 'nosuch'"):
        release_pipeline.run(opts, say=lambda _l: None)
    assert fake_stages["builds"] == []


def _fake_docker(monkeypatch, answers: dict[str, tuple[int, str, str]]) -> list[list[str]]:
    calls: list[list[str]] = []

    def run(command, **_kwargs):
        calls.append(command)
        key = next(k for k in answers if k in " ".join(command))
        code, out, err = answers[key]
        return subprocess.CompletedProcess(command, code, out, err)

    monkeypatch.setattr(engine.subprocess, "run", run)  # the engine adapter is the one caller of docker
    return calls


def test_a_push_without_a_login_names_the_registry_and_the_fix(monkeypatch) -> None:
    _fake_docker(monkeypatch, {"push": (1, "The push refers to repository [r]\n", "no basic auth credentials\n")})
    with pytest.raises(registry.LoginRequired) as err:
        registry.push_and_verify("registry.example:5443/ngc-paddle:26.12-cpu")
    message = str(err.value)
    assert err.value.exit_code == 2 and "\n" not in message
    assert "the registry registry.example:5443 refuses it without a login (no basic auth credentials)" in message
    assert message.endswith("fix: docker login registry.example:5443")


def test_the_pushed_digest_is_read_back_with_the_docker_client(monkeypatch) -> None:
    digest = "sha256:" + "a" * 64
    verbose = json.dumps({"Ref": "r", "Descriptor": {"digest": digest}})
    calls = _fake_docker(monkeypatch, {
        "push": (0, f"26.12-cpu: digest: {digest} size: 523\n", ""),
        "--insecure": (0, verbose, ""),  # a plain-HTTP loopback registry answers only with --insecure
        "inspect": (1, "", "no such manifest: 127.0.0.1:5000/ngc-paddle:26.12-cpu\n")})
    assert registry.push_and_verify("127.0.0.1:5000/ngc-paddle:26.12-cpu") == digest
    assert [c[:3] for c in calls] == [["docker", "push", "127.0.0.1:5000/ngc-paddle:26.12-cpu"],
                                      ["docker", "manifest", "inspect"], ["docker", "manifest", "inspect"]]
    assert "--insecure" not in calls[1] and "--insecure" in calls[2]  # TLS first
    calls.clear()
    with pytest.raises(registry.DigestMismatch, match="but the registry serves nothing"):
        registry.push_and_verify("registry.example/ngc-paddle:26.12-cpu")  # not loopback: never --insecure
    assert not any("--insecure" in c for c in calls)


def test_make_release_passes_flavors_and_mirrors(repo: Path) -> None:
    command = ["make", "--no-print-directory", "-n", "-W", ".venv/bin/.installed", "release",
               "FLAVOR=cpu gpu-cu118", "SOURCES=pypi=https://m.example/simple nvidia=https://m.example/nv"]
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert ("--flavor cpu --flavor gpu-cu118 --source pypi=https://m.example/simple "
            "--source nvidia=https://m.example/nv") in proc.stdout, proc.stdout
    notes_cmd = subprocess.run(["make", "--no-print-directory", "-n", "-W", ".venv/bin/.installed", "notes",
                                "RELEASE=26.12"], cwd=repo, capture_output=True, text=True)
    assert "ngc-paddle release notes 26.12" in notes_cmd.stdout, notes_cmd.stderr
