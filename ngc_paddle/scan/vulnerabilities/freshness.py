"""Freshness without a database: Debian packages behind their archive, pinned Python releases that were yanked.

Why: a fix that Debian has published in `<suite>-security` but the image lacks is a known, fixable
vulnerability whatever database is at hand, and the archive's own signed indexes prove it; a yanked
pin is a release its authors withdrew. Both questions go only to the sources the image was built
from (the release manifest's, or the mirror given with `--source`), so the check runs on every
scan, on any host that could build the image. A source that cannot be asked is NOT RUN with a
one-line reason, never a pass and never a traceback.

The long form: docs/design-notes.md, section `ngc_paddle/scan/vulnerabilities/freshness.py`.
"""

import contextlib
import email.utils
import hashlib
import http.client
import io
import json
import lzma
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from debian import deb822
from debian.debian_support import Version as DebVersion
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion
from packaging.version import Version as PyVersion
from pydantic import BaseModel, ConfigDict, ValidationError

from ngc_paddle.flavor import ResolvedFlavor
from ngc_paddle.manifest.schema import Source
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.image_release import ImageRelease
from ngc_paddle.scan.source.inventory import Package

TIMEOUT_S = 30  # per connection and read
DEADLINE_S = 180  # one download in all: bookworm's main Packages.xz is about 9 MB
MAX_RELEASE_BYTES = 4 * 1024 * 1024  # bookworm's InRelease is 150 kB
MAX_INDEX_BYTES = 64 * 1024 * 1024  # a compressed Packages file
MAX_UNPACKED_BYTES = 512 * 1024 * 1024  # bookworm main amd64 unpacks to 50 MB
MAX_SIMPLE_BYTES = 32 * 1024 * 1024  # a PEP 691 project page (numpy's is a few MB)
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
CACHE_DIR = Path("build/cache/debian-indexes")
CACHE_FORMAT = 1
CACHE_DAYS = 14
PEP691 = "application/vnd.pypi.simple.v1+json"
USER_AGENT = "ngc-paddle-scan"


class Unavailable(Exception):
    """A source could not be asked or gave something unusable; str() is the one-line reason."""


class NotFound(Unavailable):
    """The source answered 404."""


def fetch(url: str, limit: int, accept: str | None = None) -> tuple[bytes, str]:
    """The body (at most `limit` bytes, within DEADLINE_S) and content type of a URL, or Unavailable."""
    headers = {"User-Agent": USER_AGENT, **({"Accept": accept} if accept else {})}
    deadline = time.monotonic() + DEADLINE_S
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S) as resp:
            chunks, size = [], 0
            while chunk := resp.read(1024 * 1024):
                size += len(chunk)
                if size > limit:
                    raise Unavailable(f"{url}: larger than {limit} bytes")
                if time.monotonic() > deadline:
                    raise Unavailable(f"{url}: download took longer than {DEADLINE_S} s")
                chunks.append(chunk)
            return b"".join(chunks), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        raise (NotFound if exc.code == 404 else Unavailable)(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise Unavailable(f"{url}: {exc.reason}") from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise Unavailable(f"{url}: {type(exc).__name__}: {exc}") from None


# ---- Debian ---------------------------------------------------------------------------------------


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


# ---- Python ---------------------------------------------------------------------------------------


class _SimpleFile(BaseModel):
    model_config = ConfigDict(extra="ignore")  # an index's page (PEP 691) holds more than the check reads
    filename: str
    yanked: bool | str = False


class _SimpleProject(BaseModel):
    """A PEP 691 project page: only what the yanked check reads."""

    model_config = ConfigDict(extra="ignore")  # as above
    name: str
    files: list[_SimpleFile]


def _file_version(filename: str) -> PyVersion | None:
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


def yank_state(index_url: str, name: str, version: str) -> tuple[str, str]:
    """('ok' | 'yanked' | 'absent', reason) for one release on a PEP 691 index; Unavailable if it cannot say."""
    url = f"{index_url.rstrip('/')}/{canonicalize_name(name)}/"
    body, ctype = fetch(url, MAX_SIMPLE_BYTES, accept=PEP691)
    if PEP691 not in ctype:
        raise Unavailable(f"{url}: answers {ctype.split(';')[0] or 'no content type'}, not PEP 691 JSON ({PEP691})")
    try:
        project = _SimpleProject.model_validate_json(body)
    except ValidationError as exc:
        raise Unavailable(f"{url}: not a PEP 691 project page ({exc.error_count()} errors)") from None
    wanted = PyVersion(version)
    files = [f for f in project.files if _file_version(f.filename) == wanted]
    if not files:
        return "absent", f"{index_url} has no file of {name} {version}"
    if all(f.yanked is not False for f in files):
        reasons = sorted({f.yanked for f in files if isinstance(f.yanked, str) and f.yanked})
        return "yanked", "; ".join(reasons) or "no reason given"
    return "ok", ""


def check_python(flavor: ResolvedFlavor, installed: list[Package]) -> tuple[int, list[dict], list[str],
                                                                          dict[str, str]]:
    """(releases checked, yanked list, releases absent from their index, NOT RUN reasons by source)."""
    manifest = flavor.manifest
    in_image = {canonicalize_name(p.name): p.version for p in installed if p.ecosystem == "pypi"}
    by_source: dict[str, list[tuple[str, str]]] = {}
    # A left-out layer's pins are not in the image. A vendor archive (kind `archive`) is no index release that can be
    # yanked: nothing to ask (not applicable, unlike a wheel folder's pins), its file is pinned by the lock's sha256.
    for comp in flavor.installed_components().values():
        if comp.kind == "pip":
            version = in_image.get(canonicalize_name(str(comp.package)), comp.version)
            by_source.setdefault(comp.source, []).append((str(comp.package), version))
    checked, yanked, absent, not_run = 0, [], [], {}
    for source_name, pins in sorted(by_source.items()):
        source = manifest.sources[source_name]
        if source.kind != "pip-index":
            not_run[f"pypi:{source_name}"] = f"{source.kind} {source.path}: a folder of wheels has no yank record"
            continue
        index_url = str(source.url)
        try:  # the first answer tells whether the index can be asked at all
            states = [yank_state(index_url, *pins[0])]
            with ThreadPoolExecutor(max_workers=8) as pool:
                states += list(pool.map(yank_state, [index_url] * (len(pins) - 1), *zip(*pins[1:], strict=True)))
        except Unavailable as exc:
            not_run[f"pypi:{source_name}"] = (f"{exc}; fix: point sources.{source_name} at a reachable PEP 691 "
                                              f"mirror in the manifest or pass --source {source_name}=URL")
            continue
        for (name, version), (state, reason) in zip(pins, states, strict=True):
            checked += 1
            if state == "yanked":
                yanked.append({"package": name, "version": version, "index": index_url, "reason": reason})
            elif state == "absent":
                absent.append(f"{name}=={version} ({index_url})")
    return checked, yanked, absent, not_run


def python_findings(yanked: list[dict]) -> list[Finding]:
    return [Finding("yanked", "pypi-yanked", "HIGH", f"{y['package']} {y['version']} is yanked on {y['index']}: "
                    f"{y['reason']}", package=y["package"], installed=y["version"], location=y["index"],
                    source="pip-index") for y in yanked]


# ---- both -----------------------------------------------------------------------------------------


@dataclass
class Freshness:
    suites: list[dict] = field(default_factory=list)
    debian_compared: int = 0
    pending: list[dict] = field(default_factory=list)
    not_in_archive: list[str] = field(default_factory=list)
    python_checked: int = 0
    yanked: list[dict] = field(default_factory=list)
    not_on_index: list[str] = field(default_factory=list)
    not_run: dict[str, str] = field(default_factory=dict)  # "deb" or "pypi:<source>" -> reason
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"suites": self.suites, "debian_packages_compared": self.debian_compared,
                "pending_updates": self.pending, "security_updates": sum(p["security"] for p in self.pending),
                "not_in_archive": self.not_in_archive, "python_pins_checked": self.python_checked,
                "yanked": self.yanked, "not_on_index": self.not_on_index, "not_run": self.not_run,
                "seconds": round(self.seconds, 1)}


def check(packages: list[Package], config: dict, found: ImageRelease, root: Path, cache_dir: Path | None = None,
          keyring: Path | None = KEYRING, say: Callable[[str], None] = print) -> Freshness:
    """Compare the image's Debian packages with its archive and look up its pinned Python releases.

    `config` is the image's config (as `docker save` or `docker image inspect` give it: its architecture
    names the Debian index to read). `found`: the image's release, resolved once for the scan with its
    mirrors (image_release.of_image): the archive and indexes asked are its flavor's sources.
    """
    start = time.monotonic()
    arch = config.get("architecture") or config.get("Architecture")
    result = Freshness()
    flavor = found.flavor
    if flavor is None:
        result.not_run = {"deb": found.unknown, "pypi": found.unknown}
        result.seconds = time.monotonic() - start
        return result
    manifest = flavor.manifest
    debs = [p for p in packages if p.ecosystem == "deb"]
    debian = next((manifest.sources[c.source] for c in flavor.components().values()
                   if c.kind in ("apt", "image") and manifest.sources[c.source].kind == "debian"), None)
    if debian is None:
        result.not_run["deb"] = f"release {manifest.release} flavor {flavor.name} names no debian source"
    elif debs:
        image_arch = arch or next((p.arch for p in debs if p.arch and p.arch != "all"), "amd64")
        name = next(n for n, s in manifest.sources.items() if s is debian)
        try:
            suites = debian_suites(debian, image_arch, root / CACHE_DIR if cache_dir is None else cache_dir, keyring)
        except Unavailable as exc:
            result.not_run["deb"] = (f"Debian archive cannot be read: {exc}; fix: point sources.{name} at a "
                                     f"reachable mirror in releases/{manifest.release}.yaml or pass --source "
                                     f"{name}=URL")
        else:
            result.suites = [s.summary() for s in suites]
            result.pending, result.not_in_archive = compare_debian(debs, suites, image_arch)
            result.debian_compared = len(debs) - len(result.not_in_archive)
            result.findings += debian_findings(result.pending)
    result.python_checked, result.yanked, result.not_on_index, not_run = check_python(flavor, packages)
    result.not_run.update(not_run)
    result.findings += python_findings(result.yanked)
    result.seconds = time.monotonic() - start
    security = sum(p["security"] for p in result.pending)
    say(f"    freshness: {result.debian_compared} Debian packages vs {', '.join(s['suite'] for s in result.suites)}"
        f": {len(result.pending)} pending update(s), {security} from -security; {result.python_checked} Python "
        f"pin(s): {len(result.yanked)} yanked ({result.seconds:.1f} s)")
    for key, reason in result.not_run.items():
        say(f"    freshness NOT RUN ({key}): {reason}")
    return result


def markdown(fresh: dict) -> list[str]:
    """The report's freshness section."""
    lines = ["## Freshness (the archive and indexes the image was built from)", ""]
    for s in fresh["suites"]:
        lines.append(f"- `{s['suite']}` {s['url']}: released {s['release_date']}, {s['packages']} packages, "
                     f"signature {s['signature']}")
    lines += ["", f"{fresh['debian_packages_compared']} Debian packages compared: {len(fresh['pending_updates'])} "
              f"pending update(s), {fresh['security_updates']} of them security updates; "
              f"{fresh['python_pins_checked']} pinned Python release(s) checked: {len(fresh['yanked'])} yanked.", ""]
    if fresh["pending_updates"]:
        lines += ["| package | arch | installed | candidate | suite | security |",
                  "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {p['package']} | {p['arch']} | {p['installed']} | {p['candidate']} | {p['suite']} | "
                  f"{'yes' if p['security'] else 'no'} |" for p in fresh["pending_updates"]]
        lines.append("")
    if fresh["yanked"]:
        lines += ["| yanked release | index | reason |", "| --- | --- | --- |"]
        lines += [f"| {y['package']} {y['version']} | {y['index']} | {y['reason']} |" for y in fresh["yanked"]]
        lines.append("")
    for key, reason in fresh["not_run"].items():
        lines.append(f"- NOT RUN ({key}): {reason}")
    if fresh["not_run"]:
        lines.append("")
    return lines
