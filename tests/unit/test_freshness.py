"""The freshness check against a small archive and index served on 127.0.0.1: pending updates, yanked pins."""

import hashlib
import json
import lzma
import shutil
import socket
import threading
from collections.abc import Iterator
from datetime import date
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ngc_paddle.manifest.loader import load_manifest
from ngc_paddle.manifest.schema import Source
from ngc_paddle.scan import policy
from ngc_paddle.scan.source.image_release import of_image
from ngc_paddle.scan.source.inventory import Package
from ngc_paddle.scan.vulnerabilities import freshness
from ngc_paddle.scan.vulnerabilities.freshness import bounded_fetch, debian_archive, pypi_yanks

REPO = Path(__file__).resolve().parents[2]
CONFIG = {"architecture": "amd64", "config": {"Labels": {"ngc-paddle.release": "26.12", "ngc-paddle.flavor": "cpu"}}}

# Real bookworm packages and versions (point release, -updates, -security).
MAIN = [("libssl3", "3.0.20-1~deb12u2", "amd64"), ("zlib1g", "1:1.2.13.dfsg-1", "amd64"),
        ("tzdata", "2024b-0+deb12u1", "all"), ("libc6", "2.36-9+deb12u14", "amd64"),
        ("libpam-runtime", "1.5.2-6+deb12u1", "all")]
UPDATES = [("tzdata", "2025b-0+deb12u1", "all")]
SECURITY = [("libssl3", "3.0.22-1~deb12u2", "amd64"), ("libc6", "2.36-9+deb12u7", "amd64"),
            ("libpam-runtime", "1.5.2-6+deb12u3", "all")]


def packages_file(entries: list[tuple[str, str, str]]) -> bytes:
    paras = []
    for name, version, arch in entries:
        pool = f"pool/main/{name[:4] if name.startswith('lib') else name[0]}/{name}"
        paras.append(f"Package: {name}\nVersion: {version}\nInstalled-Size: 100\n"
                     f"Maintainer: Debian Maintainers <debian-devel@lists.debian.org>\nArchitecture: {arch}\n"
                     f"Description: {name}\nSection: libs\nPriority: optional\n"
                     f"Filename: {pool}/{name}_{version.split(':')[-1]}_{arch}.deb\nSize: 1000\n"
                     f"SHA256: {hashlib.sha256(name.encode()).hexdigest()}\n")
    return "\n".join(paras).encode()


def write_suite(dist_dir: Path, codename: str, suite: str, entries: list[tuple[str, str, str]],
                by_hash: bool = True, architectures: str = "amd64 arm64", corrupt: bool = False) -> None:
    """dists/<suite>: an InRelease (unsigned) listing main/binary-amd64/Packages.xz and its SHA256."""
    binary = dist_dir / "main" / "binary-amd64"
    binary.mkdir(parents=True)
    packed = lzma.compress(packages_file(entries))
    sha = hashlib.sha256(packed).hexdigest()
    (binary / "Packages.xz").write_bytes(lzma.compress(packages_file(entries[:-1])) if corrupt else packed)
    if by_hash:
        (binary / "by-hash" / "SHA256").mkdir(parents=True)
        (binary / "by-hash" / "SHA256" / sha).write_bytes(packed)
    md5 = hashlib.md5(packed).hexdigest()
    (dist_dir / "InRelease").write_text(
        f"Origin: Debian\nLabel: Debian\nSuite: {suite}\nCodename: {codename}\n"
        f"Date: Sat, 11 Jul 2026 10:16:37 UTC\nAcquire-By-Hash: {'yes' if by_hash else 'no'}\n"
        f"Architectures: {architectures}\nComponents: main\nDescription: test archive\n"
        f"MD5Sum:\n {md5} {len(packed):>8} main/binary-amd64/Packages.xz\n"
        f"SHA256:\n {sha} {len(packed):>8} main/binary-amd64/Packages.xz\n")


class Handler(SimpleHTTPRequestHandler):
    """Files as they are; a folder under /simple/ answers its index.json as PEP 691 JSON."""

    def do_GET(self) -> None:
        if self.path.startswith("/simple/"):
            page = Path(self.directory) / self.path.strip("/") / "index.json"
            if not page.is_file():
                self.send_error(404)
                return
            body = page.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", pypi_yanks.PEP691)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    root = tmp_path / "www"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def archive(root: Path, **kwargs: bool) -> None:
    write_suite(root / "debian/dists/bookworm", "bookworm", "oldstable", MAIN)
    write_suite(root / "debian/dists/bookworm-updates", "bookworm-updates", "oldstable-updates", UPDATES)
    write_suite(root / "debian-security/dists/bookworm-security", "bookworm-security", "oldstable-security",
                SECURITY, **kwargs)


def source(url: str) -> Source:
    return Source(kind="debian", url=f"{url}/debian", suite="bookworm", security_url=f"{url}/debian-security")


def installed(*entries: tuple[str, str, str]) -> list[Package]:
    return [Package("deb", n, v, "os", arch=a) for n, v, a in entries]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_updates_security_equal_and_older(served: tuple[Path, str], tmp_path: Path) -> None:
    root, url = served
    archive(root)
    suites = debian_archive.debian_suites(source(url), "amd64", tmp_path / "cache", keyring=None)
    assert [s.suite for s in suites] == ["bookworm", "bookworm-updates", "bookworm-security"]
    image = installed(("libssl3", "3.0.20-1~deb12u2", "amd64"),  # -security has 3.0.22: blocks
                      ("tzdata", "2024b-0+deb12u1", "all"),  # -updates has 2025b: informational
                      ("zlib1g", "1:1.2.13.dfsg-1", "amd64"),  # as in the archive: nothing
                      ("libc6", "2.36-9+deb12u14", "amd64"),  # -security's 2.36-9+deb12u7 is older: nothing
                      ("libpam-runtime", "1.5.2-6+deb12u1", "all"),  # arch all, in -security's amd64 index
                      ("libfoo-local", "1.0", "amd64"))  # in no suite
    pending, absent = debian_archive.compare_debian(image, suites, "amd64")
    got = {(p["package"], p["installed"], p["candidate"], p["suite"], p["security"]) for p in pending}
    assert got == {("libssl3", "3.0.20-1~deb12u2", "3.0.22-1~deb12u2", "bookworm-security", True),
                   ("tzdata", "2024b-0+deb12u1", "2025b-0+deb12u1", "bookworm-updates", False),
                   ("libpam-runtime", "1.5.2-6+deb12u1", "1.5.2-6+deb12u3", "bookworm-security", True)}
    assert absent == ["libfoo-local:amd64=1.0"]
    rules = policy.load(REPO / "security" / "policy.yaml")
    decision = policy.decide(rules, debian_archive.debian_findings(pending), date(2026, 12, 3))
    assert {(f.kind, f.package, f.installed, f.fixed) for f in decision.blocking} == {
        ("security-update", "libssl3", "3.0.20-1~deb12u2", "3.0.22-1~deb12u2"),
        ("security-update", "libpam-runtime", "1.5.2-6+deb12u1", "1.5.2-6+deb12u3")}
    assert [(f.kind, f.package) for f in decision.informational] == [("outdated", "tzdata")]


def test_the_default_policy_blocks_security_updates_and_yanked_pins(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("severity_threshold: HIGH\n")  # no block_on: the defaults
    assert {"security-update", "yanked"} <= policy.load(path).block_on
    assert "outdated" not in policy.load(path).block_on


def test_index_fetched_by_hash_and_then_read_from_the_cache(served: tuple[Path, str], tmp_path: Path) -> None:
    root, url = served
    archive(root)
    # the plain name already holds a newer index than the Release file in hand, as on a mirror mid-update
    plain = root / "debian-security/dists/bookworm-security/main/binary-amd64/Packages.xz"
    plain.write_bytes(lzma.compress(packages_file([("libssl3", "3.0.99-1", "amd64")])))
    first = debian_archive.read_suite(f"{url}/debian-security", "bookworm-security", "amd64", True,
                                      tmp_path / "c", None)
    assert first.versions["libssl3"] == {"amd64": "3.0.22-1~deb12u2"}
    shutil.rmtree(plain.parent)  # gone from the server: the cache keyed by the listed SHA256 answers
    again = debian_archive.read_suite(f"{url}/debian-security", "bookworm-security", "amd64", True,
                                      tmp_path / "c", None)
    assert again.versions == first.versions and again.date == "Sat, 11 Jul 2026 10:16:37 UTC"
    with pytest.raises(bounded_fetch.Unavailable, match="HTTP 404"):
        debian_archive.read_suite(f"{url}/debian-security", "bookworm-security", "amd64", True,
                                  tmp_path / "other", None)


def test_sha256_mismatch_is_one_line_and_not_run(served: tuple[Path, str], tmp_path: Path) -> None:
    root, url = served
    archive(root, by_hash=False, corrupt=True)
    with pytest.raises(bounded_fetch.Unavailable) as exc:
        debian_archive.debian_suites(source(url), "amd64", tmp_path / "cache", keyring=None)
    message = str(exc.value)
    assert "\n" not in message and "bookworm-security/main/binary-amd64/Packages.xz: sha256" in message
    assert "does not match" in message
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2  # the suite and -updates; nothing of the bad one


def test_binary_all_is_a_separate_index_only_where_the_release_says_so(served: tuple[Path, str]) -> None:
    root, url = served
    dist = root / "debian/dists/bookworm"
    write_suite(dist, "bookworm", "oldstable", MAIN[:2], architectures="all amd64")
    packed = lzma.compress(packages_file([("tzdata", "2025b-0+deb12u1", "all")]))
    (dist / "main/binary-all").mkdir()
    (dist / "main/binary-all/by-hash/SHA256").mkdir(parents=True)
    (dist / "main/binary-all/by-hash/SHA256" / hashlib.sha256(packed).hexdigest()).write_bytes(packed)
    release = (dist / "InRelease").read_text()
    (dist / "InRelease").write_text(release + f" {hashlib.sha256(packed).hexdigest()} {len(packed)} "
                                              "main/binary-all/Packages.xz\n")
    suite = debian_archive.read_suite(f"{url}/debian", "bookworm", "amd64", False, None, None)
    assert suite.indexes == ["main/binary-amd64/Packages.xz", "main/binary-all/Packages.xz"]
    assert suite.versions["tzdata"] == {"all": "2025b-0+deb12u1"}
    # Debian's main archive: arch-all packages are in each arch's index, binary-all is not read
    (dist / "InRelease").write_text(release.replace("Architectures:", "No-Support-for-Architecture-all: Packages\n"
                                                                      "Architectures:"))
    suite = debian_archive.read_suite(f"{url}/debian", "bookworm", "amd64", False, None, None)
    assert suite.indexes == ["main/binary-amd64/Packages.xz"] and "tzdata" not in suite.versions


def test_an_unsigned_release_does_not_pass_the_archive_keyring(served: tuple[Path, str], tmp_path: Path) -> None:
    if shutil.which("gpgv") is None or not debian_archive.KEYRING.is_file():
        pytest.skip("gpgv or the Debian archive keyring is not installed here")
    root, url = served
    archive(root)
    with pytest.raises(bounded_fetch.Unavailable, match="signature of InRelease does not verify"):
        debian_archive.read_suite(f"{url}/debian", "bookworm", "amd64", False, tmp_path, debian_archive.KEYRING)


def test_a_release_file_past_its_valid_until_is_refused(served: tuple[Path, str]) -> None:
    root, url = served
    archive(root)
    inrelease = root / "debian/dists/bookworm/InRelease"
    text = inrelease.read_text()
    inrelease.write_text(text.replace("Acquire-By-Hash", "Valid-Until: Sat, 18 Jul 2026 10:16:37 UTC\nAcquire-By-Hash"))
    with pytest.raises(bounded_fetch.Unavailable, match=r"expired on Sat, 18 Jul 2026 .*the mirror is stale"):
        debian_archive.read_suite(f"{url}/debian", "bookworm", "amd64", False, None, None)
    inrelease.write_text(text.replace("Acquire-By-Hash", "Valid-Until: Thu, 18 Jul 2126 10:16:37 UTC\nAcquire-By-Hash"))
    assert debian_archive.read_suite(f"{url}/debian", "bookworm", "amd64", False, None, None).versions


def test_downloads_are_bounded(served: tuple[Path, str]) -> None:
    root, url = served
    (root / "big").write_bytes(b"x" * 5000)
    with pytest.raises(bounded_fetch.Unavailable, match="larger than 4096 bytes"):
        bounded_fetch.fetch(f"{url}/big", 4096)
    assert bounded_fetch.fetch(f"{url}/big", 5000)[0] == b"x" * 5000


def pep691(root: Path, name: str, files: dict[str, bool | str]) -> None:
    page = root / "simple" / name
    page.mkdir(parents=True, exist_ok=True)
    (page / "index.json").write_text(json.dumps({
        "meta": {"api-version": "1.1"}, "name": name,
        "files": [{"filename": f, "url": f"../../files/{f}", "hashes": {"sha256": "0" * 64}, "yanked": y}
                  for f, y in files.items()]}))


def test_pep691_yanked_release(served: tuple[Path, str]) -> None:
    root, url = served
    pep691(root, "urllib3", {"urllib3-2.2.0-py3-none-any.whl": "Regression in proxy handling",
                             "urllib3-2.2.0.tar.gz": True, "urllib3-2.2.1-py3-none-any.whl": False,
                             "urllib3-2.2.2-py3-none-any.whl": True, "urllib3-2.2.2.tar.gz": False})
    index = f"{url}/simple"
    assert pypi_yanks.yank_state(index, "urllib3", "2.2.0") == ("yanked", "Regression in proxy handling")
    assert pypi_yanks.yank_state(index, "urllib3", "2.2.1") == ("ok", "")
    assert pypi_yanks.yank_state(index, "urllib3", "2.2.2")[0] == "ok"  # one file still offered
    assert pypi_yanks.yank_state(index, "urllib3", "2.3.0")[0] == "absent"
    with pytest.raises(bounded_fetch.Unavailable, match="HTTP 404"):
        pypi_yanks.yank_state(index, "no-such-project", "1.0")
    (root / "html").mkdir()
    (root / "html" / "urllib3").mkdir()
    (root / "html" / "urllib3" / "index.html").write_text("<html></html>")
    with pytest.raises(bounded_fetch.Unavailable, match="not PEP 691 JSON"):
        pypi_yanks.yank_state(f"{url}/html", "urllib3", "2.2.0")


def release_root(tmp_path: Path, url: str | None, pypi: str | None) -> Path:
    """A copy of the release manifest whose Debian and PyPI sources point at the test server."""
    root = tmp_path / "repo"
    (root / "releases").mkdir(parents=True)
    text = (REPO / "releases" / "26.12.yaml").read_text()
    if url:
        text = text.replace("http://deb.debian.org/debian-security", f"{url}/debian-security")
        text = text.replace("http://deb.debian.org/debian\n", f"{url}/debian\n")
    if pypi:
        text = text.replace("url: https://pypi.org/simple\n", f"url: {pypi}\n")
    (root / "releases" / "26.12.yaml").write_text(text)
    return root


def test_check_end_to_end_blocks_a_security_update_and_a_yanked_pin(served: tuple[Path, str],
                                                                      tmp_path: Path) -> None:
    root, url = served
    archive(root)
    repo = release_root(tmp_path, url, f"{url}/simple")
    manifest = load_manifest(repo / "releases" / "26.12.yaml")
    for comp in manifest.flavors["cpu"].components.values():
        if comp.kind == "pip":
            yanked = "broken wheel" if comp.package == "numpy" else False
            pep691(root, str(comp.package).lower(), {f"{comp.package}-{comp.version}-py3-none-any.whl": yanked})
    image = [*installed(("libssl3", "3.0.20-1~deb12u2", "amd64"), ("zlib1g", "1:1.2.13.dfsg-1", "amd64")),
             Package("pypi", "numpy", manifest.flavors["cpu"].components["numpy"].version, "paddle")]
    lines: list[str] = []
    result = freshness.check(image, CONFIG, of_image(CONFIG, None, repo, {}), repo, cache_dir=tmp_path / "cache",
                             keyring=None,
                             say=lines.append)
    assert result.not_run == {}
    assert [(p["package"], p["candidate"]) for p in result.pending] == [("libssl3", "3.0.22-1~deb12u2")]
    assert result.debian_compared == 2
    assert [y["package"] for y in result.yanked] == ["numpy"] and result.yanked[0]["reason"] == "broken wheel"
    assert result.python_checked == sum(c.kind == "pip" for c in manifest.flavors["cpu"].components.values())
    assert {f.kind for f in result.findings} == {"security-update", "yanked"}
    report = result.as_dict()
    assert report["security_updates"] == 1 and [s["suite"] for s in report["suites"]] == [
        "bookworm", "bookworm-updates", "bookworm-security"]
    text = "\n".join(freshness.markdown(report))
    assert "| libssl3 | amd64 | 3.0.20-1~deb12u2 | 3.0.22-1~deb12u2 | bookworm-security | yes |" in text
    assert "1 pending update(s)" in lines[0]


def test_unreachable_sources_are_not_run_with_the_url_and_the_fix(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{closed_port()}"
    repo = release_root(tmp_path, dead, f"{dead}/simple")
    zlib = installed(("zlib1g", "1:1.2.13.dfsg-1", "amd64"))
    result = freshness.check(zlib, CONFIG, of_image(CONFIG, None, repo, {}), repo, cache_dir=tmp_path / "cache",
                             keyring=None, say=lambda _: None)
    assert result.findings == [] and result.pending == []
    assert set(result.not_run) == {"deb", "pypi:pypi"}
    deb = result.not_run["deb"]
    assert f"{dead}/debian/dists/bookworm/InRelease" in deb and "fix: point sources.debian at" in deb
    assert "--source debian=URL" in deb and "\n" not in deb
    assert f"{dead}/simple/" in result.not_run["pypi:pypi"] and "--source pypi=URL" in result.not_run["pypi:pypi"]


def test_an_image_without_release_labels_is_not_run(tmp_path: Path) -> None:
    config, zlib = {"architecture": "amd64"}, installed(("zlib1g", "1:1.2.13.dfsg-1", "amd64"))
    result = freshness.check(zlib, config, of_image(config, None, REPO, {}), REPO, cache_dir=tmp_path, keyring=None,
                             say=lambda _: None)
    assert set(result.not_run) == {"deb", "pypi"} and "ngc-paddle.release" in result.not_run["deb"]


def test_a_layer_the_lock_left_out_is_not_looked_up(tmp_path: Path) -> None:
    """gpu-cu118's committed lock leaves the tensorrt layer out (NVIDIA's index unreachable when it was made): the
    image holds no TensorRT, so its source is not asked, and an unreachable nvidia index is no reason to say NOT RUN.
    """
    from ngc_paddle.flavor import resolve

    dead = f"http://127.0.0.1:{closed_port()}"
    flavor = resolve(REPO, "26.12", "gpu-cu118", {"nvidia": f"{dead}/nvidia", "pypi": f"{dead}/simple"})
    assert "tensorrt" in flavor.left_out_layers and "tensorrt" in flavor.components()
    assert "tensorrt" not in flavor.installed_components()
    config = {"architecture": "amd64",
              "config": {"Labels": {"ngc-paddle.release": "26.12", "ngc-paddle.flavor": "gpu-cu118"}}}
    result = freshness.check([], config, of_image(config, None, REPO, {}, flavor), REPO, cache_dir=tmp_path,
                             keyring=None, say=lambda _: None)
    assert set(result.not_run) == {"pypi:pypi"}, result.not_run
