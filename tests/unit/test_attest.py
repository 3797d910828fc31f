"""Signed evidence without a registry: the statements the release signs, BuildKit's provenance kept from the bake
metadata file, the verdict on what a read-back returns, and the attest stage with cosign faked as a registry."""

import base64
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from ngc_common.exit_codes import ExitCode
from ngc_paddle import attestations, cosign
from ngc_paddle.attestations import KINDS, Attestation, Check, judge, statement
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.image_build import provenance
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.stages import Built, attest, release_folder, scan
from ngc_paddle.release.state_file import State

DIGEST = "sha256:" + "d" * 64
OTHER = "sha256:" + "0" * 64
REF = f"127.0.0.1:5000/ngc-paddle@{DIGEST}"
V02 = {"buildType": "https://mobyproject.org/buildkit@v1", "invocation": {}, "buildConfig": {}, "metadata": {}}
V1 = {"buildDefinition": {"buildType": "https://mobyproject.org/buildkit@v1"}, "runDetails": {}}


def test_the_statement_names_the_digest_as_its_subject_and_keeps_the_predicate() -> None:
    lock = Attestation("lock", attestations.LOCK, {"file": "releases/26.12-cpu.lock.json"})
    made = statement(REF, lock)
    assert made == {"_type": "https://in-toto.io/Statement/v0.1", "predicateType": attestations.LOCK,
                    "subject": [{"name": "127.0.0.1:5000/ngc-paddle", "digest": {"sha256": "d" * 64}}],
                    "predicate": {"file": "releases/26.12-cpu.lock.json"}}
    assert statement(f"127.0.0.1:5000/ngc-paddle:26.12-cpu@{DIGEST}", lock) == made  # the tag is only a comment
    assert attestations.subject_digests(made) == [DIGEST]


def test_the_predicate_types_are_the_fields_own() -> None:
    assert {k.name: k.types for k in KINDS} == {
        "provenance": ("https://slsa.dev/provenance/v0.2", "https://slsa.dev/provenance/v1"),
        "sbom": ("https://cyclonedx.org/bom",),
        "lock": ("https://ngc-paddle.dev/attestations/lock/v1",),
        "scan-verdict": ("https://ngc-paddle.dev/attestations/scan-verdict/v1",),
        "gate-verdicts": ("https://ngc-paddle.dev/attestations/gate-verdicts/v1",)}
    assert provenance.predicate_type(V02) == attestations.SLSA_V02  # what BuildKit 0.13 writes
    assert provenance.predicate_type(V1) == attestations.SLSA_V1


@pytest.mark.parametrize("ref", ["127.0.0.1:5000/ngc-paddle:26.12-cpu", "ngc-paddle@" + DIGEST,
                                 "127.0.0.1:5000/ngc-paddle@sha256:abc", "127.0.0.1:5000/ngc-paddle@md5:" + "d" * 64])
def test_a_reference_without_a_digest_is_bad_input(ref: str) -> None:
    with pytest.raises(NgcPaddleError) as err:
        attestations.split_reference(ref)
    assert err.value.exit_code == ExitCode.BAD_INPUT and "fix: pass REGISTRY/REPO@sha256:" in str(err.value)


def metadata(tmp_path: Path, predicate: dict) -> Path:
    """A bake metadata file as buildx 0.29 writes it with BUILDX_METADATA_PROVENANCE=max (checked by hand)."""
    path = tmp_path / "suite.metadata.json"
    path.write_text(json.dumps({
        "paddle-cpu": {"buildx.build.provenance": {"buildType": "below"}, "buildx.build.ref": "x"},
        "suite-cpu": {"buildx.build.provenance": predicate, "buildx.build.ref": "y",
                      "containerimage.config.digest": "sha256:config", "containerimage.digest": "sha256:manifest"}}))
    return path


def test_the_final_targets_provenance_is_kept_with_the_image_it_describes(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    provenance.capture(metadata(tmp_path, V02), "suite-cpu", reports)
    assert provenance.load(reports, "sha256:manifest") == (attestations.SLSA_V02, V02)  # containerd store's id
    assert provenance.load(reports, "sha256:config") == (attestations.SLSA_V02, V02)  # classic store's id
    with pytest.raises(provenance.MissingProvenance, match="describes sha256:config, sha256:manifest, not sha256:"
                                                           "other; fix: rebuild"):
        provenance.load(reports, "sha256:other")
    assert not provenance.recorded(reports, "sha256:other") and provenance.recorded(reports, "sha256:config")
    with pytest.raises(NgcPaddleError, match=r"no buildx\.build\.provenance for target os-cpu"):
        provenance.capture(metadata(tmp_path, V02), "os-cpu", reports)
    (reports / provenance.FILE_NAME).write_text("[1]")
    assert not provenance.recorded(reports, "sha256:config")


def signed(predicate_type: str, digest: str = DIGEST, predicate: dict | None = None) -> dict:
    return {"_type": attestations.IN_TOTO, "predicateType": predicate_type,
            "subject": [{"name": "r/n", "digest": {"sha256": digest.split(":")[1]}}], "predicate": predicate or {}}


SBOM = KINDS[1]


def test_the_verdict_on_each_attestation() -> None:
    good = signed(attestations.CYCLONEDX, predicate={"bomFormat": "CycloneDX"})
    ok = judge(SBOM, DIGEST, "pub", [good], {attestations.CYCLONEDX: [good]}, {"bomFormat": "CycloneDX"})
    assert ok.ok and ok.signer_ok and ok.subject_ok and ok.predicate_type == attestations.CYCLONEDX
    assert "signer ok, subject digest ok" in ok.line()

    missing = judge(SBOM, DIGEST, "pub", [signed(attestations.LOCK)], {})
    assert not missing.ok and missing.reason == "missing" and not missing.found

    other_key = judge(SBOM, DIGEST, "pub", [good], {})  # attached, but the public key verifies none of it
    assert not other_key.ok and other_key.found and not other_key.signer_ok and other_key.subject_ok
    assert other_key.reason == "its signature does not verify with pub (signed by another key, or altered)"

    elsewhere = signed(attestations.CYCLONEDX, OTHER)
    moved = judge(SBOM, DIGEST, "pub", [elsewhere], {attestations.CYCLONEDX: [elsewhere]})
    assert not moved.ok and moved.signer_ok and not moved.subject_ok and f"its subject is {OTHER}" in moved.reason
    unverified_elsewhere = judge(SBOM, DIGEST, "pub", [elsewhere], {})
    assert not unverified_elsewhere.subject_ok and "no statement for this digest verifies" in \
        unverified_elsewhere.reason

    altered = judge(SBOM, DIGEST, "pub", [good], {attestations.CYCLONEDX: [good]}, {"bomFormat": "other"})
    assert not altered.ok and "not the one the release signed" in altered.reason
    # A user's check knows no predicate: a verified statement about this digest passes.
    assert judge(SBOM, DIGEST, "pub", [good], {attestations.CYCLONEDX: [good]}).ok
    # Provenance counts in either SLSA version BuildKit writes.
    v1 = signed(attestations.SLSA_V1, predicate=V1)
    assert judge(KINDS[0], DIGEST, "pub", [v1], {attestations.SLSA_V1: [v1]}).ok


def test_one_failure_line_names_every_failed_attestation_and_the_fix() -> None:
    checks = [Check("provenance", attestations.SLSA_V02, True, True, True),
              Check("lock", attestations.LOCK, True, False, True, "its signature does not verify with pub"),
              Check("scan-verdict", "", False, False, False, "missing")]
    line = attestations.failure_line(REF, checks, "rerun the release")
    assert line == (f"{REF}: attestation(s) failed: lock its signature does not verify with pub; scan-verdict "
                    "missing; fix: rerun the release")
    assert attestations.exit_code(checks) == ExitCode.FAIL and attestations.exit_code(checks[:1]) == ExitCode.PASS


# ---- the stage, with cosign faked as a registry holding envelopes signed by a named key ------------------------

class FakeRegistry:
    """What cosign would attach and read back: statements per digest, each with the key that signed it."""

    def __init__(self) -> None:
        self.held: dict[str, list[tuple[str, dict]]] = {}

    def attest(self, ref: str, key: str, predicate_type: str, predicate: Path) -> None:
        made = statement(ref, Attestation("", predicate_type, json.loads(predicate.read_text())))
        kept = [(k, s) for k, s in self.held.get(ref, []) if s["predicateType"] != predicate_type]  # --replace
        self.held[ref] = [*kept, (key, made)]

    @staticmethod
    def envelope(made: dict) -> dict:
        return {"payloadType": "application/vnd.in-toto+json", "payload": base64.b64encode(json.dumps(made).encode())
                .decode()}

    def attached(self, ref: str) -> list[dict]:
        return [self.envelope(s) for _, s in self.held.get(ref, [])]

    def verified(self, ref: str, public_key: Path, predicate_type: str) -> tuple[list[dict], str]:
        found = [self.envelope(s) for k, s in self.held.get(ref, []) if k + ".pub" == public_key.read_text()
                 and s["predicateType"] == predicate_type]
        return found, "" if found else "no matching attestations"


@pytest.fixture
def registry(monkeypatch, tmp_path: Path) -> FakeRegistry:
    fake = FakeRegistry()
    monkeypatch.setattr(cosign, "ensure", lambda: None)
    monkeypatch.setattr(cosign, "attest", fake.attest)
    monkeypatch.setattr(cosign, "attached", fake.attached)
    monkeypatch.setattr(cosign, "verified", fake.verified)
    monkeypatch.setattr(cosign, "public_key", lambda key, out: out.write_text(key + ".pub") and out)
    monkeypatch.delenv("COSIGN_KEY", raising=False)
    return fake


@pytest.fixture
def gated(tmp_path: Path, repo: Path) -> tuple[Built, State]:
    """A cpu flavor gated on DIGEST: its provenance, SBOM, scan report and gate verdicts where the stages write them."""
    shutil.copytree(repo / "releases", tmp_path / "releases")
    key = tmp_path / "owner.key"
    key.write_text("a key")
    loaded = ResolvedRelease.load(tmp_path, "26.12")
    resolved = loaded.flavor("cpu").with_digest(REF)
    built = Built(resolved, "sha256:manifest", 1, release_folder(tmp_path, "26.12") / "cpu",
                  ReleaseOptions("26.12", ["cpu"], root=tmp_path, key=str(key)))
    provenance.capture(metadata(tmp_path, V02), "suite-cpu", tmp_path / "build" / "reports" / "26.12-cpu")
    sbom = scan.sbom(built.folder)
    sbom.parent.mkdir(parents=True)
    sbom.write_text(json.dumps({"bomFormat": "CycloneDX", "components": []}))
    (sbom.parent / "scan.json").write_text(json.dumps({"blocked": False}))
    state = State(tmp_path / "state.json")
    state.record("cpu", "candidate", "", "passed", REF, digest=DIGEST)
    for stage in ("validate", "bench", "scan"):
        state.record("cpu", stage, "k", "passed", f"{stage} ran")
    return built, state


def test_the_stage_signs_five_statements_about_the_gated_digest(registry: FakeRegistry, gated) -> None:
    built, state = gated
    lines: list[str] = []
    outcome = attest.run(built, state, lines.append)
    assert outcome.status == "passed", lines
    held = {s["predicateType"]: s for _, s in registry.held[REF]}
    assert list(held) == [attestations.SLSA_V02, attestations.CYCLONEDX, attestations.LOCK,
                          attestations.SCAN_VERDICT, attestations.GATE_VERDICTS]
    assert all(attestations.subject_digests(s) == [DIGEST] for s in held.values())
    assert held[attestations.SLSA_V02]["predicate"] == V02  # BuildKit's own, as the build recorded it
    assert held[attestations.LOCK]["predicate"]["file"] == "releases/26.12-cpu.lock.json"
    assert held[attestations.LOCK]["predicate"]["lock"]["lock_version"] == 2
    assert held[attestations.SCAN_VERDICT]["predicate"] == {"status": "passed", "detail": "scan ran",
                                                             "report": {"blocked": False}}
    verdicts = held[attestations.GATE_VERDICTS]["predicate"]
    assert verdicts["image"] == REF and sorted(verdicts["gates"]) == ["bench", "scan", "validate"]
    assert state.data["cpu"]["attest"]["status"] == "passed" and len([ln for ln in lines if "signer ok" in ln]) == 5


def test_a_tampered_read_back_blocks_with_one_line(registry: FakeRegistry, gated, monkeypatch) -> None:
    built, state = gated
    real_attest = registry.attest

    def someone_else_signs_the_lock(ref, key, predicate_type, predicate):
        real_attest(ref, "intruder.key" if predicate_type == attestations.LOCK else key, predicate_type, predicate)

    monkeypatch.setattr(cosign, "attest", someone_else_signs_the_lock)
    outcome = attest.run(built, state, lambda _l: None)
    assert outcome.status == "failed" and "\n" not in outcome.detail
    assert outcome.detail.startswith(f"{REF}: attestation(s) failed: lock its signature does not verify with ")
    assert "fix: rerun the release" in outcome.detail and state.data["cpu"]["attest"]["status"] == "failed"


def test_evidence_that_is_not_there_fails_the_stage_naming_it(registry: FakeRegistry, gated) -> None:
    built, state = gated
    scan.sbom(built.folder).unlink()
    outcome = attest.run(built, state, lambda _l: None)
    assert outcome.status == "failed" and "sbom.cdx.json: the scan stage's SBOM is missing" in outcome.detail
    assert REF not in registry.held or len(registry.held[REF]) < 5


def test_no_key_is_bad_input_unless_the_release_is_unsigned(registry: FakeRegistry, gated, tmp_path: Path) -> None:
    built, state = gated
    with pytest.raises(cosign.KeyProblem) as err:
        attest.signing_key(ReleaseOptions("26.12"))
    assert err.value.exit_code == ExitCode.BAD_INPUT and "\n" not in str(err.value)
    assert "fix: pass --key FILE or set COSIGN_KEY" in str(err.value) and "--no-attest" in str(err.value)
    with pytest.raises(cosign.KeyProblem, match="no such file"):
        attest.signing_key(ReleaseOptions("26.12", key=str(tmp_path / "nowhere.key")))
    assert attest.signing_key(ReleaseOptions("26.12", no_attest=True)) is None
    unsigned = attest.run(replace(built, opts=ReleaseOptions("26.12", no_attest=True)), state, lambda _l: None)
    assert unsigned.status == "unsigned" and REF not in registry.held
    assert state.data["cpu"]["attest"]["detail"].startswith("unsigned: --no-attest")


def test_a_key_in_the_environment_is_passed_to_cosign_as_such(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COSIGN_KEY", "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n...")
    assert cosign.signing_key(None) == "env://COSIGN_KEY"  # the PEM itself, never written to a file
    path = tmp_path / "cosign.key"
    path.write_text("x")
    monkeypatch.setenv("COSIGN_KEY", str(path))
    assert cosign.signing_key(None) == str(path)
    assert cosign.signing_key(str(path)) == str(path)  # --key wins over the environment
    with pytest.raises(cosign.KeyProblem, match=r"other\.key: no such file"):
        cosign.signing_key(str(tmp_path / "other.key"))


def test_the_registry_ca_is_the_one_docker_trusts(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cosign, "DOCKER_CERTS", tmp_path)
    (tmp_path / "127.0.0.1:5443").mkdir()
    (tmp_path / "127.0.0.1:5443" / "ca.crt").write_text("ca")
    assert cosign.registry_ca(f"127.0.0.1:5443/ngc-paddle@{DIGEST}") == tmp_path / "127.0.0.1:5443" / "ca.crt"
    assert cosign.registry_ca(f"registry.example/ngc-paddle@{DIGEST}") is None


def test_verify_refuses_a_tag_or_a_missing_key_before_asking_the_registry(tmp_path: Path, capsys, monkeypatch) -> None:
    from ngc_paddle.cli import main

    monkeypatch.setattr(cosign, "attached", lambda ref: pytest.fail("no registry call for bad input"))
    public = tmp_path / "cosign.pub"
    public.write_text("-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n")
    assert main(["verify", "127.0.0.1:5000/ngc-paddle:26.12-cpu", "--key", str(public)]) == ExitCode.BAD_INPUT
    assert "fix: pass REGISTRY/REPO@sha256:" in capsys.readouterr().err
    assert main(["verify", REF, "--key", str(tmp_path / "cosign.key")]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a public key file" in err


def test_verify_on_a_host_without_the_docker_cli_is_one_line_naming_the_fix(tmp_path: Path, capsys,
                                                                             monkeypatch) -> None:
    """verify reads the registry's index with `docker manifest inspect`: no CLI is a toolchain error, not a crash."""
    from ngc_paddle import engine
    from ngc_paddle.cli import main

    monkeypatch.setattr(engine, "CLI", str(tmp_path / "no-docker-here"))
    public = tmp_path / "cosign.pub"
    public.write_text("-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n")
    code = main(["verify", REF, "--key", str(public)])
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT and err.count("\n") == 1, err
    assert err.startswith(f"error: {tmp_path / 'no-docker-here'}: command not found; fix: bash toolchain/ensure-engine")
