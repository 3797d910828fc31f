"""What is installed in an image and which layer brought it: Debian packages and Python distributions.

Read from the saved layers: the final dpkg status file, and every `*.dist-info/METADATA` that
survives to the top layer (a later layer's whiteout removes it), with the layer that added it.
"""

import re
from dataclasses import dataclass, field
from email.parser import Parser

from ngc_paddle.scan.saved_image import Entry

DPKG_STATUS = "/var/lib/dpkg/status"
METADATA_RE = re.compile(r"/([^/]+)\.dist-info/METADATA$")


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


IMAGE_MANIFEST = "/opt/ngc-paddle/manifest.json"


def wants_content(path: str, size: int) -> bool:
    return path in (DPKG_STATUS, IMAGE_MANIFEST) or path.endswith(".dist-info/METADATA")


class Inventory:
    """Accumulates what an image installs while its layers stream past (keeps only what it needs)."""

    def __init__(self) -> None:
        self.statuses: list[Entry] = []  # every layer's dpkg status, bottom to top
        self.metadata: dict[str, Entry] = {}
        self.image_manifest: bytes | None = None

    def add(self, entry: Entry) -> None:
        if entry.type == "whiteout":
            folder, name = entry.path.rsplit("/", 1)
            removed = f"{folder}/{name.removeprefix('.wh.')}"
            self.metadata = {p: e for p, e in self.metadata.items()
                             if not (p == removed or p.startswith(removed + "/"))}
        elif entry.content is None:
            return
        elif entry.path == DPKG_STATUS:
            self.statuses.append(entry)
        elif entry.path == IMAGE_MANIFEST:
            self.image_manifest = entry.content
        elif METADATA_RE.search(entry.path) and entry.path not in self.metadata:
            self.metadata[entry.path] = entry

    def packages(self) -> list[Package]:
        found = _dpkg(self.statuses[-1], self.statuses) if self.statuses else []
        return found + [_dist(e) for e in self.metadata.values()]


def _dpkg(status: Entry, statuses: list[Entry]) -> list[Package]:
    # The layer that first listed a package in its dpkg status is the layer that installed it.
    first_layer: dict[str, str] = {}
    for entry in statuses:
        for block in entry.content.decode(errors="replace").split("\n\n"):
            name = re.search(r"^Package: (.+)$", block, re.M)
            if name:
                first_layer.setdefault(name.group(1).strip(), entry.layer.name)
    packages = []
    for block in status.content.decode(errors="replace").split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", block, re.M))
        if fields.get("Package") and "installed" in fields.get("Status", ""):
            name = fields["Package"]
            packages.append(Package("deb", name, fields.get("Version", ""), first_layer.get(name, status.layer.name),
                                    arch=fields.get("Architecture", ""),
                                    extra={"source": fields.get("Source", name).split(" ")[0]}))
    return packages


def _dist(entry: Entry) -> Package:
    meta = Parser().parsestr(entry.content.decode(errors="replace"), headersonly=True)
    license_ = meta.get("License-Expression") or meta.get("License") or ""
    if len(license_) > 100 or license_.upper() == "UNKNOWN":
        classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License")]
        license_ = classifiers[0] if classifiers else ""
    return Package("pypi", meta.get("Name", ""), meta.get("Version", ""), entry.layer.name, license=license_,
                   path=entry.path.rsplit("/", 1)[0])
