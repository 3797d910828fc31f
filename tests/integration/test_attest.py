"""Signed evidence on a pushed digest: the release's attest stage attaches BuildKit's provenance, the SBOM, the lock and
the verdicts to the cpu image in a local TLS registry with a test key, `ngc-paddle verify` checks them, and a
replaced one (signed with another key) and a deleted one make both the verify command and the release's read-back
fail, naming them."""

import hashlib
import json
import ssl
import subprocess
import urllib.request
from pathlib import Path

import pytest

from ngc_paddle import attestations, engine
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.platforms import DEFAULT_PLATFORM
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.registry import served_platforms
from ngc_paddle.release.stages import Built, attest, scan
from ngc_paddle.release.state_file import State
from tests.integration.conftest import CLI, KEY_PASSWORD, REPO, key_pair, own_registry

PORT = 5032

def verify(ref: str, public_key: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "verify", ref, "--key", str(public_key)], capture_output=True, text=True, cwd=REPO,
                          timeout=600)


def drop_attestation(registry: str, repository: str, digest: str, predicate_type: str) -> None:
    """Delete one attestation from the image's cosign attachment (REPO:sha256-HEX.att) through the registry API,
    as someone with push rights could: the manifest is put back without that layer (its config without its diff id)."""
    context = ssl.create_default_context(cafile=f"/etc/docker/certs.d/{registry}/ca.crt")
    base = f"https://{registry}/v2/{repository}"
    url = f"{base}/manifests/{digest.replace(':', '-')}.att"
    media = "application/vnd.oci.image.manifest.v1+json"

    def call(address: str, method: str = "GET", body: bytes | None = None, **headers: str):
        request = urllib.request.Request(address, data=body, method=method, headers=headers)
        return urllib.request.urlopen(request, context=context)

    with call(url, Accept=media) as answer:
        manifest = json.load(answer)
    gone = [i for i, layer in enumerate(manifest["layers"]) if layer["annotations"].get("predicateType") ==
            predicate_type]
    assert len(gone) == 1, manifest["layers"]
    with call(f"{base}/blobs/{manifest['config']['digest']}") as answer:
        config = json.load(answer)
    config["rootfs"]["diff_ids"].pop(gone[0])
    blob = json.dumps(config).encode()
    blob_digest = f"sha256:{hashlib.sha256(blob).hexdigest()}"
    with call(f"{base}/blobs/uploads/", "POST", b"") as answer:
        location = answer.headers["Location"]
    location = location if location.startswith("https:") else f"https://{registry}{location}"
    separator = "&" if "?" in location else "?"
    with call(f"{location}{separator}digest={blob_digest}", "PUT", blob,
              **{"Content-Type": "application/octet-stream"}) as answer:
        assert answer.status == 201
    manifest["layers"].pop(gone[0])
    manifest["config"] = {**manifest["config"], "digest": blob_digest, "size": len(blob)}
    with call(url, "PUT", json.dumps(manifest).encode(), **{"Content-Type": media}) as answer:
        assert answer.status == 201


def test_attest_verify_then_a_replaced_and_a_deleted_attestation_fail(built, tmp_path: Path, monkeypatch) -> None:
    key, public = key_pair(tmp_path / "owner")
    other_key, _ = key_pair(tmp_path / "someone-else")
    monkeypatch.setenv("COSIGN_PASSWORD", KEY_PASSWORD)
    with own_registry(PORT, tmp_path / "registry", REGISTRY_TLS="1") as registry:
        repository = f"ngc-paddle-attest-{tmp_path.name.lower()}"
        target = f"{registry}/{repository}:{built.release}-{built.flavor}"
        engine.tag(built.image, target)
        pushed = engine.push(target)
        assert pushed.returncode == 0, pushed.stderr
        # the built tag is cpu's image index: the release attests each platform's digest as an image (and the index
        # on its own: test_release_platforms.py); this test takes the default platform's
        platforms = served_platforms(target) or {}
        digest = platforms.get(DEFAULT_PLATFORM) or next(w for w in pushed.stdout.split() if w.startswith("sha256:"))
        ref = f"{registry}/{repository}@{digest}"

        # The flavor as the pipeline hands it to the attest stage: the gated digest, the build's provenance.
        resolved = ResolvedRelease.load(REPO, built.release).flavor(built.flavor).with_digest(ref)
        image_id = digest if platforms else engine.image_id(built.image) or ""
        flavor_folder = tmp_path / "release" / built.flavor
        subject = Built(resolved, image_id, engine.image_size(built.image), flavor_folder,
                        ReleaseOptions(built.release, [built.flavor], registry, root=REPO, key=str(key)))
        state = State(tmp_path / "release" / "state.json")
        state.record(built.flavor, "build", image_id, "passed", built.image)
        state.record(built.flavor, "candidate", "", "passed", ref, digest=digest)
        outcome = scan.plan(subject).run()  # the real scan stage: its SBOM and report are what gets signed
        state.record(built.flavor, scan.NAME, "", outcome.status, outcome.detail)

        lines: list[str] = []
        result = attest.run(subject, state, lines.append)
        assert result.status == "passed", "\n".join(lines)
        assert state.data[built.flavor]["attest"]["status"] == "passed"
        assert len([line for line in lines if "signer ok, subject digest ok" in line]) == 5, lines

        good = verify(ref, public)
        assert good.returncode == 0, good.stdout + good.stderr
        for kind in ("provenance", "sbom", "lock", "scan-verdict", "gate-verdicts"):
            assert any(line.split()[0] == kind and "signer ok, subject digest ok" in line
                       for line in good.stdout.splitlines() if line.strip()), good.stdout
        assert "https://slsa.dev/provenance/v0.2" in good.stdout and attestations.CYCLONEDX in good.stdout

        # The lock's attestation replaced by one signed with another key; the scan verdict's deleted.
        predicate = tmp_path / "forged-lock.json"
        predicate.write_text(json.dumps({"file": "releases/forged.lock.json"}))
        subprocess.run(["cosign", "attest", "--yes", "--key", str(other_key), "--type", attestations.LOCK,
                        "--predicate", str(predicate), "--tlog-upload=false", "--replace", "--registry-cacert",
                        f"/etc/docker/certs.d/{registry}/ca.crt", ref], check=True, capture_output=True)
        drop_attestation(registry, repository, digest, attestations.SCAN_VERDICT)

        bad = verify(ref, public)
        assert bad.returncode == 1, bad.stdout + bad.stderr
        error = bad.stderr.strip().splitlines()
        assert len(error) == 1 and error[0].startswith(f"error: {ref}: attestation(s) failed: "), bad.stderr
        assert f"lock its signature does not verify with {public}" in error[0]
        assert "scan-verdict missing" in error[0] and "fix: " in error[0]
        assert "provenance" not in error[0] and "sbom" not in error[0]  # the others still verify

        # The release's own read-back blocks on the same two; its stage attaches them again and passes.
        checks = attestations.read_back(ref, public)
        assert [c.name for c in checks if not c.ok] == ["lock", "scan-verdict"]
        again = attest.run(subject, state, lines.append)
        assert again.status == "passed", "\n".join(lines)
        assert verify(ref, public).returncode == 0

        # A tag is not evidence of anything: exit 2, saying to pass the digest.
        by_tag = verify(target, public)
        assert by_tag.returncode == 2 and "fix: pass REGISTRY/REPO@sha256:" in by_tag.stderr


def test_a_release_without_a_key_stops_before_building(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("COSIGN_KEY", raising=False)
    proc = subprocess.run([*CLI, "--root", str(REPO), "release", "--registry", "127.0.0.1:1"], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: no signing key") and "--no-attest" in proc.stderr
    assert "==> " not in proc.stdout  # nothing built, nothing pushed


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch) -> None:
    monkeypatch.delenv("COSIGN_KEY", raising=False)
