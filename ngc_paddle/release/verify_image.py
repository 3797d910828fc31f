"""`ngc-paddle verify REF`: a pushed digest's signed attestations checked with the release owner's public key.

Why: a single image's digest carries the five attestations (ngc_paddle.attestations.KINDS). A flavor of several
platforms is pushed as an image index: the index carries one attestation naming its platforms' digests, and each
platform's digest carries its own five. Verifying the index checks that one, that it names exactly the platforms
the registry's index holds, and every platform's digest; a platform that fails is named in the one error line.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ngc_common.exit_codes import ExitCode
from ngc_paddle import attestations
from ngc_paddle.attestations import Check
from ngc_paddle.release.registry import served_platforms

FIX = "ask the release owner to rerun the release's attest stage; do not use this image until it verifies"


@dataclass(frozen=True)
class Verdict:
    code: ExitCode
    error: str  # the one line naming what failed ("" when everything verified)


def verify(ref: str, public_key: Path, say: Callable[[str], None] = print) -> Verdict:
    """Check REF (REGISTRY/REPO@sha256:...): an image's attestations, or an index's and each of its platforms'."""
    name, digest = attestations.split_reference(ref)
    platforms = served_platforms(ref)
    if not platforms:
        return _one(ref, public_key, attestations.KINDS, say)
    say(f"{ref}: an image index of {', '.join(platforms)}")
    index_checks = attestations.read_back(ref, public_key, kinds=(attestations.INDEX_KIND,))
    _show(ref, index_checks, say)
    failures = [attestations.failures(ref, index_checks)] if attestations.exit_code(index_checks) else []
    named = _named_platforms(ref, public_key)
    if not failures and named != platforms:
        failures.append(f"{ref}: the index's attestation names {named}, the registry's index holds {platforms}")
    for platform, platform_digest in platforms.items():
        verdict = _one(f"{name}@{platform_digest}", public_key, attestations.KINDS, say, platform)
        if verdict.code:
            failures.append(verdict.error)
    if failures:
        return Verdict(ExitCode.FAIL, f"{'; '.join(failures)}; fix: {FIX}")
    say(f"==> verified: the index {digest} and its {len(platforms)} platforms' digests, each signed by {public_key}")
    return Verdict(ExitCode.PASS, "")


def _one(ref: str, public_key: Path, kinds: tuple, say: Callable[[str], None], platform: str = "") -> Verdict:
    checks = attestations.read_back(ref, public_key, kinds=kinds)
    _show(f"{platform} {ref}" if platform else ref, checks, say)
    if attestations.exit_code(checks):
        if platform:
            return Verdict(ExitCode.FAIL, f"{platform} {attestations.failures(ref, checks)}")
        return Verdict(ExitCode.FAIL, attestations.failure_line(ref, checks, FIX))
    if not platform:
        say(f"==> verified: every attestation is signed by {public_key} and names {ref.rsplit('@', 1)[1]}")
    return Verdict(ExitCode.PASS, "")


def _show(what: str, checks: list[Check], say: Callable[[str], None]) -> None:
    say(f"{what}: {len(checks)} attestation(s) expected")
    for check in checks:
        say(f"  {check.line()}")


def _named_platforms(ref: str, public_key: Path) -> dict[str, str]:
    """The platforms' digests the index's verified attestation names ({} when none verified)."""
    statements = attestations.verified_statements(ref, public_key, attestations.INDEX)
    for statement in statements:
        platforms = (statement.get("predicate") or {}).get("platforms")
        if isinstance(platforms, dict):
            return platforms
    return {}
