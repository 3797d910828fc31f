"""The scan gate's evidence: release-exact OSV matching, dpkg status, whiteouts, sources, waivers, import."""

import io
import json
import tarfile
import zipfile
from datetime import date, timedelta
from pathlib import Path

import pytest

from ngc_paddle.distro import Distro
from ngc_paddle.release.stages import scan as scan_stage
from ngc_paddle.scan import gate, policy
from ngc_paddle.scan.source.inventory import Inventory, Package
from ngc_paddle.scan.source.saved_image import SavedImage
from ngc_paddle.scan.vulnerabilities import osv_import, sources
from ngc_paddle.scan.vulnerabilities.scanners import load_osv, match_osv

DEBIAN_12 = Distro("debian", "12")

DATA = Path(__file__).resolve().parents[1] / "data"
IMAGE_OSV = DATA / "osv-image"  # real records that apply to ngc-paddle:26.12-cpu
# Packages as ngc-paddle:26.12-cpu has them (dpkg-query / pip list in the image).
OPENSSL = Package("deb", "libssl3", "3.0.22-1~deb12u2", "base", extra={"source": "openssl"})
APT = Package("deb", "apt", "2.6.1", "base", extra={"source": "apt"})
SETUPTOOLS = Package("pypi", "setuptools", "66.1.1", "suite")


def ids(findings) -> set[tuple[str, str]]:
    return {(f.id, f.package) for f in findings}


# ---- Debian records match the image's release only -------------------------------------------------

def test_debian_records_match_only_the_images_release() -> None:
    advisories = load_osv(IMAGE_OSV)
    on_bookworm = match_osv([OPENSSL, APT, SETUPTOOLS], advisories, DEBIAN_12)
    # openssl 3.0.22-1~deb12u2 is past bookworm's fix 3.0.17-1~deb12u3; trixie's fix 3.5.4 must not flag it.
    assert ids(on_bookworm) == {("DEBIAN-CVE-2011-3374", "apt"), ("GHSA-cx63-2mw6-8hw5", "setuptools")}
    older = Package("deb", "libssl3", "3.0.17-1~deb12u2", "base", extra={"source": "openssl"})
    [hit] = match_osv([older], advisories, DEBIAN_12)
    assert (hit.id, hit.fixed) == ("DEBIAN-CVE-2025-9230", "3.0.17-1~deb12u3")
    trixie = Package("deb", "libssl3t64", "3.5.1-1", "base", extra={"source": "openssl"})
    [hit] = match_osv([trixie], advisories, Distro("debian", "13"))
    assert hit.fixed == "3.5.4-1~deb13u1"
    assert ids(match_osv([OPENSSL, APT], advisories, None)) == set()  # release unknown: no Debian record applies


# ---- dpkg status and whiteouts ----------------------------------------------------------------------

def _layer(files: list[tuple[str, str | None]]) -> bytes:
    """A layer tar: (path, text) for a file, (path, None) for a folder."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, text in files:
            info = tarfile.TarInfo(path)
            if text is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(text.encode())
                tar.addfile(info, io.BytesIO(text.encode()))
    return buf.getvalue()


def _saved(tmp_path: Path, layers: list[list[tuple[str, str | None]]]) -> SavedImage:
    names = [f"l{i}/layer.tar" for i in range(len(layers))]
    config = {"history": [{"created_by": f"step {i}"} for i in range(len(layers))]}
    members = [(n, _layer(files)) for n, files in zip(names, layers, strict=True)]
    members += [("manifest.json", json.dumps([{"Config": "c.json", "Layers": names}]).encode()),
                ("c.json", json.dumps(config).encode())]
    path = tmp_path / "image.tar"
    with tarfile.open(path, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return SavedImage(path)


def _inventory(saved: SavedImage) -> Inventory:
    inventory = Inventory()
    for entry in saved.entries():
        inventory.add(entry)
    return inventory


STATUS = """Package: openssl
Status: install ok installed
Version: 3.0.22-1~deb12u2

Package: libgdbm6
Status: purge ok not-installed
Version: 1.23-3

Package: vim-tiny
Status: deinstall ok config-files
Version: 2:9.0.1378-2

Package: libssl3
Status: install ok installed
Source: openssl (3.0.22-1~deb12u2)
Version: 3.0.22-1~deb12u2
"""
OS_RELEASE = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n'


def test_only_installed_dpkg_packages_count_and_the_release_comes_from_os_release(tmp_path: Path) -> None:
    inventory = _inventory(_saved(tmp_path, [[("usr/lib/os-release", OS_RELEASE), ("var/lib/dpkg/status", STATUS)]]))
    debs = {(p.name, p.version, p.extra["source"]) for p in inventory.packages()}
    assert debs == {("openssl", "3.0.22-1~deb12u2", "openssl"), ("libssl3", "3.0.22-1~deb12u2", "openssl")}
    assert inventory.distro() == DEBIAN_12
    trixie = OS_RELEASE.replace('"12"', '"13"')
    assert _inventory(_saved(tmp_path, [[("etc/os-release", trixie)]])).distro() == Distro("debian", "13")
    focal = 'NAME="Ubuntu"\nVERSION_ID="20.04"\nID=ubuntu\nID_LIKE=debian\n'
    assert _inventory(_saved(tmp_path, [[("etc/os-release", focal)]])).distro() == Distro("ubuntu", "20.04")
    manifest = {"components": {"os": {"version": "12", "package": "debian:bookworm-slim"}}}
    assert Inventory().distro(manifest) == DEBIAN_12 and Inventory().distro() is None


def test_opaque_whiteout_hides_what_lower_layers_had_in_the_folder(tmp_path: Path) -> None:
    site = "opt/venv/lib/python3.11/site-packages"
    meta = "Metadata-Version: 2.1\nName: {0}\nVersion: {1}\n"
    saved = _saved(tmp_path, [
        [(f"{site}/pyyaml-6.0.4.dist-info/METADATA", meta.format("PyYAML", "6.0.4")),
         (f"{site}/six-1.17.0.dist-info/METADATA", meta.format("six", "1.17.0")),
         ("var/lib/dpkg/status", STATUS)],
        # the upper layer replaces the folder: its own file comes before the marker in the archive
        [(f"{site}/pyyaml-5.3.dist-info/METADATA", meta.format("PyYAML", "5.3")), (f"{site}/.wh..wh..opq", ""),
         ("var/lib/dpkg/.wh..wh..opq", "")],
    ])
    assert {(p.name, p.version) for p in _inventory(saved).packages()} == {("PyYAML", "5.3")}


def test_plain_whiteout_removes_only_lower_layers(tmp_path: Path) -> None:
    site = "usr/lib/python3/dist-packages"
    saved = _saved(tmp_path, [
        [(f"{site}/six-1.16.dist-info/METADATA", "Name: six\nVersion: 1.16\n")],
        [(f"{site}/.wh.six-1.16.dist-info", ""), (f"{site}/six-1.17.dist-info/METADATA", "Name: six\nVersion: 1.17\n")],
    ])
    assert [(p.name, p.version) for p in _inventory(saved).packages()] == [("six", "1.17")]


# ---- sources, age limits, waivers -------------------------------------------------------------------

def test_osv_folder_counts_records_per_ecosystem_of_the_image(tmp_path: Path) -> None:
    advisories = load_osv(IMAGE_OSV)
    deb, pypi = sources.osv_folder(IMAGE_OSV, advisories, DEBIAN_12)
    assert (deb.name, deb.consulted, deb.records, deb.built) == ("OSV folder (Debian:12)", True, 2, "2025-10-15")
    assert (pypi.consulted, pypi.records, pypi.built) == (True, 1, "2024-07-15")
    only_trixie = [a for a in advisories if a["id"] != "DEBIAN-CVE-2011-3374"]
    deb, _ = sources.osv_folder(IMAGE_OSV, only_trixie, Distro("debian", "13"))
    assert deb.records == 1
    deb, _ = sources.osv_folder(IMAGE_OSV, [a for a in advisories if a["id"].startswith("GHSA")], DEBIAN_12)
    assert not deb.consulted and deb.why == "no Debian:12 records"


def test_trivy_db_counts_only_when_trivy_ran_its_vulnerability_scanner(tmp_path: Path) -> None:
    none = sources.trivy_db(tmp_path, "secret", None)
    assert not none.consulted and none.why == f"no {tmp_path}/db/trivy.db, no --db-repository"
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "metadata.json").write_text(
        '{"Version": 2, "NextUpdate": "2026-12-03T06:00:00Z", "UpdatedAt": "2026-12-02T06:00:00Z"}')
    used = sources.trivy_db(tmp_path, "vuln+secret", "mirror.example/trivy-db:2")
    assert used.consulted and used.built == "2026-12-02" and "mirror.example" in used.where


@pytest.mark.parametrize("age, consulted", [(7, True), (8, False)])
def test_a_source_older_than_the_policy_limit_does_not_count(age: int, consulted: bool) -> None:
    today = date(2026, 12, 3)
    s = sources.Source("trivy DB", "/cache", ["debian", "pypi"], True, built=(today - timedelta(days=age)).isoformat())
    unknown = sources.Source("trivy report", "r.json", ["debian"], True)
    sources.apply_age_limit([s, unknown], 7, today)
    assert s.consulted is consulted and not unknown.consulted
    assert consulted or "older than the policy's 7 days" in s.why
    assert sources.coverage([s, unknown], {"debian", "pypi"}) == (
        {"debian": ["trivy DB"], "pypi": ["trivy DB"]} if consulted else {"debian": [], "pypi": []})


def _policy(tmp_path: Path, text: str) -> policy.Policy:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return policy.load(path)


def test_no_source_is_not_run_unless_a_waiver_in_force_covers_it(tmp_path: Path) -> None:
    covered = {"debian": [], "pypi": ["OSV folder (PyPI)"]}
    none = _policy(tmp_path, "max_source_age_days: 7\n")
    assert policy.vulnerability_verdict(none, covered, date(2026, 12, 3)).status == "NOT RUN"
    rules = _policy(tmp_path, "vulnerability_waiver: {reason: no feed on this host, expires: 2026-12-31}\n")
    waived = policy.vulnerability_verdict(rules, covered, date(2026, 12, 31))
    assert (waived.status, waived.missing, waived.waiver.reason) == ("waived", ["debian"], "no feed on this host")
    expired = policy.vulnerability_verdict(rules, covered, date(2027, 1, 1))
    assert (expired.status, expired.waiver_note) == ("NOT RUN", "the vulnerability waiver expired on 2026-12-31")
    # scan.json, as machines read it: the waiver in force with its reason, expiry and ecosystems
    assert waived.as_dict() == {"status": "waived", "missing": ["debian"], "waiver": {
        "reason": "no feed on this host", "expires": "2026-12-31", "ecosystems": ["debian", "pypi"]}, "waiver_note": ""}
    assert expired.as_dict() == {"status": "NOT RUN", "missing": ["debian"], "waiver": None,
                                 "waiver_note": "the vulnerability waiver expired on 2026-12-31"}
    narrow = _policy(tmp_path, "vulnerability_waiver: {reason: r, expires: 2026-12-31, ecosystems: [pypi]}\n")
    assert policy.vulnerability_verdict(narrow, covered, date(2026, 12, 3)).as_dict() == {
        "status": "NOT RUN", "missing": ["debian"], "waiver": None,
        "waiver_note": "the vulnerability waiver does not cover debian"}
    assert policy.vulnerability_verdict(none, {"debian": ["trivy DB"]}, date(2026, 12, 3)).as_dict() == {
        "status": "scanned", "missing": [], "waiver": None, "waiver_note": ""}


@pytest.mark.parametrize("text, needle", [
    ("vulnerability_waiver: {reason: x}\n", "vulnerability_waiver.expires: required key"),
    ("vulnerability_waiver: {expires: 2027-01-01}\n", "vulnerability_waiver.reason: required key"),
    ("vulnerability_waiver: {reason: x, expires: soon}\n", "is not a date"),
    ("vulnerability_waiver: {reason: x, expires: 2027-01-01, until: 2027-02-01}\n", "until: unknown key"),
    ("max_source_age_days: '7'\n", "max_source_age_days"),
    ("max_source_age_days: 0\n", "max_source_age_days"),
])
def test_bad_waivers_and_limits_are_errors(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(policy.PolicyError, match=__import__("re").escape(needle)):
        _policy(tmp_path, text)


def test_committed_policy_has_an_age_limit_and_no_waiver(repo: Path) -> None:
    rules = policy.load(repo / "security" / "policy.yaml")
    assert rules.max_source_age_days == 7 and rules.vulnerability_waiver is None


def test_not_run_line_names_what_was_looked_for() -> None:
    looked = [sources.Source("trivy DB", "/root/.cache/trivy/db", ["debian", "pypi"], False, "no database"),
              sources.Source("OSV folder (Debian:12)", "security/osv", ["debian"], False, "no Debian:12 records"),
              sources.Source("OSV folder (PyPI)", "security/osv", ["pypi"], True, built="2026-12-02", records=3)]
    report = {"vulnerabilities": policy.VulnerabilityVerdict("NOT RUN", ["debian"]).as_dict(),
              "vulnerability_sources": [s.as_dict() for s in looked]}
    assert gate.not_run_line(report) == (
        "vulnerabilities: NOT RUN (debian: no source; looked for: trivy DB at /root/.cache/trivy/db (no database), "
        "OSV folder (Debian:12) at security/osv (no Debian:12 records))")
    report["vulnerabilities"] = policy.VulnerabilityVerdict("NOT RUN", ["debian", "pypi"], None,
                                                            "the vulnerability waiver expired on 2026-12-01").as_dict()
    assert gate.not_run_line(report).startswith("vulnerabilities: NOT RUN (debian: no source; pypi: no source; "
                                                "looked for: trivy DB at /root/.cache/trivy/db (no database), OSV")
    assert gate.not_run_line(report).endswith("(no Debian:12 records), OSV folder (PyPI) at security/osv (); "
                                              "the vulnerability waiver expired on 2026-12-01)")


# ---- the release pipeline ---------------------------------------------------------------------------

def test_scan_resume_key_changes_with_policy_date_and_sources(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sources, "trivy_cache", lambda: tmp_path / "cache")
    policy_file, osv = tmp_path / "policy.yaml", tmp_path / "osv"
    policy_file.write_text("severity_threshold: HIGH\n")
    osv.mkdir()
    today = date(2026, 12, 3)

    def key(day: date = today) -> str:
        return scan_stage.scan_key("sha256:abc", policy_file, osv, day)

    first = key()
    assert key() == first  # same inputs, same key: the stage is skipped
    assert key(today + timedelta(days=1)) != first  # an allowlist entry or a waiver may have expired
    policy_file.write_text("severity_threshold: CRITICAL\n")
    second = key()
    assert second != first
    (osv / "GHSA-x.json").write_text((IMAGE_OSV / "GHSA-cx63-2mw6-8hw5.json").read_text())
    third = key()
    assert third != second
    (tmp_path / "cache" / "db").mkdir(parents=True)
    (tmp_path / "cache" / "db" / "metadata.json").write_text('{"Version": 2, "UpdatedAt": "2026-12-03T00:00:00Z"}')
    assert key() != third  # a new trivy database


@pytest.mark.parametrize("status, expected", [("NOT RUN", "not proven"), ("waived", "passed"), ("scanned", "passed")])
def test_release_scan_stage_is_not_proven_without_sources(monkeypatch, tmp_path: Path, status: str,
                                                          expected: str) -> None:
    waiver = {"reason": "no feed here", "expires": "2026-12-31", "ecosystems": ["debian", "pypi"]}
    report = {"counts": {"blocking": 0, "suppressed": 0, "informational": 1}, "sbom": "x/sbom.cdx.json",
              "blocked": False, "blocking": [],
              "vulnerabilities": {"status": status, "missing": [] if status == "scanned" else ["debian", "pypi"],
                                  "waiver": waiver if status == "waived" else None, "waiver_note": ""},
              "vulnerability_sources": []}
    monkeypatch.setattr(scan_stage.scan_gate, "run", lambda *a, **k: report)
    outcome = scan_stage.run_scan("img", tmp_path, tmp_path / "p.yaml", None, tmp_path)
    result, detail = outcome.status, outcome.detail
    assert result == expected
    if status == "waived":
        assert detail.startswith("vulnerabilities not scanned: no feed here, waiver expires 2026-12-31")
    if status == "NOT RUN":
        assert detail.startswith("vulnerabilities: NOT RUN (debian: no source")
    report["blocked"] = True  # a blocking finding wins
    assert scan_stage.run_scan("img", tmp_path, tmp_path / "p.yaml", None, tmp_path).status == "failed"


# ---- osv import ----------------------------------------------------------------------------------

def _zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in members.items():
            z.writestr(name, text)
    return path


def _records() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(IMAGE_OSV.glob("*.json"))}


def test_import_writes_the_ecosystems_records_and_they_match_the_image(tmp_path: Path) -> None:
    export = _zip(tmp_path / "all.zip", _records())
    into, lines = tmp_path / "osv", []
    deb = osv_import.import_zip(str(export), "Debian:12", into, say=lines.append)
    pypi = osv_import.import_zip(str(export), "PyPI", into, say=lines.append)
    assert (deb.records, deb.skipped, deb.newest) == (2, 1, "2025-10-15T00:00:00Z")
    assert (pypi.records, pypi.skipped) == (1, 2)
    assert sorted(p.name for p in (into / "Debian-12").iterdir()) == ["DEBIAN-CVE-2011-3374.json",
                                                                      "DEBIAN-CVE-2025-9230.json"]
    assert lines[0].startswith("==> Debian:12: 2 records") and "newest modified 2025-10-15T00:00:00Z" in lines[0]
    hits = match_osv([OPENSSL, APT, SETUPTOOLS], load_osv(into), DEBIAN_12)
    assert ids(hits) == {("DEBIAN-CVE-2011-3374", "apt"), ("GHSA-cx63-2mw6-8hw5", "setuptools")}
    other = _zip(tmp_path / "one.zip", {"GHSA-cx63-2mw6-8hw5.json": _records()["GHSA-cx63-2mw6-8hw5.json"]})
    with pytest.raises(osv_import.OsvImportError, match="no records of Debian:12 in it"):
        osv_import.import_zip(str(other), "Debian:12", into, say=lines.append)  # another ecosystem's export
    with pytest.raises(osv_import.OsvImportError, match="no records of Debian:12 in it"):
        osv_import.import_zip(str(_zip(tmp_path / "empty.zip", {})), "Debian:12", into, say=lines.append)
    assert sorted(p.name for p in (into / "Debian-12").iterdir()) == ["DEBIAN-CVE-2011-3374.json",
                                                                      "DEBIAN-CVE-2025-9230.json"]  # kept


@pytest.mark.parametrize("member, text, needle", [
    ("../evil.json", "{}", "'../evil.json': not a plain NAME.json member"),
    ("/etc/cron.d/evil.json", "{}", "not a plain NAME.json member"),
    ("sub/GHSA-x.json", "{}", "not a plain NAME.json member"),
    ("BAD-1.json", '{"id": "BAD-1", "affected": [{"package": {"ecosystem": "PyPI", "name": "x"}, '
                   '"ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "not a version"}]}]}]}',
     "BAD-1.json: 0.affected.0"),
    ("BAD-2.json", "{not json", "bad.zip: BAD-2.json: not valid JSON"),
])
def test_import_refuses_a_bad_member_and_writes_nothing(tmp_path: Path, member: str, text: str, needle: str) -> None:
    into = tmp_path / "osv"
    osv_import.import_zip(str(_zip(tmp_path / "good.zip", _records())), "PyPI", into, say=lambda _l: None)
    before = sorted(p.relative_to(into) for p in into.rglob("*"))
    bad = _zip(tmp_path / "bad.zip", {**_records(), member: text})
    with pytest.raises(osv_import.OsvImportError) as err:
        osv_import.import_zip(str(bad), "PyPI", into, say=lambda _l: None)
    assert needle in str(err.value) and "\n" not in str(err.value)
    assert sorted(p.relative_to(into) for p in into.rglob("*")) == before
    assert not (tmp_path / "evil.json").exists()


def test_import_refuses_a_zip_bomb_and_a_bad_ecosystem(tmp_path: Path) -> None:
    bomb = _zip(tmp_path / "bomb.zip", {"GHSA-a.json": " " * (2 * 1024 * 1024)})
    with pytest.raises(osv_import.OsvImportError, match="compressed"):
        osv_import.import_zip(str(bomb), "PyPI", tmp_path / "osv", say=lambda _l: None)
    with pytest.raises(osv_import.OsvImportError, match=r"not PyPI, Debian:N or Ubuntu:YY\.MM"):
        osv_import.import_zip(str(bomb), "npm", tmp_path / "osv", say=lambda _l: None)


def test_import_from_an_http_mirror_and_bad_input_through_the_cli(tmp_path: Path, capsys) -> None:
    import functools
    import http.server
    import threading

    from ngc_paddle.cli import main

    served = tmp_path / "mirror" / "PyPI"
    served.mkdir(parents=True)
    _zip(served / "all.zip", _records())
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:  # the server's access log would mix into the CLI's stderr
            pass

    handler = functools.partial(Quiet, directory=str(tmp_path / "mirror"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/PyPI/all.zip"
        assert main(["osv", "import", "--ecosystem", "PyPI", url, "--into", str(tmp_path / "osv")]) == 0
        assert "==> PyPI: 1 records" in capsys.readouterr().out
        assert [p.name for p in (tmp_path / "osv" / "PyPI").iterdir()] == ["GHSA-cx63-2mw6-8hw5.json"]
        missing = url.replace("PyPI/all.zip", "nope.zip")
        assert main(["osv", "import", "--ecosystem", "PyPI", missing, "--into", str(tmp_path / "osv")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {missing}: (download): HTTP Error 404") and err.count("\n") == 1
    finally:
        server.shutdown()
    assert main(["osv", "import", "--ecosystem", "PyPI", str(tmp_path / "none.zip"), "--into",
                 str(tmp_path / "osv")]) == 2
    assert "none.zip: (file): cannot be read (No such file" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "osv" / "PyPI").iterdir()] == ["GHSA-cx63-2mw6-8hw5.json"]
