"""CycloneDX SBOM of an image, built and validated with the CycloneDX Python library.

Components: every Debian package (from the dpkg database) and Python distribution (from its
dist-info), each tagged with the build layer that brought it, plus the release manifest's
components with the source each came from (a vendor archive, kind `archive`, as itself: its file, besides
the wheel it carried). The document is validated against the CycloneDX JSON
schema by the library before it is written.
"""

import json
from pathlib import Path

from cyclonedx.model import ExternalReference, ExternalReferenceType, Property, XsUri
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.model.license import DisjunctiveLicense
from cyclonedx.output.json import JsonV1Dot6
from cyclonedx.schema import SchemaVersion
from packageurl import PackageURL
from packaging.utils import canonicalize_name

from ngc_paddle.distro import Distro
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.scan.source.inventory import Package

PROP = "ngc-paddle"


def build(image: str, release_manifest: dict | None, packages: list[Package], distro: Distro | None) -> Bom:
    """The SBOM; deb purls name the image's distribution release (pkg:deb/ubuntu/...?distro=ubuntu-20.04),
    or no distribution when it is unknown (never a guessed Debian 12)."""
    bom = Bom()
    root = Component(name=image.split(":")[0], version=image.split(":", 1)[-1], type=ComponentType.CONTAINER,
                     bom_ref=f"image:{image}")
    bom.metadata.component = root
    pinned = {}
    for name, comp in (release_manifest or {}).get("components", {}).items():
        pinned[canonicalize_name(comp["package"])] = (name, comp)
    used = set()
    for p in packages:
        props = [Property(name=f"{PROP}:layer", value=p.layer)]
        if p.ecosystem == "deb":
            qualifiers = {"arch": p.arch} if p.arch else {}
            if distro is not None:
                qualifiers["distro"] = distro.purl_distro
            purl = PackageURL("deb", distro.id if distro else None, p.name, p.version, qualifiers or None)
            component = Component(name=p.name, version=p.version, type=ComponentType.LIBRARY, purl=purl,
                                  bom_ref=str(purl), properties=props)
        else:
            purl = PackageURL("pypi", None, canonicalize_name(p.name), p.version)
            match = pinned.get(canonicalize_name(p.name))
            refs = []
            if match:
                used.add(match[0])
                source = match[1]["source"]
                props += [Property(name=f"{PROP}:manifest-component", value=match[0]),
                          Property(name=f"{PROP}:source", value=source["name"])]
                if source["location"].startswith(("http://", "https://")):
                    refs.append(ExternalReference(type=ExternalReferenceType.DISTRIBUTION,
                                                  url=XsUri(source["location"])))
            component = Component(name=p.name, version=p.version, type=ComponentType.LIBRARY, purl=purl,
                                  bom_ref=f"{purl}@{p.path}", properties=props, external_references=refs)
            if p.license:
                component.licenses.add(DisjunctiveLicense(name=p.license[:100]))
        bom.components.add(component)
    for name, comp in (release_manifest or {}).get("components", {}).items():
        if comp["kind"] == "pip" or (name in used and comp["kind"] != "archive"):
            continue  # pip components are the distributions above; the rest (OS, Python, an archive) are here
        archive = [Property(name=f"{PROP}:archive", value=comp["file"])] if comp["kind"] == "archive" else []
        bom.components.add(Component(
            name=name, version=comp["version"], type=ComponentType.OPERATING_SYSTEM if name == "os"
            else ComponentType.APPLICATION, bom_ref=f"manifest:{name}",
            properties=[Property(name=f"{PROP}:layer", value=comp["layer"]),
                        Property(name=f"{PROP}:manifest-component", value=name),
                        Property(name=f"{PROP}:package", value=str(comp["package"])),
                        Property(name=f"{PROP}:source", value=comp["source"]["name"]),
                        Property(name=f"{PROP}:source-location", value=comp["source"]["location"]), *archive]))
    bom.register_dependency(root, list(bom.components))  # the image contains every component
    return bom


def write(bom: Bom, path: Path) -> Path:
    # Imported here: the validator's JSON-schema format checkers take a second to import (a grammar
    # compiled at import time), which every command and test that merely imports this module paid.
    from cyclonedx.validation.json import JsonStrictValidator

    text = JsonV1Dot6(bom).output_as_string(indent=2)
    errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    if errors is not None:
        raise NgcPaddleError(f"the SBOM does not validate against CycloneDX 1.6: {errors}")
    path.write_text(text)
    return path


def component_count(path: Path) -> int:
    return len(json.loads(path.read_text()).get("components", []))
