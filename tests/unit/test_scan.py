"""The scan gate's parts on the host: report readers, OSV matching per ecosystem, policy and allowlist."""

from datetime import date
from pathlib import Path

import pytest

from ngc_paddle.distro import Distro
from ngc_paddle.scan import policy
from ngc_paddle.scan.findings import Finding, dedupe
from ngc_paddle.scan.source.inventory import Package
from ngc_paddle.scan.vulnerabilities.scanners import ReportError, load_osv, match_osv, read_grype, read_trivy

DEBIAN_12 = Distro("debian", "12")

DATA = Path(__file__).resolve().parents[1] / "data"


def vulns(findings: list[Finding]) -> set[tuple]:
    return {(f.package, f.installed, f.fixed, f.severity.upper()) for f in findings if f.kind == "vulnerability"}


def test_trivy_and_grype_reports_give_the_same_findings() -> None:
    trivy, grype = read_trivy(DATA / "reports/trivy.json"), read_grype(DATA / "reports/grype.json")
    expected = {("openssl", "3.0.11-1~deb12u1", "3.0.11-1~deb12u2", "HIGH"), ("urllib3", "1.26.4", "1.26.5", "HIGH")}
    assert vulns(trivy) == vulns(grype) == expected
    secrets = [f for f in trivy if f.kind == "secret"]
    assert len(secrets) == 1 and secrets[0].package == "/root/.ssh/id_ed25519"
    # the same advisory reported by both tools, under an id and its alias, is one finding
    merged = dedupe(trivy + grype)
    assert len([f for f in merged if f.package == "urllib3"]) == 1


@pytest.mark.parametrize("name, text, needle", [
    ("trivy", "{not json", r"trivy.json: \(file\): not valid JSON"),
    ("trivy", '{"matches": []}', "not a trivy JSON report"),
    ("grype", '{"Results": []}', "not a grype JSON report"),
])
def test_corrupt_reports_are_rejected(tmp_path: Path, name: str, text: str, needle: str) -> None:
    path = tmp_path / f"{name}.json"
    path.write_text(text)
    with pytest.raises(ReportError, match=needle):
        (read_trivy if name == "trivy" else read_grype)(path)


def test_osv_pypi_ranges_use_pep440() -> None:
    advisories = load_osv(DATA / "osv")
    hits = match_osv([Package("pypi", "urllib3", "1.26.4", "paddle"), Package("pypi", "urllib3", "1.26.5", "os"),
                      Package("pypi", "urllib3", "1.26.10", "os"), Package("pypi", "URLLib3", "1.9", "os")],
                     advisories, DEBIAN_12)
    assert sorted((f.installed, f.fixed, f.severity) for f in hits) == [("1.26.4", "1.26.5", "HIGH"),
                                                                       ("1.9", "1.26.5", "HIGH")]
    assert hits[0].id == "GHSA-q2q7-5pp4-w6pg" and "CVE-2021-33503" in hits[0].aliases


def test_osv_debian_ranges_use_dpkg_ordering() -> None:
    advisories = load_osv(DATA / "osv")

    def affected(version: str, name: str = "openssl", source: str | None = None) -> bool:
        pkg = Package("deb", name, version, "os", extra={"source": source or name})
        return bool(match_osv([pkg], advisories, DEBIAN_12))

    assert affected("3.0.11-1~deb12u1")  # ~ sorts before the fixed revision
    assert not affected("3.0.11-1~deb12u2")
    assert not affected("3.0.15-1~deb12u1")
    assert affected("3.0.9-1")
    assert not affected("1:1.0-1")  # an epoch outranks any upstream version
    assert affected("3.0.11-1~deb12u1", name="libssl3", source="openssl")  # matched by source package


def write_policy(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def urllib3() -> Finding:
    return Finding("vulnerability", "GHSA-q2q7-5pp4-w6pg", "HIGH", "ReDoS", package="urllib3", installed="1.26.4",
                   fixed="1.26.5", aliases=["CVE-2021-33503"])


def test_allowlist_suppresses_until_its_expiry(tmp_path: Path) -> None:
    rules = policy.load(write_policy(tmp_path, """
severity_threshold: HIGH
allowlist:
  - {id: CVE-2021-33503, package: urllib3, justification: "no URLs from users", expires: 2027-01-31}
"""))
    before = policy.decide(rules, [urllib3()], date(2027, 1, 31))
    assert not before.blocked and before.suppressed[0].suppressed_by.startswith("no URLs from users")
    after = policy.decide(rules, [urllib3()], date(2027, 2, 1))
    assert after.blocked and after.expired[0].id == "CVE-2021-33503"
    assert "expired on 2027-01-31" in after.blocking[0].suppressed_by


def test_threshold_unfixed_and_always_blocking_kinds(tmp_path: Path) -> None:
    rules = policy.load(write_policy(tmp_path, "severity_threshold: CRITICAL\ncount_unfixed: false\n"))
    medium = Finding("vulnerability", "CVE-1", "MEDIUM", "x", package="p", fixed="2")
    unfixed = Finding("vulnerability", "CVE-2", "CRITICAL", "x", package="p", fixed="")
    key = Finding("private-key", "private-key", "CRITICAL", "key", package="/root/k")
    decision = policy.decide(rules, [medium, unfixed, key], date(2026, 12, 2))
    assert [f.id for f in decision.blocking] == ["private-key"]
    assert {f.id for f in decision.informational} == {"CVE-1", "CVE-2"}


@pytest.mark.parametrize("text, needle", [
    ("allowlist:\n  - {id: X, package: p, justification: j, expires: 31/01/2027}\n", "is not a date"),
    ("allowlist:\n  - {id: X, package: p, justification: j, expires: 2027-01-31 10:00:00}\n", "is a date-time"),
    ("allowlist:\n  - {id: X, package: p, justification: j, expires: 20270131}\n", "20270131 is not a date"),
    ("allowlist:\n  - {id: X, package: p, expires: 2027-01-31}\n", "allowlist.0.justification: required key"),
    ("severity_threshold: SEVERE\n", "severity_threshold: Input should be 'UNKNOWN', 'LOW',"),
    ("treshold: HIGH\n", "policy.yaml: treshold: unknown key; fix: remove it"),
])
def test_bad_policies_are_errors(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(policy.PolicyError, match=__import__("re").escape(needle)):
        policy.load(write_policy(tmp_path, text))


def test_committed_policy_loads(repo: Path) -> None:
    rules = policy.load(repo / "security" / "policy.yaml")
    assert rules.severity_threshold == "HIGH" and "private-key" in rules.block_on


def test_saved_image_layers_are_read_in_manifest_order_not_archive_order(tmp_path) -> None:
    """docker save archives layers in hash order; the stack order is the manifest's."""
    import io
    import json
    import tarfile

    from ngc_paddle.scan.source.saved_image import SavedImage

    def layer(path: str, text: str) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(path)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
        return buf.getvalue()

    files = {"bottom/layer.tar": layer("var/lib/dpkg/status", "base only"),
             "top/layer.tar": layer("var/lib/dpkg/status", "base and python3.11")}
    config = {"history": [{"created_by": "Imported from -"}, {"created_by": "APT_PACKAGES=python3"}]}
    members = {"manifest.json": json.dumps([{"Config": "c.json", "Layers": ["bottom/layer.tar", "top/layer.tar"]}]),
               "c.json": json.dumps(config)}
    saved = tmp_path / "image.tar"
    with tarfile.open(saved, mode="w") as tar:
        for name, data in [("top/layer.tar", files["top/layer.tar"]), ("bottom/layer.tar", files["bottom/layer.tar"]),
                           *((n, t.encode()) for n, t in members.items())]:  # the top layer archived first
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    seen = [(e.layer.name, e.content) for e in SavedImage(saved).entries() if e.path == "/var/lib/dpkg/status"]
    assert seen == [("base", b"base only"), ("os", b"base and python3.11")]


def test_a_save_the_disk_cannot_hold_is_refused_before_it_starts(tmp_path: Path, monkeypatch) -> None:
    import subprocess
    from collections import namedtuple

    from ngc_paddle import engine
    from ngc_paddle.host_errors import NgcPaddleError
    from ngc_paddle.scan.source import saved_image

    calls = []

    def fake_run(cmd, **kwargs):
        calls.append(cmd[:3])
        return subprocess.CompletedProcess(cmd, 0, stdout="6790000000\n", stderr="")

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(engine.subprocess, "run", fake_run)
    monkeypatch.setattr(saved_image.shutil, "disk_usage", lambda path: usage(0, 0, 5_000_000_000))
    with pytest.raises(NgcPaddleError, match=r"no room to save big:1 in .*: it needs about 6.8 GB, 5.0 GB free; "
                                             r"fix: free disk space or set TMPDIR"):
        saved_image.save("big:1", tmp_path / "image.tar")
    assert calls == [["docker", "image", "inspect"]]  # docker save never ran

    monkeypatch.setattr(saved_image.shutil, "disk_usage", lambda path: usage(0, 0, 50_000_000_000))
    assert saved_image.save("big:1", tmp_path / "image.tar") == tmp_path / "image.tar"
    assert calls[-1] == ["docker", "save", "-o"]


def test_an_allowlist_entry_names_a_finding_by_id_or_alias_and_a_package_or_any() -> None:
    """`package: "*"` accepts the advisory in every package; any other package names exactly one."""
    finding = Finding("vulnerability", "CVE-2026-1", "HIGH", "t", package="openssl", aliases=["GHSA-x"])
    until = date(2027, 1, 31)
    assert policy.AllowEntry("CVE-2026-1", "*", "j", until).matches(finding)
    assert policy.AllowEntry("GHSA-x", "openssl", "j", until).matches(finding)
    assert not policy.AllowEntry("CVE-2026-1", "libssl3", "j", until).matches(finding)
    assert not policy.AllowEntry("CVE-2026-2", "*", "j", until).matches(finding)
