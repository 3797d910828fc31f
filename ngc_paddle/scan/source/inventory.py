"""What is installed in an image and which layer brought it: Debian packages and Python distributions.

Read from the saved layers, bottom to top: the dpkg status file that survives to the top layer
(only packages whose status is `install ok installed`: a purged or removed package leaves a
paragraph behind that is not software in the image), every `*.dist-info/METADATA` that survives
(whiteouts and opaque whiteouts of later layers remove what lower layers had), the layer that
added each, and the image's distribution release (ID and VERSION_ID of its os-release).
"""

import base64
import re
from dataclasses import dataclass, field
from email.parser import Parser

from ngc_common import image_paths
from ngc_paddle.distro import Distro, from_image_manifest, from_os_release
from ngc_paddle.dpkg_status import DPKG_STATUS, installed
from ngc_paddle.scan.source.saved_image import Entry

METADATA_RE = re.compile(r"/([^/]+)\.dist-info/METADATA$")
OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")  # the first is usually a link to the second


@dataclass
class Package:
    ecosystem: str  # "deb" or "pypi"
    name: str
    version: str
    layer: str
    license: str = ""
    arch: str = ""
    path: str = ""
    extra: dict = field(default_factory=dict)


IMAGE_MANIFEST = image_paths.MANIFEST
_SINGLE_FILES = (DPKG_STATUS, IMAGE_MANIFEST, *OS_RELEASE)


def record_hash(digest: bytes) -> str:
    """A sha256 as a wheel's RECORD writes it (urlsafe base64, no padding)."""
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def wants_content(path: str, size: int) -> bool:
    return path in _SINGLE_FILES or path.endswith(".dist-info/METADATA")


class Inventory:
    """Accumulates what an image installs while its layers stream past (keeps only what it needs)."""

    def __init__(self) -> None:
        self.statuses: list[Entry] = []  # every layer's dpkg status, bottom to top (for attribution)
        self.files: dict[str, Entry] = {}  # the surviving copy of each file of _SINGLE_FILES
        self.metadata: dict[str, Entry] = {}

    @property
    def image_manifest(self) -> bytes | None:
        entry = self.files.get(IMAGE_MANIFEST)
        return entry.content if entry else None

    def add(self, entry: Entry) -> None:
        if entry.type in ("whiteout", "opaque"):
            self.metadata = {p: e for p, e in self.metadata.items() if not entry.hides(p, e.layer.index)}
            self.files = {p: e for p, e in self.files.items() if not entry.hides(p, e.layer.index)}
            return
        if entry.path in _SINGLE_FILES:
            if entry.type == "file" and entry.content is not None:
                self.files[entry.path] = entry
                if entry.path == DPKG_STATUS:
                    self.statuses.append(entry)
            else:  # replaced by a link, a folder or an over-large file: the old copy is gone
                self.files.pop(entry.path, None)
        elif entry.content is not None and METADATA_RE.search(entry.path):
            self.metadata[entry.path] = entry  # an upper layer's copy replaces a lower one

    def os_release(self) -> dict[str, str]:
        """The image's os-release fields (ID, VERSION_ID, ...), {} when it has none."""
        entry = next((self.files[p] for p in OS_RELEASE if p in self.files), None)
        if entry is None:
            return {}
        pairs = re.findall(r"^([A-Z_]+)=\"?([^\"\n]*)\"?$", entry.content.decode(errors="replace"), re.M)
        return dict(pairs)

    def distro(self, manifest: dict | None = None) -> Distro | None:
        """The distribution release the image is built on (Debian 12, Ubuntu 20.04), from its os-release,
        else the release manifest it carries."""
        return from_os_release(self.os_release()) or from_image_manifest(manifest)

    def conffiles(self) -> dict[str, str]:
        """/path -> md5 of every configuration file dpkg installed (the Conffiles of its status; they are not
        in the md5sums files)."""
        status = self.files.get(DPKG_STATUS)
        return {path: md5 for package in (installed(status.content) if status else ())
                for path, md5 in package.conffiles.items()}

    def packages(self) -> list[Package]:
        status = self.files.get(DPKG_STATUS)
        found = _dpkg(status, self.statuses) if status else []
        return found + [_dist(e) for e in self.metadata.values()]


def _dpkg(status: Entry, statuses: list[Entry]) -> list[Package]:
    # The layer whose dpkg status first lists a package at its current version is the layer that installed that
    # version (an upgrade or a downgrade in a later layer belongs to that layer, not to the base).
    first_layer: dict[tuple[str, str], str] = {}
    for entry in statuses:
        for package in installed(entry.content):
            first_layer.setdefault((package.package, package.version), entry.layer.name)
    return [Package("deb", p.package, p.version, first_layer.get((p.package, p.version), status.layer.name),
                    arch=p.architecture, extra={"source": p.source}) for p in installed(status.content)]


def _dist(entry: Entry) -> Package:
    meta = Parser().parsestr(entry.content.decode(errors="replace"), headersonly=True)
    license_ = meta.get("License-Expression") or meta.get("License") or ""
    if len(license_) > 100 or license_.upper() == "UNKNOWN":
        classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License")]
        license_ = classifiers[0] if classifiers else ""
    return Package("pypi", meta.get("Name", ""), meta.get("Version", ""), entry.layer.name, license=license_,
                   path=entry.path.rsplit("/", 1)[0])
