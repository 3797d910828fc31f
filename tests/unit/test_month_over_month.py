"""Month-over-month gates: the full package diff from the SBOMs, removed/downgraded packages and image growth
blocked unless the manifest says why, and a release of month N+1 gated against month N's stored results."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from ngc_paddle import engine
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.image_build import build_flavor as image_pipeline
from ngc_paddle.manifest import load_manifest
from ngc_paddle.release import pipeline as release_pipeline
from ngc_paddle.release.new import create
from ngc_paddle.release.stages import Outcome, month_over_month
from ngc_paddle.release.stages import bench as bench_stage
from ngc_paddle.release.stages import build as build_stage
from ngc_paddle.release.stages import candidate as candidate_stage
from ngc_paddle.release.stages import push as push_stage
from ngc_paddle.release.stages import scan as scan_stage
from ngc_paddle.release.stages import validate as validate_stage
from tests.unit.attest_support import no_signing

GB = 1_000_000_000


def write_sbom(path: Path, packages: dict[str, str]) -> Path:
    """A CycloneDX document as the scan writes it: one component per package, purl-named."""
    components = [{"type": "application", "name": "python", "version": "3.11", "bom-ref": "manifest:python"}]
    for key, version in packages.items():
        kind, name = key.split(":")
        purl = f"pkg:pypi/{name}@{version}" if kind == "pypi" else f"pkg:deb/debian/{name}@{version}?arch=amd64"
        components.append({"type": "library", "name": name, "version": version, "purl": purl, "bom-ref": purl})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6", "components": components}))
    return path


OLD = {"pypi:numpy": "2.4.6", "pypi:pyyaml": "6.0.3", "pypi:six": "1.17.0", "deb:libc6": "2.36-9+deb12u10",
       "deb:zlib1g": "1:1.2.13.dfsg-1", "deb:tzdata": "2025b-0+deb12u1"}


def test_the_diff_orders_pip_by_pep440_and_debian_by_dpkg(tmp_path: Path) -> None:
    new = {**OLD, "pypi:numpy": "2.4.10", "pypi:pyyaml": "6.0.3rc1", "deb:libc6": "2.36-9+deb12u9",
           "deb:zlib1g": "1:1.2.13.dfsg-1+b1", "pypi:rich": "14.0.0"}
    del new["pypi:six"]
    old_pkgs = month_over_month.packages(write_sbom(tmp_path / "old.json", OLD))
    new_pkgs = month_over_month.packages(write_sbom(tmp_path / "new.json", new))
    lines = [c.line() for c in month_over_month.diff(old_pkgs, new_pkgs)]
    assert lines == ["deb:libc6 2.36-9+deb12u10 -> 2.36-9+deb12u9 (down)",  # dpkg: u10 > u9 (as text it is not)
                     "deb:zlib1g 1:1.2.13.dfsg-1 -> 1:1.2.13.dfsg-1+b1 (up)",
                     "pypi:numpy 2.4.6 -> 2.4.10 (up)",  # PEP 440: 10 > 6
                     "pypi:pyyaml 6.0.3 -> 6.0.3rc1 (down)",  # a pre-release comes before its final release
                     "pypi:rich 14.0.0 (added)",
                     "pypi:six 1.17.0 (removed)"]


def test_removed_downgraded_and_grown_block_unless_the_manifest_says_why(tmp_path: Path) -> None:
    old = write_sbom(tmp_path / "old.json", OLD)
    new = dict(OLD, **{"pypi:numpy": "1.26.4"})
    del new["deb:tzdata"]
    sbom = write_sbom(tmp_path / "new.json", new)
    blocked = month_over_month.gate("26.12", old, 2 * GB, sbom, int(2.4 * GB), {}, None)
    assert blocked.status == "failed"
    assert "pypi:numpy 2.4.6 -> 1.26.4 (down) without a reason in month_over_month.packages" in blocked.detail
    assert "deb:tzdata 2025b-0+deb12u1 (removed) without a reason" in blocked.detail
    assert "the image grew 20.0% (> 10%) without month_over_month.size_growth" in blocked.detail
    reasons = {"pypi:numpy": "Paddle 2.6 needs the NumPy 1.x ABI", "deb:tzdata": "time zones ship with Python"}
    passed = month_over_month.gate("26.12", old, 2 * GB, sbom, int(2.4 * GB), reasons, "CUDA 12.8 libraries")
    assert passed.status == "passed", passed.detail
    assert "pypi:numpy 2.4.6 -> 1.26.4 (down): Paddle 2.6 needs the NumPy 1.x ABI" in passed.detail
    assert "+20.0%, accepted: CUDA 12.8 libraries" in passed.detail
    assert passed.changes == ["deb:tzdata 2025b-0+deb12u1 (removed)", "pypi:numpy 2.4.6 -> 1.26.4 (down)"]
    assert month_over_month.gate("26.12", old, 2 * GB, sbom, int(2.19 * GB), reasons, None).status == "passed"  # +9.5 %


def test_nothing_to_compare_passes_and_missing_results_are_not_proven(tmp_path: Path) -> None:
    sbom = write_sbom(tmp_path / "new.json", OLD)
    assert month_over_month.gate(None, tmp_path / "none.json", None, sbom, GB, {}, None).status == "passed"
    missing = month_over_month.gate("26.12", tmp_path / "none.json", None, sbom, GB, {}, None)
    assert missing.status == "not proven" and "none.json" in missing.detail and "fix: restore" in missing.detail


def test_a_corrupt_sbom_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "sbom.cdx.json"
    bad.write_text(json.dumps({"components": [{"purl": "pkg:"}]}))
    with pytest.raises(NgcPaddleError) as err:
        month_over_month.packages(bad)
    assert "\n" not in str(err.value) and str(err.value).startswith(f"{bad}: components.purl:")


def test_the_manifest_field_is_checked(tmp_path: Path, repo: Path) -> None:
    from ngc_paddle.host_errors import ManifestError

    text = (repo / "releases" / "26.12.yaml").read_text()
    path = tmp_path / "releases" / "26.12.yaml"
    path.parent.mkdir()
    path.write_text(text.replace("    layers: [os, dali, paddle, suite]\n", "    layers: [os, dali, paddle, suite]\n"
                                 "    month_over_month: {packages: {numpy: why}}\n", 1))
    with pytest.raises(ManifestError, match=r"flavors\.cpu\.month_over_month\.packages\.numpy.*pypi:NAME or deb:NAME"):
        load_manifest(path)


@pytest.fixture
def next_month(tmp_path: Path, repo: Path, monkeypatch) -> Path:
    """A tree with 26.12 (its cpu results stored: SBOM, 2 GB image) and a 27.01 whose image is faked."""
    shutil.copytree(repo / "releases", tmp_path / "releases")
    create("27.01", "26.12", tmp_path, lookup=lambda package, index, python: None, say=lambda _l: None)
    stored = tmp_path / "build" / "release" / "26.12"
    write_sbom(stored / "cpu" / "scan" / "sbom.cdx.json", OLD)
    (stored / "state.json").write_text(json.dumps({"cpu": {"build": {"key": "sha256:old", "status": "passed",
                                                                     "detail": "", "size": 2 * GB,
                                                                     "finished": "2026-12-01T00:00:00+00:00"}}}))
    build = lambda flavor, say: SimpleNamespace(image="ngc-paddle:27.01-cpu",  # noqa: E731
                                                layers=[SimpleNamespace(status="built")])
    monkeypatch.setattr(image_pipeline, "build", build)
    monkeypatch.setattr(engine, "image_id", lambda image: "sha256:new")
    no_signing(monkeypatch)
    monkeypatch.setattr(engine, "image_size", lambda image: int(2.4 * GB))
    monkeypatch.setattr(build_stage, "read_back", lambda image, flavor: {})
    monkeypatch.setattr(validate_stage, "run_validation", lambda image, out: Outcome("passed", "all passed"))
    monkeypatch.setattr(bench_stage, "run_benchmarks", lambda *a: Outcome("passed", "PASS"))
    monkeypatch.setattr(push_stage, "ensure_registry", lambda registry: None)
    monkeypatch.setattr(push_stage, "push", lambda *a, **kw: "sha256:" + "f" * 64)
    monkeypatch.setattr(candidate_stage, "push", lambda *a: "127.0.0.1:5000/ngc-paddle@sha256:" + "f" * 64)

    def scan(image, out, *_args):
        write_sbom(out / "sbom.cdx.json", {**OLD, "pypi:numpy": "1.26.4"})
        return Outcome("passed", "0 blocking")

    monkeypatch.setattr(scan_stage, "run_scan", scan)
    return tmp_path


def test_month_n_plus_1_is_blocked_with_the_reason_and_passes_with_it_in_the_manifest(next_month: Path) -> None:
    opts = release_pipeline.ReleaseOptions("27.01", ["cpu"], root=next_month)
    with pytest.raises(release_pipeline.ReleaseBlocked) as err:
        release_pipeline.run(opts, say=lambda _l: None)
    assert "cpu: month-over-month gate" in str(err.value)
    assert "pypi:numpy 2.4.6 -> 1.26.4 (down) without a reason" in str(err.value)
    assert "the image grew 20.0%" in str(err.value)

    manifest = next_month / "releases" / "27.01.yaml"
    manifest.write_text(manifest.read_text().replace(
        "    layers: [os, dali, paddle, suite]\n",
        "    layers: [os, dali, paddle, suite]\n    month_over_month:\n"
        "      packages: {\"pypi:numpy\": \"paddlepaddle 3.4 pins NumPy 1.x again\"}\n"
        "      size_growth: \"oneDNN 3.9 doubles its kernels\"\n", 1))
    release_pipeline.run(opts, say=lambda _l: None)
    notes = (next_month / "release-notes" / "27.01.md").read_text()
    assert "pypi:numpy 2.4.6 -> 1.26.4 (down): paddlepaddle 3.4 pins NumPy 1.x again" in notes
    assert "accepted: oneDNN 3.9 doubles its kernels" in notes
    changes = notes.split("## Package changes since 26.12 (cpu)", 1)[1].split("\n## ", 1)[0]
    assert "- pypi:numpy 2.4.6 -> 1.26.4 (down)" in changes
