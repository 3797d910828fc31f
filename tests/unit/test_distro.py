"""Nothing assumes Debian 12: the 23.01 manifest (Ubuntu 20.04) checks, renders and scans as Ubuntu 20.04."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ngc_paddle.distro import Distro, from_base_image, from_image_manifest, from_os_release, osv_matches
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.manifest import load_manifest
from ngc_paddle.manifest.resolve import image_manifest
from ngc_paddle.release.stages.notes import notes_text, support_matrix
from ngc_paddle.scan import sbom
from ngc_paddle.scan.source.inventory import Package
from ngc_paddle.scan.vulnerabilities import sources
from ngc_paddle.scan.vulnerabilities.scanners import match_osv

FOCAL = Distro("ubuntu", "20.04")
BOOKWORM = Distro("debian", "12")


@pytest.fixture
def release_2301(repo: Path):
    return load_manifest(repo / "releases" / "23.01.yaml")


def test_the_distribution_comes_from_the_base_image_or_os_release(repo: Path, release_2301) -> None:
    assert from_base_image("ubuntu:20.04", "20.04") == FOCAL
    assert from_base_image("docker.io/library/debian:bookworm-slim", "12") == BOOKWORM
    assert from_base_image("debian@sha256:" + "a" * 64, "12") == BOOKWORM
    assert from_base_image(None, "12") is None
    assert from_os_release({"ID": "ubuntu", "VERSION_ID": "20.04"}) == FOCAL
    assert from_os_release({"ID": "debian"}) is None  # testing/sid: no VERSION_ID, no release claimed
    assert str(FOCAL) == "Ubuntu 20.04" and FOCAL.osv_ecosystem == "Ubuntu:20.04"
    assert from_image_manifest(image_manifest(release_2301, "gpu")) == FOCAL
    current = load_manifest(repo / "releases" / "26.12.yaml")
    assert image_manifest(current, "cpu")["distribution"] == {"id": "debian", "name": "Debian", "version": "12"}


def test_the_2301_manifest_checks_and_renders_as_ubuntu(repo: Path, release_2301) -> None:
    proc = subprocess.run([sys.executable, "-m", "ngc_paddle.cli", "manifest", "check", "23.01"],
                          capture_output=True, text=True, cwd=repo, check=False)
    assert proc.returncode == 0, proc.stderr
    text = notes_text(ResolvedRelease.load(repo, "23.01"), {}, None) + support_matrix([release_2301])
    assert "ubuntu:20.04" in text and "| 20.04 |" in text
    assert "debian" not in text.lower() and "bookworm" not in text


def test_the_banner_names_the_manifests_distribution(repo: Path, release_2301, tmp_path: Path, capsys,
                                                     monkeypatch) -> None:
    spec = importlib.util.spec_from_file_location("banner", repo / "image" / "lib" / "banner.py")
    banner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(banner)
    for manifest, name, other in ((release_2301, "Ubuntu 20.04", "Debian"),
                                  (load_manifest(repo / "releases" / "26.12.yaml"), "Debian 12", "Ubuntu")):
        flavor = manifest.default_flavor
        path = tmp_path / f"{manifest.release}.json"
        path.write_text(json.dumps(image_manifest(manifest, flavor)))
        monkeypatch.setattr(banner, "MANIFEST", str(path))
        banner.main()
        out = capsys.readouterr().out
        [os_line] = [line for line in out.splitlines() if line.strip().startswith("OS ")]
        assert name in os_line and other not in out, out


def test_an_ubuntu_image_is_matched_against_ubuntu_records_only() -> None:
    openssl = Package("deb", "openssl", "1.1.1f-1ubuntu2.16", "os", extra={"source": "openssl"})

    def record(ident: str, ecosystem: str) -> dict:
        return {"id": ident, "modified": "2026-11-01T00:00:00Z", "summary": "x", "affected": [{
            "package": {"ecosystem": ecosystem, "name": "openssl"},
            "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "1.1.1f-1ubuntu2.99"}]}]}]}

    advisories = [record("UBUNTU-CVE-1", "Ubuntu:20.04:LTS"), record("UBUNTU-CVE-2", "Ubuntu:20.04"),
                  record("DEBIAN-CVE-3", "Debian:12"), record("UBUNTU-CVE-4", "Ubuntu:Pro:20.04:LTS"),
                  record("UBUNTU-CVE-5", "Ubuntu:22.04:LTS")]
    assert {f.id for f in match_osv([openssl], advisories, FOCAL)} == {"UBUNTU-CVE-1", "UBUNTU-CVE-2"}
    assert {f.id for f in match_osv([openssl], advisories, BOOKWORM)} == {"DEBIAN-CVE-3"}
    assert match_osv([openssl], advisories, None) == []  # release unknown: no distribution record applies
    assert osv_matches("Ubuntu:20.04:LTS", FOCAL) and not osv_matches("Ubuntu:20.044", FOCAL)
    deb, _pypi = sources.osv_folder(Path("osv"), advisories, FOCAL)
    assert deb.consulted and deb.records == 2 and "Ubuntu:20.04" in deb.name


def test_the_sbom_of_an_ubuntu_image_names_ubuntu(tmp_path: Path) -> None:
    packages = [Package("deb", "openssl", "1.1.1f-1ubuntu2.16", "os", arch="amd64")]
    for distro, purl in ((FOCAL, "pkg:deb/ubuntu/openssl@1.1.1f-1ubuntu2.16?arch=amd64&distro=ubuntu-20.04"),
                         (None, "pkg:deb/openssl@1.1.1f-1ubuntu2.16?arch=amd64")):
        path = sbom.write(sbom.build("x:1", None, packages, distro), tmp_path / "sbom.json")
        purls = [c["purl"] for c in json.loads(path.read_text())["components"]]
        assert purls == [purl]
