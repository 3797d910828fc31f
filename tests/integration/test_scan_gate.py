"""The scan gate on real images: no vulnerability source is NOT RUN (3), a real advisory blocks (1), a waiver
passes (0) and is shown; the SBOM is valid; planted problems block."""

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from packaging.version import Version

from ngc_paddle.lock.lock_file import read_lock
from tests.integration.conftest import REPO, Built, docker, run_cli

OSV = str(REPO / "tests" / "data" / "osv")
IMAGE_OSV = str(REPO / "tests" / "data" / "osv-image")  # real advisories that apply to the cpu flavor
CA = "/etc/ssl/certs/ca-certificates.crt"
WAIVER = "vulnerability_waiver: {reason: no vulnerability feed on the test host, expires: %s}\n"


def waived_policy(folder: Path, *, days: int = 30) -> Path:
    """The committed policy plus a waiver, written in the test's folder (the committed one carries none)."""
    path = folder / "waived-policy.yaml"
    expires = (datetime.now(UTC).date() + timedelta(days=days)).isoformat()
    path.write_text((REPO / "security" / "policy.yaml").read_text() + WAIVER % expires)
    return path


def scan(image: str, out: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    proc = run_cli("scan", image, "--output", str(out), *args)
    report = json.loads((out / "scan.json").read_text()) if (out / "scan.json").exists() else None
    return proc, report


@pytest.fixture(scope="module")
def planted(built: Built) -> dict[str, str]:
    """Small images on the os layer, each with one planted problem."""
    base = built.report["layers"][0]["tag"]
    with_pip = built.report["layers"][1]["tag"]  # the venv's pip is locked into the first pip layer, not the os one
    recipes = {
        "vulnerable-package": "RUN --mount=type=secret,id=ca,target=/run/secrets/ca "
                              "pip install --no-deps --no-cache-dir --cert /run/secrets/ca urllib3==1.26.4",
        "deleted-key": "RUN mkdir -p /root/.ssh && printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXkt"
                       "djEAAAAA\\n-----END OPENSSH PRIVATE KEY-----\\n' > /root/.ssh/id_ed25519\n"
                       "RUN rm /root/.ssh/id_ed25519",
        "setuid-binary": "RUN cp /usr/bin/true /usr/local/bin/helper && chmod 4755 /usr/local/bin/helper",
    }
    images = {}
    for name, recipe in recipes.items():
        tag = f"ngc-paddle-planted:{name}"
        below = with_pip if "pip install" in recipe else base
        proc = subprocess.run(["docker", "buildx", "build", "--network", "host", "--secret", f"id=ca,src={CA}",
                               "--load", "-q", "-t", tag, "-"], input=f"FROM {below}\n{recipe}\n",
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
        images[name] = tag
    yield images
    for tag in images.values():
        docker("image", "rm", "-f", tag, check=False)


def test_scan_without_a_vulnerability_source_is_not_run_and_the_sbom_is_valid(built: Built, tmp_path: Path) -> None:
    """The built tag is an index of amd64 and arm64: each platform scanned (the arm64 one below), NOT RUN (3)."""
    (tmp_path / "empty-osv").mkdir()
    proc, report = scan(built.image, tmp_path, "--osv-dir", str(tmp_path / "empty-osv"))
    assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr
    assert "vulnerabilities: NOT RUN (debian: no source; pypi: no source; looked for: trivy DB at " in proc.stdout
    assert "OSV folder (Debian:12) at" in proc.stdout
    assert proc.stderr.startswith("error: linux/amd64: vulnerabilities: NOT RUN") and proc.stderr.count("\n") == 1
    assert report["vulnerabilities"]["status"] == "NOT RUN" and report["distro"] == "Debian:12"
    assert f"# Scan gate: {built.image} (linux/amd64): NOT RUN" in (tmp_path / "scan.md").read_text()
    assert_arm64_scanned_against_its_own_lock(built, tmp_path, proc.stdout)
    text = (tmp_path / "sbom.cdx.json").read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    sbom = json.loads(text)
    comps = {c["name"]: c for c in sbom["components"]}
    props = {p["name"]: p["value"] for p in comps["paddlepaddle"]["properties"]}
    assert comps["paddlepaddle"]["version"] == built.manifest.flavors[built.flavor].components["paddle"].version
    assert props["ngc-paddle:layer"] == "paddle" and props["ngc-paddle:manifest-component"] == "paddle"
    assert props["ngc-paddle:source"] == "pypi"
    assert comps["python3.11"]["purl"].startswith("pkg:deb/debian/python3.11@")
    deb_layers = {p["value"] for c in sbom["components"] if c.get("purl", "").startswith("pkg:deb/")
                  for p in c["properties"] if p["name"] == "ngc-paddle:layer"}
    assert {"base", "os"} <= deb_layers
    # The SBOM's Debian packages are exactly those dpkg calls installed in the image.
    listed = docker("run", "--rm", "--network", "none", "--entrypoint", "dpkg-query", built.image, "-W", "-f",
                    "${db:Status-Status} ${Package} ${Version}\n").stdout.split("\n")
    installed = {tuple(line.split()[1:]) for line in listed if line.startswith("installed ")}
    in_sbom = {(c["name"], c["version"]) for c in sbom["components"] if c.get("purl", "").startswith("pkg:deb/")}
    assert in_sbom == installed


def assert_arm64_scanned_against_its_own_lock(built: Built, out: Path, stdout: str) -> None:
    """The index's arm64 image, scanned by its own digest into OUT/arm64: its lock, its packages (Paddle at the
    arm64 pin, Debian's arm64 builds), its build's layers, its package records checked (no integrity finding)."""
    index = json.loads((REPO / "build" / "reports" / f"{built.release}-{built.flavor}" / "index.json").read_text())
    assert f"linux/arm64 image {index['platforms']['linux/arm64'][:19]})" in stdout
    assert f"==> {built.image}: linux/amd64 NOT RUN, linux/arm64 NOT RUN" in stdout
    assert "    linux/arm64: NOT RUN: 0 blocking, " in stdout and f"report {out / 'arm64' / 'scan.md'}" in stdout
    amd64, arm64 = (json.loads((folder / "scan.json").read_text()) for folder in (out, out / "arm64"))
    assert (amd64["platform"], arm64["platform"]) == ("linux/amd64", "linux/arm64")
    lock = f"{built.release}-{built.flavor}.arm64.lock.json"
    assert arm64["lock"]["status"] == "compared" and arm64["lock"]["detail"].endswith(lock), arm64["lock"]
    assert amd64["lock"]["detail"].endswith(f"{built.release}-{built.flavor}.lock.json"), amd64["lock"]
    own = arm64["own_layers"]
    assert own["ours"] == own["layers"] and own["claims"] == f"{built.release} {built.flavor}-arm64", own
    assert f"build/reports/{built.release}-{built.flavor}-arm64/build.json" in own["source"], own
    assert arm64["blocking"] == [] and [f for f in arm64["informational"] if f["kind"].startswith("integrity")] == []
    assert arm64["own_files"]["status"] == "checked" and arm64["config_record"]["status"] == "compared", arm64
    sbom = json.loads((out / "arm64" / "sbom.cdx.json").read_text())
    paddle = next(e for e in read_lock(REPO / "releases" / lock).pip if e.name == "paddlepaddle")
    assert {c["version"] for c in sbom["components"] if c["name"] == "paddlepaddle"} == {paddle.version}
    arches = {c["purl"].split("arch=")[1].split("&")[0] for c in sbom["components"] if "arch=" in c.get("purl", "")}
    assert "arm64" in arches and "amd64" not in arches, arches  # Debian's arm64 builds (and arch: all)


def test_real_advisories_match_only_what_the_image_holds(built: Built, tmp_path: Path) -> None:
    """CVE-2024-6345 hit the venv's setuptools 66.1.1 that came unlocked from Debian's wheel; the venv's tools are
    locked now, at a release past the fix, so the advisory no longer matches. Debian's records match by release."""
    setuptools = next(e for e in read_lock(REPO / "releases" / f"{built.release}-{built.flavor}.lock.json").pip
                      if e.name == "setuptools")
    assert Version(setuptools.version) >= Version("70.0.0")
    proc, report = scan(built.image, tmp_path, "--osv-dir", IMAGE_OSV, "--platform", "linux/amd64")
    found = {f["id"] for key in ("blocking", "suppressed", "informational") for f in report[key]}
    assert "GHSA-cx63-2mw6-8hw5" not in found, proc.stdout[-3000:]
    assert "DEBIAN-CVE-2011-3374" in found  # apt, no fix in any release: matched, informational
    assert "DEBIAN-CVE-2025-9230" not in found  # bookworm's openssl is fixed; trixie's entry must not flag it
    # The records are older than the committed policy's 7 days: consulted data that is stale does not prove
    # absence: NOT RUN, exit 3, with nothing blocking.
    assert proc.returncode == 3 and report["blocking"] == [], proc.stdout[-3000:] + proc.stderr
    assert report["vulnerabilities"]["status"] == "NOT RUN"
    osv = {s["name"]: s for s in report["vulnerability_sources"] if s["name"].startswith("OSV")}
    assert osv["OSV folder (Debian:12)"]["records"] == 2 and osv["OSV folder (PyPI)"]["records"] == 1
    assert "older than the policy's 7 days" in osv["OSV folder (PyPI)"]["why"]


def test_a_waiver_passes_a_scan_without_sources_and_the_report_shows_it(built: Built, tmp_path: Path) -> None:
    policy = waived_policy(tmp_path)
    (tmp_path / "empty-osv").mkdir()
    expires = (datetime.now(UTC).date() + timedelta(days=30)).isoformat()
    proc, report = scan(built.image, tmp_path / "out", "--osv-dir", str(tmp_path / "empty-osv"),
                        "--policy", str(policy), "--platform", "linux/amd64")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert report["vulnerabilities"]["status"] == "waived"
    line = f"vulnerabilities not scanned: no vulnerability feed on the test host, waiver expires {expires}"
    assert line in proc.stdout and line in (tmp_path / "out" / "scan.md").read_text()


def test_planted_vulnerable_package_blocks_through_osv(planted: dict, tmp_path: Path) -> None:
    proc, report = scan(planted["vulnerable-package"], tmp_path, "--osv-dir", OSV)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    hits = [f for f in report["blocking"] if f["id"] == "GHSA-q2q7-5pp4-w6pg"]
    assert len(hits) == 1
    assert (hits[0]["package"], hits[0]["installed"], hits[0]["fixed"], hits[0]["source"]) == (
        "urllib3", "1.26.4", "1.26.5", "osv")
    assert "CVE-2021-33503" in hits[0]["aliases"]
    assert "GHSA-q2q7-5pp4-w6pg" in proc.stdout


@pytest.mark.parametrize("days, blocked", [(30, False), (-1, True)])
def test_allowlisted_finding_passes_until_its_expiry(planted: dict, tmp_path: Path, days: int, blocked: bool) -> None:
    expires = (datetime.now(UTC).date() + timedelta(days=days)).isoformat()
    policy = tmp_path / "policy.yaml"
    later = (datetime.now(UTC).date() + timedelta(days=30)).isoformat()
    policy.write_text(waived_policy(tmp_path).read_text().replace(
        "allowlist: []", f"allowlist:\n  - {{id: CVE-2021-33503, package: urllib3, justification: "
                         f"test-only image, expires: {expires}}}\n"  # the pip install outside the lock is drift:
                         f"  - {{id: pypi-extra, package: urllib3, justification: planted, expires: {later}}}"))
    proc, report = scan(planted["vulnerable-package"], tmp_path / "out", "--osv-dir", OSV, "--policy", str(policy))
    assert proc.returncode == (1 if blocked else 0), proc.stdout[-2000:]
    if blocked:
        assert report["expired_allowlist_entries"] == [f"CVE-2021-33503 (urllib3) expired {expires}"]
        assert [f["id"] for f in report["blocking"]] == ["GHSA-q2q7-5pp4-w6pg"]
    else:
        assert {f["id"] for f in report["suppressed"]} == {"GHSA-q2q7-5pp4-w6pg", "pypi-extra"}


def test_key_added_in_one_layer_and_deleted_in_the_next_is_found(planted: dict, tmp_path: Path) -> None:
    image = planted["deleted-key"]
    assert docker("run", "--rm", image, "test", "-e", "/root/.ssh/id_ed25519", check=False).returncode == 1
    proc, report = scan(image, tmp_path)
    assert proc.returncode == 1
    keys = [f for f in report["blocking"] if f["kind"] == "private-key"]
    assert [f["package"] for f in keys] == ["/root/.ssh/id_ed25519"]
    history = json.loads(docker("image", "inspect", "--format", "{{json .RootFS.Layers}}", image).stdout)
    assert keys[0]["location"].startswith(f"layer {len(history) - 2} ")  # the layer before the one that deleted it


def test_setuid_binary_blocks(planted: dict, tmp_path: Path) -> None:
    proc, report = scan(planted["setuid-binary"], tmp_path)
    assert proc.returncode == 1
    # setuid, and a file under a trust path that no package installed (the integrity check)
    assert sorted((f["kind"], f["package"]) for f in report["blocking"]) == [("integrity", "/usr/local/bin/helper"),
                                                                             ("setuid", "/usr/local/bin/helper")]


def test_bad_input_exits_2_not_blocked(built: Built, tmp_path: Path) -> None:
    corrupt = tmp_path / "trivy.json"
    corrupt.write_text("{ this is not json")
    bad_policy = tmp_path / "policy.yaml"
    bad_policy.write_text("allowlist:\n  - {id: X, package: p, justification: j, expires: someday}\n")
    for args, needle in ((["ngc-paddle:00.01-nope"], "image 'ngc-paddle:00.01-nope' not found"),
                         ([built.image, "--trivy-report", str(corrupt)], f"{corrupt}: (file): not valid JSON"),
                         ([built.image, "--policy", str(bad_policy)],
                          f"{bad_policy}: allowlist.0.expires: expires 'someday' is not a date")):
        proc = run_cli("scan", *args, "--output", str(tmp_path / "out"))
        assert proc.returncode == 2, (args, proc.stdout[-500:], proc.stderr)
        assert proc.stderr.startswith("error:") and needle in proc.stderr and proc.stderr.count("\n") == 1
