"""Which platforms of an image the scan reads: every image an OCI index holds, or the one `--platform` names.

Why: one tag may be an index of several platforms (ngc-paddle:26.12-cpu is linux/amd64 and linux/arm64); each is an
image of its own, with its own layers, packages and lock, so each is scanned on its own and none is picked silently.
The long form: docs/scanning.md, "Several platforms".
"""

import json
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from ngc_paddle.host_errors import NgcPaddleError

ATTESTATION = "unknown/unknown"  # BuildKit's provenance entries in an index: documents, not an image to scan


def platform_of(entry: Mapping) -> str:
    """An index entry's platform as docker names it: os/architecture[/variant] (arm64's v8, its only variant,
    left out as docker does: linux/arm64)."""
    spec = entry.get("platform") or {}
    parts = [str(spec.get("os") or "unknown"), str(spec.get("architecture") or "unknown")]
    variant = str(spec.get("variant") or "")
    if variant and (parts[1], variant) != ("arm64", "v8"):
        parts.append(variant)
    return "/".join(parts)


def index_platforms(index: Mapping) -> dict[str, str]:
    """platform -> manifest digest of each image an index holds, in the index's order (attestations left out)."""
    found: dict[str, str] = {}
    for entry in index.get("manifests") or []:
        platform = platform_of(entry)
        if platform != ATTESTATION and isinstance(entry.get("digest"), str):
            found.setdefault(platform, entry["digest"])
    return found


def choose(image: str, available: list[str], wanted: Sequence[str], index: bool) -> list[str]:
    """The platforms to scan, in the image's order: all of them, or those `wanted` names; a platform the image lacks
    is bad input, one line naming the platforms it has."""
    if not available:
        raise NgcPaddleError(f"{image}: names no image of any platform; fix: scan an image built by 'ngc-paddle build'")
    missing = [p for p in wanted if p not in available]
    if missing:
        what = f"an index of {', '.join(available)}" if index else f"a single-platform image of {available[0]}"
        raise NgcPaddleError(f"--platform {missing[0]}: {image} has no {missing[0]} image (it is {what}); fix: name "
                             "one of its platforms, or leave --platform out to scan each")
    return [p for p in available if not wanted or p in wanted]


def saved_platforms(tar_path: Path) -> list[str]:
    """The platforms of the image a `docker save` archive holds: an index's several (the containerd image store saves
    an index whole, as an OCI layout, though its manifest.json names the host's platform only), else []."""
    try:
        with tarfile.open(tar_path) as outer:
            names = set(outer.getnames())
            layout = json.load(outer.extractfile("index.json")) if "index.json" in names else {}
            top = (layout.get("manifests") or [{}])[0]
            blob = f"blobs/sha256/{str(top.get('digest', '')).removeprefix('sha256:')}"
            document = json.load(outer.extractfile(blob)) if blob in names else {}
    except (tarfile.TarError, KeyError, ValueError, TypeError, AttributeError):
        return []
    return list(index_platforms(document)) if isinstance(document, dict) else []


def refuse_index(tar_path: Path, image: str, registry_env: str) -> None:
    """An index is never scanned from a saved archive: trivy reads the archive's manifest.json, which names one
    platform, so the others would be judged by half the gate. One line with the fix."""
    platforms = saved_platforms(tar_path)
    if len(platforms) > 1:
        raise NgcPaddleError(f"{image}: is an index of {', '.join(platforms)}, and a docker save archive gives trivy "
                             f"one platform of it; fix: scan it through a registry (unset {registry_env}, or set it to "
                             "HOST:PORT), or scan a single-platform image (e.g. ngc-paddle:26.12-cpu-arm64)")
