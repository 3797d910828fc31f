"""The OS distribution an image is built on (Debian 12, Ubuntu 20.04): its name, OSV ecosystem and purl.

Why: the scan, the SBOM, the banner, the notes and the os layer's check must say what the image's
base really is, read from its os-release or the manifest's os component, never assume Debian 12
(release 23.01 is Ubuntu 20.04). Both distributions use dpkg, so everything else (dpkg database,
version ordering) is the same.

OSV names the Debian ecosystem `Debian:<VERSION_ID>` ("Debian:12") and Ubuntu's
`Ubuntu:<VERSION_ID>` with a suffix for the support line ("Ubuntu:20.04:LTS"); an Ubuntu image is
matched against the records of its own release, plain or with such a suffix, and never against
Debian's (nor `Ubuntu:Pro:...`, a paid stream the image does not receive).
"""

import re
from dataclasses import dataclass

# os-release ID -> how OSV and people spell the distribution; another ID is shown capitalised.
NAMES = {"debian": "Debian", "ubuntu": "Ubuntu"}


@dataclass(frozen=True)
class Distro:
    id: str  # os-release ID: "debian", "ubuntu"
    version: str  # os-release VERSION_ID: "12", "20.04"

    @property
    def name(self) -> str:
        return NAMES.get(self.id, self.id.capitalize())

    def __str__(self) -> str:
        return f"{self.name} {self.version}"

    @property
    def osv_ecosystem(self) -> str:
        return f"{self.name}:{self.version}"

    @property
    def purl_distro(self) -> str:
        """The `distro` qualifier of a deb purl (purl-spec: e.g. debian-12, ubuntu-20.04)."""
        return f"{self.id}-{self.version}"

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "version": self.version}


def osv_matches(ecosystem: str, distro: "Distro | None") -> bool:
    """Whether an OSV record's ecosystem is the one of this distribution release (see the module's note)."""
    if distro is None:
        return False
    return ecosystem == distro.osv_ecosystem or ecosystem.startswith(distro.osv_ecosystem + ":")


def from_os_release(fields: dict[str, str]) -> Distro | None:
    """From /etc/os-release's ID and VERSION_ID; None when either is missing (e.g. Debian testing)."""
    if fields.get("ID") and fields.get("VERSION_ID"):
        return Distro(fields["ID"].lower(), fields["VERSION_ID"])
    return None


def from_base_image(image: str | None, version: str | None) -> Distro | None:
    """From the manifest's os component: the base image's repository ("debian:bookworm-slim",
    "docker.io/library/ubuntu:20.04") names the distribution, the component's version its release."""
    if not image or not version:
        return None
    repository = re.split(r"[:@]", image.rsplit("/", 1)[-1])[0].lower()
    return Distro(repository, str(version)) if repository else None


def from_image_manifest(manifest: dict | None) -> Distro | None:
    """From the resolved manifest an image carries (its `distribution`, else its os component)."""
    manifest = manifest or {}
    given = manifest.get("distribution") or {}
    if given.get("id") and given.get("version"):
        return Distro(given["id"], str(given["version"]))
    os_component = (manifest.get("components") or {}).get("os") or {}
    return from_base_image(os_component.get("package"), os_component.get("version"))
