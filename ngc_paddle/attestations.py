"""The signed evidence of a released image: which attestations it carries, and the verdict of reading them back.

Why: the release attaches five in-toto statements to every pushed digest (BuildKit's SLSA provenance, the
CycloneDX SBOM, the flavor's lock, the scan verdict, the gate verdicts), and both the release's own read-back
and `ngc-paddle verify` must judge them the same way: each must be there, verify with the owner's public key and
name this digest as its subject. cosign signs, attaches and checks signatures (ngc_paddle.cosign); this module
says what is expected, builds the statement cosign is asked to sign, and turns what came back into one verdict.
"""

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ngc_common.exit_codes import ExitCode
from ngc_paddle import cosign
from ngc_paddle.host_errors import NgcPaddleError

IN_TOTO = "https://in-toto.io/Statement/v0.1"  # the statement type cosign 2.x writes
SLSA_V02 = "https://slsa.dev/provenance/v0.2"
SLSA_V1 = "https://slsa.dev/provenance/v1"
CYCLONEDX = "https://cyclonedx.org/bom"
LOCK = "https://ngc-paddle.dev/attestations/lock/v1"
SCAN_VERDICT = "https://ngc-paddle.dev/attestations/scan-verdict/v1"
GATE_VERDICTS = "https://ngc-paddle.dev/attestations/gate-verdicts/v1"
INDEX = "https://ngc-paddle.dev/attestations/image-index/v1"  # on an image index: its platforms' digests


@dataclass(frozen=True)
class Kind:
    """One attestation every released digest carries: its name and the predicate types that count as it."""
    name: str
    types: tuple[str, ...]


# In the order they are attached and reported. BuildKit writes SLSA v0.2 (BuildKit 0.13) or v1 (newer ones).
KINDS = (Kind("provenance", (SLSA_V02, SLSA_V1)), Kind("sbom", (CYCLONEDX,)), Kind("lock", (LOCK,)),
         Kind("scan-verdict", (SCAN_VERDICT,)), Kind("gate-verdicts", (GATE_VERDICTS,)))
# The one attestation of an image index (a flavor of several platforms): each of its platforms' digests carries KINDS.
INDEX_KIND = Kind("index", (INDEX,))


@dataclass(frozen=True)
class Attestation:
    """A predicate the release signs about its digest."""
    name: str
    predicate_type: str
    predicate: dict


def split_reference(ref: str) -> tuple[str, str]:
    """(REGISTRY/REPO, sha256:...) of REGISTRY/REPO@sha256:...; a tag instead of a digest is bad input."""
    name, sep, digest = ref.partition("@")
    if not sep or not digest.startswith("sha256:") or len(digest) != 71 or not name or "/" not in name:
        raise NgcPaddleError(f"{ref}: not an image digest reference; fix: pass REGISTRY/REPO@sha256:... (the digest "
                             "the release printed; `docker buildx imagetools inspect REF` shows a tag's digest)")
    if ":" in name.rsplit("/", 1)[1]:
        name = name.rsplit(":", 1)[0]  # REPO:TAG@sha256:... names the digest: the tag is only a comment
    return name, digest


def statement(ref: str, attestation: Attestation) -> dict:
    """The in-toto statement cosign makes of `attestation` about REF: the digest as the subject, the repository
    (without registry tag) as its name, the predicate as given (a URI type is attached as is)."""
    name, digest = split_reference(ref)
    algorithm, value = digest.split(":", 1)
    return {"_type": IN_TOTO, "predicateType": attestation.predicate_type,
            "subject": [{"name": name, "digest": {algorithm: value}}], "predicate": attestation.predicate}


def decode(envelope: dict) -> dict:
    """The in-toto statement inside a DSSE envelope ({} when it holds none)."""
    try:
        payload = json.loads(base64.b64decode(envelope.get("payload", "")))
    except (ValueError, TypeError):
        return {}
    return payload if isinstance(payload, dict) else {}


def subject_digests(statement_: dict) -> list[str]:
    return [f"{alg}:{value}" for subject in statement_.get("subject") or [] if isinstance(subject, dict)
            for alg, value in (subject.get("digest") or {}).items()]


@dataclass(frozen=True)
class Check:
    """The read-back of one attestation: found, signer verified, subject digest matching; the reason when not."""
    name: str
    predicate_type: str  # the type found ("" when none)
    found: bool
    signer_ok: bool
    subject_ok: bool
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.found and self.signer_ok and self.subject_ok and not self.reason

    def line(self) -> str:
        mark = lambda good: "ok" if good else "FAILED"  # noqa: E731
        return (f"{self.name:14} {self.predicate_type or '-':55} signer {mark(self.signer_ok)}, subject digest "
                f"{mark(self.subject_ok)}" + (f": {self.reason}" if self.reason else ""))


def judge(kind: Kind, digest: str, public_key: str, attached: list[dict], verified: dict[str, list[dict]],
          expected: dict | None = None) -> Check:
    """The verdict on one kind of attestation. `attached`: every statement on the digest, unverified; `verified`:
    per predicate type, the statements whose signature the public key verified (cosign verify-attestation);
    `expected`: the predicate the release signed (its own read-back), None for a user's check."""
    for predicate_type in kind.types:
        good = verified.get(predicate_type) or []
        if not good:
            continue
        if not any(digest in subject_digests(s) for s in good):
            found = sorted({d for s in good for d in subject_digests(s)})
            return Check(kind.name, predicate_type, True, True, False, f"its subject is {', '.join(found)}, not "
                         f"{digest}")
        if expected is not None and not any(s.get("predicate") == expected for s in good):
            return Check(kind.name, predicate_type, True, True, True, "its predicate is not the one the release "
                         "signed (altered)")
        return Check(kind.name, predicate_type, True, True, True)
    present = [s for s in attached if s.get("predicateType") in kind.types]
    if not present:
        return Check(kind.name, "", False, False, False, "missing")
    predicate_type = present[0]["predicateType"]
    if not any(digest in subject_digests(s) for s in present):
        found = sorted({d for s in present for d in subject_digests(s)})
        return Check(kind.name, predicate_type, True, False, False, f"its subject is {', '.join(found)}, not "
                     f"{digest}, and no statement for this digest verifies with {public_key}")
    return Check(kind.name, predicate_type, True, False, True, f"its signature does not verify with {public_key} "
                 "(signed by another key, or altered)")


def failures(ref: str, checks: Iterable[Check]) -> str:
    """`REF: attestation(s) failed: NAME REASON; ...` of every attestation that failed."""
    bad = [f"{c.name} {c.reason}" for c in checks if not c.ok]
    return f"{ref}: attestation(s) failed: {'; '.join(bad)}"


def failure_line(ref: str, checks: Iterable[Check], fix: str) -> str:
    """One line naming every attestation that failed, and the fix."""
    return f"{failures(ref, checks)}; fix: {fix}"


def exit_code(checks: Iterable[Check]) -> ExitCode:
    return ExitCode.PASS if all(c.ok for c in checks) else ExitCode.FAIL


def read_back(ref: str, public_key: Path, expected: dict[str, Attestation] | None = None,
              kinds: tuple[Kind, ...] = KINDS) -> list[Check]:
    """Read every attestation of REF (NAME@sha256:...) back from the registry and judge each. `expected`: the
    release's own attestations by name, whose predicates must come back unchanged."""
    _, digest = split_reference(ref)
    attached = [decode(e) for e in cosign.attached(ref)]
    present_types = {s.get("predicateType") for s in attached}
    verified = {}
    for predicate_type in {t for kind in kinds for t in kind.types if t in present_types}:
        envelopes, _reason = cosign.verified(ref, public_key, predicate_type)
        verified[predicate_type] = [decode(e) for e in envelopes]
    return [judge(kind, digest, str(public_key), attached, verified,
                  expected[kind.name].predicate if expected and kind.name in expected else None) for kind in kinds]


def verified_statements(ref: str, public_key: Path, predicate_type: str) -> list[dict]:
    """The statements of `predicate_type` on REF whose signature `public_key` verifies and whose subject is REF's
    digest (what a check may read the predicate of)."""
    _, digest = split_reference(ref)
    envelopes, _reason = cosign.verified(ref, public_key, predicate_type)
    return [s for s in map(decode, envelopes) if digest in subject_digests(s)]
