"""dpkg's status file (/var/lib/dpkg/status): the packages it records as installed, read with python-debian.

Why: the lock's trial install (what the os layer adds), the scan's inventory (which Debian packages an image holds,
and from which layer) and its integrity check (each install's version and conffiles' checksums) read the same file,
and must agree on what installed means (Status `install ok installed`: a removed or purged package leaves a
paragraph behind that is not software in the image) and on how a Conffiles line reads. Never an error: undecodable
bytes are replaced, a paragraph without a Package and a conffile line that is not `/path md5` are skipped. A copy
is parsed once per process (each layer's copy is read by both of the scan's callers).
"""

import functools
from typing import NamedTuple

from debian.deb822 import Deb822

DPKG_STATUS = "/var/lib/dpkg/status"
INSTALLED = "install ok installed"


class Installed(NamedTuple):
    """One installed package's paragraph: what the scan reads of it."""

    package: str
    version: str  # "" when the paragraph has none
    architecture: str  # "" when the paragraph has none
    source: str  # its source package (the Source field's name, without a version), else its own name
    conffiles: dict[str, str]  # /path -> the md5 dpkg recorded at its install; shared: read, never change


def _conffiles(value: str) -> dict[str, str]:
    found = {}
    for line in value.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("/") and len(parts[1]) == 32:
            found[parts[0]] = parts[1]
    return found


@functools.lru_cache(maxsize=64)
def installed(status: bytes) -> tuple[Installed, ...]:
    """Every installed package of a status file's content, in the file's order."""
    paragraphs = Deb822.iter_paragraphs(status.decode("utf-8", "replace").splitlines())
    return tuple(Installed(p["Package"], p.get("Version", ""), p.get("Architecture", ""),
                           p.get("Source", p["Package"]).split(" ")[0], _conffiles(p.get("Conffiles", "")))
                 for p in paragraphs if p.get("Package") and " ".join(p.get("Status", "").split()) == INSTALLED)
