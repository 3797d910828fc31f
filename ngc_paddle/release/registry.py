"""Push an image and read back the digest the registry serves, through the docker CLI's own registry client.

Why: `docker push` and `docker manifest inspect` use the docker config's credentials (`docker login`)
and TLS settings (`/etc/docker/certs.d/HOST/ca.crt`), as every real registry needs; a hand-written
plain-HTTP request fails against any of them.
"""

import ipaddress
import json
import re

from ngc_paddle import engine
from ngc_paddle.host_errors import Failed, NgcPaddleError
from ngc_paddle.scan.source import platform_choice

AUTH_ERRORS = ("no basic auth credentials", "unauthorized", "authentication required", "denied")
PUSHED = re.compile(r"digest: (sha256:[0-9a-f]{64})")


class LoginRequired(NgcPaddleError):
    """The registry wants credentials the docker config does not hold (bad input: exit 2)."""


class DigestMismatch(Failed):
    """The registry holds another digest than the one pushed."""


def host_of(ref: str) -> str:
    return ref.split("/", 1)[0]


def _loopback(host: str) -> bool:
    name = host.rsplit(":", 1)[0].strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _check_login(ref: str, stderr: str, action: str, stdout: str = "") -> None:
    if any(marker in (stderr + stdout).lower() for marker in AUTH_ERRORS):
        host = host_of(ref)
        raise LoginRequired(f"{action} {ref}: the registry {host} refuses it without a login "
                            f"({_last_line(stderr)[:160]}); fix: docker login {host}")


def push(ref: str) -> str:
    """`docker push REF`; the digest it pushed (printed by docker push itself)."""
    proc = engine.push(ref)
    if proc.returncode != 0:
        _check_login(ref, proc.stderr, "docker push", proc.stdout)
        raise NgcPaddleError(f"docker push {ref} failed: {_last_line(proc.stderr)[:200]}; fix: check that the "
                             f"registry {host_of(ref)} answers")
    found = PUSHED.findall(proc.stdout)
    if not found:
        raise NgcPaddleError(f"docker push {ref} printed no digest; fix: check the docker CLI's output")
    return found[-1]


def _inspect(ref: str) -> dict | list | None:
    """What `docker manifest inspect --verbose REF` reads from the registry (None when it serves nothing). A loopback
    registry may speak plain HTTP, which the docker CLI only tries with `--insecure` (dockerd treats 127.0.0.0/8 as
    insecure the same way): TLS is tried first."""
    attempts = (False, True) if _loopback(host_of(ref)) else (False,)
    for insecure in attempts:
        proc = engine.manifest_inspect(ref, insecure)
        if proc.returncode == 0:
            return json.loads(proc.stdout)
        _check_login(ref, proc.stderr, "docker manifest inspect")
    return None


def served_digest(ref: str) -> str | None:
    """The manifest digest the registry serves for REF (None when it serves none, or an image index: its entries
    are read with served_platforms)."""
    data = _inspect(ref)
    return data.get("Descriptor", {}).get("digest") if isinstance(data, dict) else None


def served_platforms(ref: str) -> dict[str, str] | None:
    """Each platform's manifest digest in the image index the registry serves for REF (OS/ARCH -> sha256:...);
    None when REF is a single image or is not there."""
    data = _inspect(ref)
    if not isinstance(data, list):
        return None
    return platforms_of(data)


def platforms_of(entries: list) -> dict[str, str]:
    """OS/ARCH -> digest of an index's entries as `docker manifest inspect --verbose` prints them, named and chosen
    as the scan names an index's images (platform_choice.index_platforms: BuildKit's attestation entries left out)."""
    descriptors = [entry.get("Descriptor") or {} for entry in entries if isinstance(entry, dict)]
    return platform_choice.index_platforms({"manifests": [d for d in descriptors if isinstance(d, dict)]})


def repository_of(ref: str) -> str:
    """REGISTRY/REPO of REGISTRY/REPO:TAG or REGISTRY/REPO@sha256:..."""
    name = ref.split("@", 1)[0]
    return name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name


def serves(ref: str, digest: str) -> bool:
    """Whether the registry serves DIGEST for the tag REF: that manifest, or for an image index (whose own digest
    `docker manifest inspect` does not show) an index of the same platforms' manifests as DIGEST's."""
    data = _inspect(ref)  # read once: a manifest's digest, or an index's entries
    if isinstance(data, dict):
        return data.get("Descriptor", {}).get("digest") == digest
    by_tag = platforms_of(data) if isinstance(data, list) else None
    return bool(by_tag) and by_tag == served_platforms(f"{repository_of(ref)}@{digest}")


def push_and_verify(ref: str) -> str:
    """Push REF and check that the registry serves the digest docker push reported; for an image index (docker push
    of an index tag pushes every platform), that the tag and that digest serve the same platforms' manifests."""
    pushed = push(ref)
    if not serves(ref, pushed):
        served = served_digest(ref) or served_platforms(ref)  # an index: its platforms' manifests
        raise DigestMismatch(f"pushed {ref} as {pushed} but the registry serves {served or 'nothing'}; fix: check "
                             f"that nothing else pushes to {host_of(ref)} at the same time, then push again")
    return pushed
