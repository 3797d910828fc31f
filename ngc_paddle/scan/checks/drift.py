"""The image against its lock: every Debian package and Python distribution at the locked version and build.

Why: the lock is what the release says is in the image; a wheel pip-installed outside it, or a library
downgraded with `apt-get --allow-downgrades`, is software nobody reviewed, and only a freshness check that
happens to know a newer version would notice. The lock is the source of truth, whatever it holds (its base
packages overlaid by the os layer's, and its pip entries, pip, setuptools and wheel included): anything
extra, missing, up- or downgraded is a `drift` finding naming the package, the image's version and the
locked one, located at the layer that brought the image's version. For a Python distribution the gate also
checks what the installed dist-info allows: its WHEEL tags against the locked wheel file's (another build of
the same version), its files against its RECORD hashes (a file changed after installation), and, where pip
kept it (direct_url.json), the wheel's own sha256 against the locked one. Debian's own Python trees
(/usr/lib/python3/dist-packages, /usr/lib/python3.N) belong to dpkg, which the Debian side covers.
"""

import json
import posixpath
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from debian.debian_support import Version as DebVersion
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion
from packaging.version import Version as PyVersion

from ngc_paddle.lock.lock_file import Lock
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.inventory import Package

DEBIAN_PYTHON = ("/usr/lib/python3/", "/usr/lib/python3.")
SITE_DIRS = ("site-packages", "dist-packages")


def vendored(path: str) -> bool:
    """A dist-info inside another distribution's package (setuptools/_vendor/autocommand-2.2.2.dist-info) is not
    installed on its own: it is part of that locked wheel, whose RECORD (checked by check_builds) lists its files."""
    parents = PurePosixPath(path).parents
    return parents[0].name not in SITE_DIRS and any(parent.name in SITE_DIRS for parent in parents)


@dataclass
class DistInfo:
    """What the final image holds of one dist-info folder (RECORD, WHEEL, direct_url.json) and where."""

    path: str  # /opt/venv/lib/python3.11/site-packages/numpy-2.4.6.dist-info
    files: dict[str, bytes]  # file name -> content
    where: str
    _lines: list[tuple[str, str]] | None = field(default=None, repr=False, compare=False)

    def record_lines(self) -> list[tuple[str, str]]:
        """(absolute path, RECORD-style sha256 or '' where the RECORD gives none) of each entry of its RECORD,
        parsed once (the drift, hook and integrity checks all read it)."""
        if self._lines is None:
            site = posixpath.dirname(self.path)
            self._lines = []
            for line in self.files.get("RECORD", b"").decode("utf-8", "replace").splitlines():
                parts = line.rsplit(",", 2)
                if len(parts) == 3 and parts[0]:
                    digest = parts[1].removeprefix("sha256=") if parts[1].startswith("sha256=") else ""
                    self._lines.append((installed_path(site, parts[0]), digest))
        return self._lines


def _direction(kind: str, image: str, locked: str) -> str:
    try:
        a, b = (DebVersion(image), DebVersion(locked)) if kind == "deb" else (PyVersion(image), PyVersion(locked))
    except (InvalidVersion, ValueError, TypeError):
        return "changed"
    return "upgraded" if a > b else "downgraded" if a < b else "changed"


def _finding(kind: str, change: str, name: str, image: str, locked: str, where: str, detail: str = "") -> Finding:
    what = {"extra": f"{name} {image} is in the image but not in the lock",
            "missing": f"{name} {locked} is in the lock but not in the image"}.get(
        change, f"{name} is {image} in the image, {locked} in the lock ({change})")
    return Finding("drift", f"{kind}-{change}", "HIGH", what + (f"; {detail}" if detail else ""), package=name,
                   installed=image, fixed=locked, location=where, source="lock")


def expected_debian(lock: Lock) -> dict[str, str]:
    """Package -> version the lock puts in the image: its base's packages, then the os layer's on top."""
    versions = {p.package: p.version for p in lock.base.packages}
    versions.update({p.package: p.version for p in lock.debian})
    return versions


def expected_python(lock: Lock, layers: set[str] | None = None) -> dict[str, tuple[str, str | None, str | None]]:
    """Canonical name -> (version, wheel file, sha256): the pip entries (of `layers` only, for an image that stops
    at a layer below the top: a layer image of the build)."""
    return {e.name: (e.version, e.file, e.sha256) for e in lock.pip if layers is None or e.layer in layers}


def compare(packages: list[Package], lock: Lock, layers: set[str] | None = None) -> list[Finding]:
    """Versions: every installed package against the lock, and every locked one present (of `layers`: the flavor's
    layers up to the one the image is, by its ngc-paddle.layer label; None: all)."""
    findings = []
    debs = expected_debian(lock)
    seen: set[str] = set()
    for p in packages:
        if p.ecosystem != "deb":
            continue
        seen.add(p.name)
        locked = debs.get(p.name)
        if locked is None:
            findings.append(_finding("deb", "extra", p.name, p.version, "", f"layer {p.layer}"))
        elif locked != p.version:
            findings.append(_finding("deb", _direction("deb", p.version, locked), p.name, p.version, locked,
                                     f"layer {p.layer}"))
    for name in sorted(debs.keys() - seen):
        findings.append(_finding("deb", "missing", name, "", debs[name], "image"))
    wanted = expected_python(lock, layers)
    present: set[str] = set()
    for p in packages:
        if p.ecosystem != "pypi" or p.path.startswith(DEBIAN_PYTHON) or vendored(p.path):
            continue
        name = canonicalize_name(p.name)
        present.add(name)
        locked_entry = wanted.get(name)
        where = f"layer {p.layer}: {p.path}"
        if locked_entry is None:
            findings.append(_finding("pypi", "extra", name, p.version, "", where))
        elif locked_entry[0] != p.version:
            findings.append(_finding("pypi", _direction("pypi", p.version, locked_entry[0]), name, p.version,
                                     locked_entry[0], where))
    for name in sorted(wanted.keys() - present):
        findings.append(_finding("pypi", "missing", name, "", wanted[name][0], "image"))
    return findings


def wheel_tags(file: str) -> set[str]:
    """The interpreter-abi pairs of a wheel file name (cp311-cp311): the platform part is left out, since some
    projects publish a wheel built as linux_x86_64 under a manylinux name (Paddle's WHEEL file says
    linux_x86_64 in paddlepaddle-3.3.1-cp311-cp311-manylinux1_x86_64.whl)."""
    try:
        _name, _version, _build, tags = parse_wheel_filename(file)
    except InvalidWheelFilename:
        return set()
    return {f"{t.interpreter}-{t.abi}" for t in tags}


def _installed_tags(wheel: bytes) -> set[str]:
    tags = set()
    for line in wheel.decode("utf-8", "replace").splitlines():
        if line.startswith("Tag:"):
            parts = line.split(":", 1)[1].strip().split("-")
            if len(parts) == 3:
                tags.add(f"{parts[0]}-{parts[1]}")
    return tags


def record_entries(dist: DistInfo) -> list[tuple[str, str]]:
    """(absolute path, RECORD-style sha256) of each hashed file the RECORD lists."""
    return [(path, digest) for path, digest in dist.record_lines() if digest]


def installed_path(site: str, name: str) -> str:
    """The absolute path of a RECORD entry (relative to site-packages; a script's is ../../../bin/NAME)."""
    name = name.strip('"')
    path = f"{site}/{name}"
    return posixpath.normpath(path) if name.startswith(("/", ".")) or "/." in name or "//" in name else path


def check_builds(dists: list[DistInfo], packages: list[Package], lock: Lock, hashes: dict[str, str]) -> list[Finding]:
    """WHEEL tags, RECORD hashes and pip's recorded wheel hash of each installed distribution of the lock.

    A file that several distributions install (the namespace package nvidia/__init__.py of every nvidia-*
    wheel) holds the copy of the last one installed: it is modified only when no RECORD that lists it has
    its hash."""
    wanted = expected_python(lock)
    by_path = {p.path: p for p in packages if p.ecosystem == "pypi"}
    listed: dict[str, set[str]] = {}
    for dist in dists:
        for path, digest in record_entries(dist):
            listed.setdefault(path, set()).add(digest)
    findings = []
    for dist in dists:
        package = by_path.get(dist.path)
        if package is None or dist.path.startswith(DEBIAN_PYTHON):
            continue
        name = canonicalize_name(package.name)
        version, file, sha256 = wanted.get(name, (None, None, None))
        if version != package.version:
            continue  # already a version finding
        tags = _installed_tags(dist.files.get("WHEEL", b""))
        if file and tags and not tags & wheel_tags(file):
            findings.append(_finding("pypi", "other-build", name, package.version, package.version, dist.where,
                                     f"installed from a wheel tagged {', '.join(sorted(tags))}, the lock has {file}"))
        direct = dist.files.get("direct_url.json")
        if direct and sha256:
            try:
                recorded = ((json.loads(direct).get("archive_info") or {}).get("hashes") or {}).get("sha256")
            except (ValueError, AttributeError):
                recorded = None
            if recorded and recorded != sha256:
                findings.append(_finding("pypi", "other-wheel", name, package.version, package.version, dist.where,
                                         f"installed from a wheel of sha256 {recorded[:12]}, the lock has "
                                         f"{sha256[:12]}"))
        # Bytecode a wheel ships (numpy 1.26's distutils/__pycache__) is compiled again at install time (checked
        # hash-based .pyc under SOURCE_DATE_EPOCH, which the interpreter validates against the source it was made
        # from), so it never matches the wheel's RECORD; the sources it comes from are checked.
        changed = [path for path, _digest in record_entries(dist)
                   if path in hashes and hashes[path] not in listed[path] and not path.endswith(".pyc")]
        if changed:
            findings.append(_finding("pypi", "modified", name, package.version, package.version, dist.where,
                                     f"{len(changed)} file(s) differ from its RECORD, e.g. {changed[0]}"))
    return findings
