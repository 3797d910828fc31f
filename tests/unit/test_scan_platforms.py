"""The scan of an image index: each platform's image chosen by its own manifest digest, scanned into its own folder,
one summary line each and the worst verdict as the exit; a platform the index lacks, and a saved index, refused."""

import contextlib
import hashlib
import json
from pathlib import Path

import pytest

from ngc_common.exit_codes import ExitCode
from ngc_paddle import outputs
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.stages import scan as scan_stage
from ngc_paddle.scan import gate, per_platform
from ngc_paddle.scan.source import layer_source, platform_choice
from ngc_paddle.scan.source.saved_image import SavedImage
from tests.unit.layer_tars import Member, layer_tar

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "security" / "policy.yaml"
IMAGE = "ngc-paddle:26.12-cpu"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class FakeIndex:
    """What PushedImage gives the scan, without a registry: an index of amd64 and arm64, each manifest with its own
    config (its architecture) and one layer blob."""

    def __init__(self) -> None:
        self.image, self.registry, self.index = IMAGE, "127.0.0.1:5999", True
        self.documents: dict[str, bytes] = {}
        self.platforms: dict[str, str] = {}
        for arch in ("amd64", "arm64"):
            config = self._put({"os": "linux", "architecture": arch, "rootfs": {"diff_ids": [f"sha256:{arch}"]},
                                "history": [{"created_by": f"ADD rootfs-{arch}"}]})
            manifest = self._put({"config": {"digest": config}, "layers": [{"digest": f"sha256:layer-{arch}"}]})
            self.platforms[f"linux/{arch}"] = manifest

    def _put(self, document: dict) -> str:
        data = json.dumps(document).encode()
        self.documents[_digest(data)] = data
        return _digest(data)

    def manifest(self, digest: str) -> bytes:
        return self.documents[digest]

    def blob(self, digest: str, limit: int) -> bytes:
        return self.documents[digest]


# ---- which platforms ------------------------------------------------------------------------------

def test_an_index_names_its_images_by_platform_and_leaves_out_attestations() -> None:
    linux = {"os": "linux"}
    index = {"manifests": [{"digest": "sha256:a", "platform": {**linux, "architecture": "amd64"}},
                           {"digest": "sha256:b", "platform": {**linux, "architecture": "arm64", "variant": "v8"}},
                           {"digest": "sha256:c", "platform": {"os": "unknown", "architecture": "unknown"}},
                           {"digest": "sha256:d", "platform": {**linux, "architecture": "arm", "variant": "v7"}}]}
    assert platform_choice.index_platforms(index) == {"linux/amd64": "sha256:a", "linux/arm64": "sha256:b",
                                                      "linux/arm/v7": "sha256:d"}


def test_every_platform_is_scanned_unless_one_is_named_and_a_missing_one_is_refused() -> None:
    both = ["linux/amd64", "linux/arm64"]
    assert platform_choice.choose(IMAGE, both, [], True) == both
    assert platform_choice.choose(IMAGE, both, ["linux/arm64"], True) == ["linux/arm64"]
    with pytest.raises(NgcPaddleError) as refused:
        platform_choice.choose(IMAGE, both, ["linux/s390x"], True)
    assert str(refused.value) == (f"--platform linux/s390x: {IMAGE} has no linux/s390x image (it is an index of "
                                  "linux/amd64, linux/arm64); fix: name one of its platforms, or leave --platform out "
                                  "to scan each")
    assert refused.value.exit_code == ExitCode.BAD_INPUT
    with pytest.raises(NgcPaddleError, match="it is a single-platform image of linux/amd64"):
        platform_choice.choose(IMAGE, ["linux/amd64"], ["linux/arm64"], False)


def test_each_platform_is_read_by_its_own_manifest_and_trivy_scans_that_digest() -> None:
    pushed = FakeIndex()
    for platform, arch in (("linux/amd64", "amd64"), ("linux/arm64", "arm64")):
        image = layer_source.RegistryImage(pushed, platform, say=lambda line: None)
        assert image.digest == pushed.platforms[platform]
        assert image.reference == f"127.0.0.1:5999/{layer_source.REPOSITORY}@{pushed.platforms[platform]}"
        assert image.config["architecture"] == arch and image.blobs == {0: f"sha256:layer-{arch}"}


def test_reading_one_image_of_an_index_needs_its_platform(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv(layer_source.REGISTRY_ENV, "127.0.0.1:5999")
    monkeypatch.setattr(layer_source, "PushedImage", lambda image, registry: FakeIndex())
    with pytest.raises(layer_source.AnIndex, match="is an index of linux/amd64, linux/arm64; fix: scan it with"):
        layer_source.open_image(IMAGE, tmp_path, lambda line: None)
    source, how = layer_source.open_image(IMAGE, tmp_path, lambda line: None, "linux/arm64")
    assert source.config["architecture"] == "arm64" and how == "registry 127.0.0.1:5999"


# ---- one scan per platform ------------------------------------------------------------------------

def _report(blocking: int = 0, not_run: bool = False) -> dict:
    return {"blocked": blocking > 0, "counts": {"blocking": blocking, "suppressed": 0, "informational": 2},
            "vulnerabilities": {"status": "NOT RUN" if not_run else "scanned", "missing": ["debian"] if not_run
                                else [], "waiver": None, "waiver_note": ""},
            "vulnerability_sources": [], "freshness": {"not_run": {}}}


def test_an_index_is_pushed_once_and_each_platform_scanned_into_its_own_folder(monkeypatch, tmp_path: Path) -> None:
    index, opened_calls, runs, lines = FakeIndex(), [], [], []

    def open_index(image: str, work: Path, say) -> tuple:
        opened_calls.append(image)
        raise layer_source.AnIndex(layer_source.OpenedImage(image, "registry r", pushed=index))

    def fake_run(image: str, output: Path, *args, platform=None, opened=None, **kwargs) -> dict:
        runs.append((platform, output, opened.source(opened.one(platform), lambda line: None).digest))
        return _report(not_run=platform == "linux/arm64")

    monkeypatch.setattr(layer_source, "open_image", open_index)
    monkeypatch.setattr(gate, "run", fake_run)
    scans = per_platform.scan(IMAGE, tmp_path, POLICY, None, [], say=lines.append)
    assert opened_calls == [IMAGE]
    assert runs == [("linux/amd64", tmp_path, index.platforms["linux/amd64"]),
                    ("linux/arm64", tmp_path / "arm64", index.platforms["linux/arm64"])]
    assert [s.headline for s in scans] == ["PASS", "NOT RUN"]
    assert f"==> {IMAGE}: linux/amd64 PASS, linux/arm64 NOT RUN" in lines
    assert (f"    linux/arm64: NOT RUN: 0 blocking, 0 allowlisted, 2 informational; report "
            f"{tmp_path / 'arm64' / 'scan.md'}") in lines
    runs.clear()
    per_platform.scan(IMAGE, tmp_path, POLICY, None, [], say=lines.append, platforms=["linux/arm64"])
    assert [r[0] for r in runs] == ["linux/arm64"]
    runs.clear()
    with pytest.raises(NgcPaddleError, match=r"no linux/riscv64 image \(it is an index of linux/amd64, linux/arm64"):
        per_platform.scan(IMAGE, tmp_path, POLICY, None, [], say=lines.append, platforms=["linux/riscv64"])
    assert runs == []


def test_a_platforms_reports_go_where_its_lock_and_tag_put_its_name(tmp_path: Path) -> None:
    assert per_platform.report_folder(tmp_path, "linux/amd64") == tmp_path
    assert per_platform.report_folder(tmp_path, "linux/arm64") == tmp_path / "arm64"
    assert per_platform.report_folder(tmp_path, "linux/arm/v7") == tmp_path / "arm-v7"


def _scans(tmp_path: Path, amd64: dict, arm64: dict) -> list[per_platform.PlatformScan]:
    return [per_platform.PlatformScan("linux/amd64", tmp_path, amd64),
            per_platform.PlatformScan("linux/arm64", tmp_path / "arm64", arm64)]


def test_the_worst_platform_decides_the_exit(tmp_path: Path) -> None:
    assert per_platform.verdict(IMAGE, _scans(tmp_path, _report(), _report())) is None
    not_run = per_platform.verdict(IMAGE, _scans(tmp_path, _report(), _report(not_run=True)))
    assert isinstance(not_run, gate.VulnerabilitiesNotRun) and not_run.exit_code == ExitCode.NOT_PROVEN
    assert str(not_run).startswith("linux/arm64: vulnerabilities: NOT RUN (debian: no source")
    assert str(not_run).endswith(f"; see {tmp_path / 'arm64' / 'scan.md'}")
    blocked = per_platform.verdict(IMAGE, _scans(tmp_path, _report(not_run=True), _report(blocking=2)))
    assert isinstance(blocked, gate.Blocked) and blocked.exit_code == ExitCode.FAIL  # blocked beats NOT RUN
    assert str(blocked) == f"the scan gate blocks {IMAGE}: linux/arm64: 2 finding(s); see {tmp_path / 'arm64'}/scan.md"
    single = per_platform.verdict(IMAGE, [per_platform.PlatformScan(None, tmp_path, _report(blocking=1))])
    assert str(single) == f"the scan gate blocks {IMAGE}: 1 finding(s); see {tmp_path / 'scan.md'}"  # as before


# ---- a saved index, the release stage -------------------------------------------------------------

def _saved(path: Path, platforms: list[str]) -> Path:
    """An archive as `docker save` of the containerd store writes it: an OCI layout whose index.json names an index
    of `platforms`, and a manifest.json naming the first platform's image only."""
    config = json.dumps({"os": "linux", "architecture": platforms[0].split("/")[1]}).encode()
    index = json.dumps({"manifests": [{"digest": f"sha256:{i}", "platform": dict(zip(("os", "architecture"),
                                                                                     p.split("/"), strict=True))}
                                      for i, p in enumerate(platforms)]}).encode()
    layout = json.dumps({"manifests": [{"digest": _digest(index)}]}).encode()
    members = {f"blobs/sha256/{_digest(config)[7:]}": config, f"blobs/sha256/{_digest(index)[7:]}": index,
               "index.json": layout,
               "manifest.json": json.dumps([{"Config": f"blobs/sha256/{_digest(config)[7:]}", "Layers": []}]).encode()}
    path.write_bytes(layer_tar([Member(name, data) for name, data in members.items()]))
    return path


def test_a_saved_index_is_refused_with_the_fix_and_a_saved_image_is_read(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv(layer_source.REGISTRY_ENV, "save")
    platforms = ["linux/amd64", "linux/arm64"]
    monkeypatch.setattr(layer_source, "save", lambda image, target: _saved(target, platforms))
    with pytest.raises(NgcPaddleError) as refused:
        layer_source.open_image(IMAGE, tmp_path, lambda line: None)
    assert str(refused.value).startswith(f"{IMAGE}: is an index of linux/amd64, linux/arm64, and a docker save ")
    assert "fix: scan it through a registry (unset NGC_PADDLE_SCAN_REGISTRY" in str(refused.value)
    platforms[1:] = []
    source, how = layer_source.open_image(IMAGE, tmp_path, lambda line: None)
    assert how == "docker save" and source.config["architecture"] == "amd64"
    assert platform_choice.saved_platforms(tmp_path / "image.tar") == ["linux/amd64"]


def test_the_release_scans_the_image_of_its_flavors_platform(monkeypatch, tmp_path: Path) -> None:
    seen = {}

    def fake_run(*args, platform=None, **kwargs) -> dict:
        seen["platform"] = platform
        return {**_report(), "sbom": "x/sbom.cdx.json", "blocking": []}

    class Flavor:
        platform = "linux/arm64"

    monkeypatch.setattr(scan_stage.scan_gate, "run", fake_run)
    assert scan_stage.run_scan(IMAGE, tmp_path, POLICY, None, tmp_path, resolved=Flavor()).status == "passed"
    assert seen == {"platform": "linux/arm64"}


def test_a_platform_that_fails_leaves_every_platforms_earlier_reports_as_they_were(monkeypatch, tmp_path: Path) -> None:
    """The index's scan is one run: a platform whose scan fails (an error, not a verdict) replaces no report, not even
    those of the platforms scanned before it, which would otherwise sit beside the failed one's older report."""
    index = FakeIndex()

    def open_index(image: str, work: Path, say) -> tuple:
        raise layer_source.AnIndex(layer_source.OpenedImage(image, "registry r", pushed=index))

    def fake_run(image: str, output: Path, *args, platform=None, opened=None, stage=None, **kwargs) -> dict:
        if platform == "linux/arm64":
            raise NgcPaddleError("trivy: the registry went away; fix: scan again")
        output.mkdir(parents=True, exist_ok=True)
        with contextlib.nullcontext(stage) if stage is not None else outputs.staged() as into:
            into.write_text(output / "scan.json", "new\n")
        return _report()

    monkeypatch.setattr(layer_source, "open_image", open_index)
    monkeypatch.setattr(gate, "run", fake_run)
    (tmp_path / "scan.json").write_text("earlier\n")
    with pytest.raises(NgcPaddleError, match="registry went away"):
        per_platform.scan(IMAGE, tmp_path, POLICY, None, [], say=lambda line: None)
    assert (tmp_path / "scan.json").read_text() == "earlier\n"
    assert [p.name for p in tmp_path.iterdir()] == ["scan.json"]  # no staged file left behind
    monkeypatch.setattr(gate, "run", lambda *a, platform=None, **k: fake_run(*a, platform="x", **k))
    per_platform.scan(IMAGE, tmp_path, POLICY, None, [], say=lambda line: None)
    assert (tmp_path / "scan.json").read_text() == "new\n"


def test_a_scan_given_a_stage_leaves_its_outputs_to_the_caller(monkeypatch, tmp_path: Path) -> None:
    from tests.unit.test_scan_schedule import _saved_image

    monkeypatch.setattr(gate.layer_source, "open_image",
                        lambda image, work, say: (SavedImage(_saved_image(work / "image.tar")), "docker save"))
    monkeypatch.setattr(gate.scanners, "run_trivy", lambda *args: (None, "trivy not installed"))
    with outputs.staged() as stage:
        gate.run(IMAGE, tmp_path / "out", POLICY, None, [], root=tmp_path, say=lambda line: None, stage=stage)
        assert not (tmp_path / "out" / "scan.json").exists()
    assert json.loads((tmp_path / "out" / "scan.json").read_text())["image"] == IMAGE


def test_a_scanner_report_given_is_the_evidence_of_one_platform_only(monkeypatch, tmp_path: Path) -> None:
    """A trivy or grype report is of one image: given for an index's several platforms, it would count as every
    platform's vulnerability source (no data, no pass), so it needs the one platform it is of."""
    index, runs = FakeIndex(), []

    def open_index(image: str, work: Path, say) -> tuple:
        raise layer_source.AnIndex(layer_source.OpenedImage(image, "registry r", pushed=index))

    def fake_run(image: str, output: Path, *args, platform=None, **kwargs) -> dict:
        runs.append(platform)
        return _report()

    monkeypatch.setattr(layer_source, "open_image", open_index)
    monkeypatch.setattr(gate, "run", fake_run)
    monkeypatch.setattr(gate, "check_inputs", lambda *args: ([], [], []))
    given = [("trivy", tmp_path / "trivy.json")]
    with pytest.raises(NgcPaddleError) as refused:
        per_platform.scan(IMAGE, tmp_path, POLICY, None, given, say=lambda line: None)
    assert runs == [] and "\n" not in str(refused.value) and refused.value.exit_code == ExitCode.BAD_INPUT
    assert str(refused.value).startswith(f"--trivy-report {tmp_path / 'trivy.json'}: {IMAGE} is an index of "
                                         "linux/amd64, linux/arm64") and "; fix: " in str(refused.value)
    per_platform.scan(IMAGE, tmp_path, POLICY, None, given, say=lambda line: None, platforms=["linux/arm64"])
    assert runs == ["linux/arm64"]
