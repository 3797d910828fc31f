"""Release stage `attest`: the gated candidate digest signed with its evidence, then read back and verified.

The long form: docs/design-notes.md, section `ngc_paddle/release/stages/attest.py`.
"""

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from ngc_paddle import attestations, cosign
from ngc_paddle.attestations import Attestation
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.image_build import provenance
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.stages import Built, Outcome, digest
from ngc_paddle.release.stages import scan as scan_stage
from ngc_paddle.release.state_file import State

NAME = "attest"
NOT_GATES = ("candidate", NAME, "push")  # state.json entries that are not verdicts on the image
NO_KEY = ("no signing key for the release's attestations; fix: pass --key FILE or set COSIGN_KEY (and "
          "COSIGN_PASSWORD) to a key made with `cosign generate-key-pair`, or --no-attest for an unsigned release")


def signing_key(opts: ReleaseOptions) -> str | None:
    """The key the release signs with, checked before anything is built (None with --no-attest); no key: exit 2."""
    if opts.no_attest:
        return None
    cosign.ensure()
    key = cosign.signing_key(opts.key)
    if key is None:
        raise cosign.KeyProblem(NO_KEY)
    return key


def evidence(built: Built, state: State) -> list[Attestation]:
    """The five predicates signed about a flavor's gated digest (raises NgcPaddleError naming a missing one)."""
    resolved = built.resolved
    slsa_type, slsa = provenance.load(resolved.reports_dir, built.image_id)
    sbom_file = scan_stage.sbom(built.folder)
    scan_file = sbom_file.parent / "scan.json"
    lock_file = resolved.lock_file
    entries = state.data.get(built.entry, {})
    gates = {name: {k: entry[k] for k in ("status", "detail", "finished") if k in entry}
             for name, entry in entries.items() if name not in NOT_GATES}
    scan_entry = entries.get(scan_stage.NAME) or {}
    return [
        Attestation("provenance", slsa_type, slsa),
        Attestation("sbom", attestations.CYCLONEDX, _json(sbom_file, "the scan stage's SBOM")),
        Attestation("lock", attestations.LOCK, {"file": f"releases/{lock_file.name}", "sha256": _sha256(lock_file),
                                                "lock": _json(lock_file, "the flavor's lock")}),
        Attestation("scan-verdict", attestations.SCAN_VERDICT,
                    {"status": scan_entry.get("status", "not run"), "detail": scan_entry.get("detail", ""),
                     "report": _json(scan_file, "the scan stage's report")}),
        Attestation("gate-verdicts", attestations.GATE_VERDICTS,
                    {"release": built.release, "flavor": built.flavor, "image": resolved.reference, "gates": gates}
                    | ({"platform": resolved.platform} if built.entry != built.flavor else {})),
    ]


def index_evidence(built: Built) -> Attestation:
    """The attestation of a flavor's image index itself: which platform manifests it holds (each carries its own
    five)."""
    return Attestation("index", attestations.INDEX,
                       {"release": built.release, "flavor": built.flavor, "index": built.resolved.reference,
                        "platforms": {p: ref.rsplit("@", 1)[1] for p, ref in built.platform_refs.items()}})


def run(built: Built, state: State, say: Callable[[str], None] = print) -> Outcome:
    """Attach and verify the evidence of the flavor's gated digest; the Outcome is recorded in state.json. A flavor
    of several platforms: each platform's digest gets its own (its provenance, lock, SBOM and gates), and the index
    one naming those digests."""
    if built.opts.no_attest:
        return _record(state, built, "", Outcome("unsigned", "unsigned: --no-attest given, no attestation attached"),
                       say)
    subjects = [(b, lambda b=b: evidence(b, state), attestations.KINDS) for b in built.on_platforms()]
    if built.platform_refs:
        subjects.append((built, lambda: [index_evidence(built)], (attestations.INDEX_KIND,)))
    keys: list[str] = []
    key_of = lambda: digest(keys) if built.platform_refs else keys[0]  # noqa: E731 (one image: its own key, as before)
    done = []
    for subject, signed_of, kinds in subjects:
        ref = subject.resolved.reference
        where = f"{subject.resolved.platform} " if subject is not built else ""
        say(f"--> {NAME} {where}{ref}")
        try:
            signed = signed_of()
            keys.append(digest(ref, [a.predicate for a in signed]))
            checks = _attach(built.opts, subject.folder / NAME, ref, signed, kinds)
        except NgcPaddleError as exc:
            return _record(state, built, "", Outcome("failed", f"attestations not attached: {where}{exc}"), say)
        for check in checks:
            say(f"    {check.line()}")
        if attestations.exit_code(checks) != 0:
            detail = attestations.failure_line(ref, checks, f"rerun the release (it attaches them again); if it "
                                               f"fails again, check who else pushes to {ref.split('/', 1)[0]}")
            return _record(state, built, key_of(), Outcome("failed", f"{where}{detail}"), say)
        done.append(f"{len(checks)} signed and verified on {where}{ref.rsplit('@', 1)[1][:19]}: "
                    + ", ".join(c.name for c in checks))
    return _record(state, built, key_of(), Outcome("passed", "; ".join(done)), say)


def _attach(opts: ReleaseOptions, folder: Path, ref: str, signed: list[Attestation],
            kinds: tuple[attestations.Kind, ...]) -> list[attestations.Check]:
    """Sign each predicate about REF (kept in `folder`), attach it, and read them all back."""
    key = signing_key(opts)
    assert key is not None
    folder.mkdir(parents=True, exist_ok=True)
    for attestation in signed:
        predicate = folder / f"{attestation.name}.json"
        predicate.write_text(json.dumps(attestation.predicate, sort_keys=True) + "\n")
        cosign.attest(ref, key, attestation.predicate_type, predicate)
    public = cosign.public_key(key, folder / "cosign.pub")
    return attestations.read_back(ref, public, {a.name: a for a in signed}, kinds)


def _record(state: State, built: Built, key: str, outcome: Outcome, say: Callable[[str], None]) -> Outcome:
    state.record(built.flavor, NAME, key, outcome.status, outcome.detail, image_id=built.image_id)
    say(f"    {NAME}: {outcome.status}: {outcome.detail}")
    return outcome


def _json(path: Path, what: str) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise NgcPaddleError(f"{path}: {what} is missing; fix: rerun the release (its gates write it)") from None
    except ValueError as exc:
        raise NgcPaddleError(f"{path}: {what} is not JSON ({exc}); fix: rerun the release") from None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
