"""Which platforms of an image the scan reads: every image an OCI index holds, or the one `--platform` names.

Why: one tag may be an index of several platforms (ngc-paddle:26.12-cpu is linux/amd64 and linux/arm64); each is an
image of its own, with its own layers, packages and lock, so each is scanned on its own and none is picked silently.
The long form: docs/scanning.md, "Several platforms".
"""

from collections.abc import Mapping, Sequence

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
