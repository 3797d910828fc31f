"""The Debian side of freshness: the archive's signed Release file, its Packages indexes (checked against the
Release file's SHA256, cached parsed) and the image's packages compared with the newest of each suite.

The long form: docs/design-notes.md, section `ngc_paddle/scan/vulnerabilities/freshness/`.
"""

import contextlib
import email.utils
import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from debian import deb822
from debian.debian_support import Version as DebVersion

from ngc_paddle.manifest.schema import Source
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.inventory import Package
from ngc_paddle.scan.vulnerabilities.freshness.bounded_fetch import NotFound, Unavailable, fetch

MAX_RELEASE_BYTES = 4 * 1024 * 1024  # bookworm's InRelease is 150 kB
MAX_INDEX_BYTES = 64 * 1024 * 1024  # a compressed Packages file
MAX_UNPACKED_BYTES = 512 * 1024 * 1024  # bookworm main amd64 unpacks to 50 MB
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
CACHE_DIR = Path("build/cache/debian-indexes")
CACHE_FORMAT = 1
CACHE_DAYS = 14


@dataclass
class SuiteIndex:
    """The newest version of every binary package of one suite (main), by name and architecture."""

    suite: str
    url: str  # the dists/<suite> folder
    security: bool
    date: str = ""
    signature: str = ""
    indexes: list[str] = field(default_factory=list)
    versions: dict[str, dict[str, str]] = field(default_factory=dict)  # package -> architecture -> version

    def summary(self) -> dict:
        return {"suite": self.suite, "url": self.url, "release_date": self.date, "signature": self.signature,
                "indexes": self.indexes, "packages": sum(len(v) for v in self.versions.values())}


def verify_signature(inrelease: bytes, keyring: Path | None) -> tuple[str, bytes]:
    """('verified ...' or why not, the text to read: only what the signature covers when verified).

    Unavailable when a keyring is at hand and the signature does not verify.
    """
    if keyring is None:
        return "not checked (no keyring given)", inrelease
    gpgv = shutil.which("gpgv")
    if gpgv is None or not keyring.is_file():
        return (f"not checked (gpgv or {keyring} is missing on this host; "
                "apt-get install gpgv debian-archive-keyring)"), inrelease
    with tempfile.NamedTemporaryFile(suffix=".InRelease") as tmp:
        tmp.write(inrelease)
        tmp.flush()
        proc = subprocess.run([gpgv, "--keyring", str(keyring), "--output", "-", tmp.name], capture_output=True,
                              timeout=60, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise Unavailable(f"the signature of InRelease does not verify with {keyring}: {last}")
    return f"verified ({keyring.name})", proc.stdout


def _unpack(name: str, data: bytes, url: str) -> bytes:
    if name.endswith(".xz"):
        dec = lzma.LZMADecompressor()
        out = dec.decompress(data, max_length=MAX_UNPACKED_BYTES)
        done = dec.eof
    elif name.endswith(".gz"):
        dec_gz = zlib.decompressobj(wbits=31)
        out = dec_gz.decompress(data, MAX_UNPACKED_BYTES)
        done = dec_gz.eof
    else:
        return data
    if not done:
        raise Unavailable(f"{url}: unpacks to more than {MAX_UNPACKED_BYTES} bytes or is truncated")
    return out


def parse_packages(text: bytes) -> dict[str, dict[str, str]]:
    """Newest version per package and architecture of a Packages file."""
    newest: dict[str, dict[str, str]] = {}
    for para in deb822.Packages.iter_paragraphs(io.BytesIO(text), use_apt_pkg=False,
                                                fields=["Package", "Version", "Architecture"]):
        name, version, arch = para.get("Package"), para.get("Version"), para.get("Architecture")
        if not (name and version and arch):
            continue
        known = newest.setdefault(name, {}).get(arch)
        try:
            if known is None or DebVersion(version) > DebVersion(known):
                newest[name][arch] = version
        except ValueError:
            continue  # not a Debian version: no candidate
    return newest


def _index(dist_url: str, name: str, sha256: str, size: int, cache_dir: Path | None,
           by_hash: bool) -> dict[str, dict[str, str]]:
    """One Packages index, checked against its Release SHA256; parsed once, then read from the cache.

    With `Acquire-By-Hash: yes` (Debian's archives) the file is fetched by its hash, as apt does: the
    plain name may already hold the next version while the Release file in hand is the previous one.
    """
    cached = cache_dir / f"{sha256}.json" if cache_dir else None
    if cached and cached.is_file():
        try:
            data = json.loads(cached.read_text())
            if data.get("format") == CACHE_FORMAT and data.get("sha256") == sha256:
                return data["versions"]
        except (OSError, ValueError, AttributeError):
            pass  # a damaged cache entry is fetched again
    url = f"{dist_url}/{name}"
    if size > MAX_INDEX_BYTES:
        raise Unavailable(f"{url}: the Release file gives it {size} bytes, over the limit of {MAX_INDEX_BYTES}")
    try:
        raw, _ = fetch(f"{url.rsplit('/', 1)[0]}/by-hash/SHA256/{sha256}" if by_hash else url, size)
    except NotFound:
        if not by_hash:
            raise
        raw, _ = fetch(url, size)
    got = hashlib.sha256(raw).hexdigest()
    if got != sha256:
        raise Unavailable(f"{url}: sha256 {got[:16]}... does not match {sha256[:16]}... in its Release file "
                          "(a mirror in the middle of an update, or a corrupted copy)")
    versions = parse_packages(_unpack(name, raw, url))
    if cached:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"format": CACHE_FORMAT, "sha256": sha256, "url": url, "versions": versions}))
        os.replace(tmp, cached)
        _prune(cached.parent)
    return versions


def _prune(cache_dir: Path) -> None:
    """Drop indexes not used for CACHE_DAYS (each day's -security has a new one)."""
    horizon = time.time() - CACHE_DAYS * 86400
    for old in cache_dir.glob("*.json"):
        with contextlib.suppress(OSError):
            if old.stat().st_atime < horizon and old.stat().st_mtime < horizon:
                old.unlink()


def _check_valid_until(value: str, where: str) -> None:
    """apt refuses a Release file past its Valid-Until (an old copy replayed by a mirror or a proxy)."""
    if not value:
        return
    try:
        until = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        raise Unavailable(f"{where}: Valid-Until {value[:40]!r} is not a date") from None
    if until.tzinfo is None:
        until = until.replace(tzinfo=UTC)
    if until < datetime.now(UTC):
        raise Unavailable(f"{where}: expired on {value} (Valid-Until): the mirror is stale")


def read_suite(base_url: str, dist: str, arch: str, security: bool, cache_dir: Path | None,
               keyring: Path | None, component: str = "main") -> SuiteIndex:
    """Read `<base_url>/dists/<dist>`: its InRelease, then the Packages of `component` for arch (and 'all')."""
    dist_url = f"{base_url.rstrip('/')}/dists/{dist}"
    raw, _ = fetch(f"{dist_url}/InRelease", MAX_RELEASE_BYTES)
    signature, signed = verify_signature(raw, keyring)
    try:
        release = deb822.Release(signed)
        sums = {entry["name"]: (entry["sha256"], int(entry["size"])) for entry in release.get("SHA256", [])}
    except (KeyError, ValueError, TypeError) as exc:
        raise Unavailable(f"{dist_url}/InRelease: not a Release file ({type(exc).__name__})") from None
    if not sums:
        raise Unavailable(f"{dist_url}/InRelease lists no SHA256 sums")
    _check_valid_until(release.get("Valid-Until", ""), f"{dist_url}/InRelease")
    index = SuiteIndex(dist, dist_url, security, release.get("Date", ""), signature)
    # As apt reads it: binary-all is a separate index only when 'all' is among the Architectures and the
    # archive does not say "No-Support-for-Architecture-all: Packages"; otherwise each arch's index has them.
    by_hash = release.get("Acquire-By-Hash", "").lower() == "yes"
    archs = [arch]
    if ("all" in release.get("Architectures", "").split() and arch != "all"
            and release.get("No-Support-for-Architecture-all", "") != "Packages"):
        archs.append("all")
    for a in archs:
        base = f"{component}/binary-{a}/Packages"
        name = next((n for n in (f"{base}.xz", f"{base}.gz", base) if n in sums), None)
        if name is None:
            if a == "all":
                continue
            raise Unavailable(f"{dist_url}/InRelease lists no {base} index (is '{arch}' built there?)")
        for package, by_arch in _index(dist_url, name, *sums[name], cache_dir, by_hash).items():
            for pkg_arch, version in by_arch.items():
                known = index.versions.setdefault(package, {}).get(pkg_arch)
                if known is None or DebVersion(version) > DebVersion(known):
                    index.versions[package][pkg_arch] = version
        index.indexes.append(name)
    return index


def debian_suites(source: Source, arch: str, cache_dir: Path | None, keyring: Path | None) -> list[SuiteIndex]:
    """The suite, -updates (same archive) and -security (the security archive) the build's apt used."""
    suite, url = str(source.suite), str(source.url)
    suites = [read_suite(url, suite, arch, False, cache_dir, keyring),
              read_suite(url, f"{suite}-updates", arch, False, cache_dir, keyring)]
    if source.security_url:
        try:
            suites.append(read_suite(str(source.security_url), f"{suite}-security", arch, True, cache_dir, keyring))
        except NotFound:  # Debian 10 and older: dists/<suite>/updates
            suites.append(read_suite(str(source.security_url), f"{suite}/updates", arch, True, cache_dir, keyring))
    return suites


def compare_debian(packages: list[Package], suites: list[SuiteIndex], image_arch: str) -> tuple[list[dict],
                                                                                                 list[str]]:
    """Pending updates ({package, arch, installed, candidate, suite, security}) and packages in no suite."""
    pending, absent = [], []
    for pkg in packages:
        arch = pkg.arch or image_arch
        offers = [(DebVersion(v), s) for s in suites if (v := s.versions.get(pkg.name, {}).get(arch))]
        if not offers:
            absent.append(f"{pkg.name}:{arch}={pkg.version}")
            continue
        try:
            installed = DebVersion(pkg.version)
        except ValueError:
            absent.append(f"{pkg.name}:{arch}={pkg.version} (not a Debian version)")
            continue
        newer = [(v, s) for v, s in offers if v > installed]
        if not newer:
            continue
        security = [(v, s) for v, s in newer if s.security]
        version, suite = max(security or newer, key=lambda pair: pair[0])
        pending.append({"package": pkg.name, "arch": arch, "installed": pkg.version, "candidate": str(version),
                        "suite": suite.suite, "security": bool(security), "layer": pkg.layer})
    return pending, absent


def debian_findings(pending: list[dict]) -> list[Finding]:
    findings = []
    for p in pending:
        kind = "security-update" if p["security"] else "outdated"
        what = "a security update" if p["security"] else "a newer version"
        findings.append(Finding(
            kind, f"{p['suite']}/{p['candidate']}", "HIGH" if p["security"] else "LOW",
            f"{p['suite']} has {what} {p['candidate']}; the image has {p['installed']}",
            package=p["package"], installed=p["installed"], fixed=p["candidate"],
            location=f"{p['layer']} ({p['suite']})", source="debian-archive"))
    return findings


