"""The cpu flavor's image index released: the session's built index (linux/amd64 and linux/arm64) pushed as the
candidate to a TLS registry, its platforms' digests read back and checked against the build's index record, each
platform's digest and the index attested with a test key, `ngc-paddle verify` accepting the index and the arm64
digest, and refusing the index in one line naming linux/arm64 once that digest lost an attestation. The release tag
then moves to the same index, its platforms' digests kept for the notes.

Cost: the index is the session's `built` image (both platforms; no build here). The gates are not what this file
asserts: each platform's validation, benchmarks and scan are seeded as passed in the state file, with a minimal SBOM
and scan report per platform where the scan stage writes them (the arm64 validation and bench-rn50 --smoke under
qemu take many minutes: docs/releasing.md, "A flavor of several platforms"; test_release_pipeline.py and
test_attest.py run the amd64 gates and scan for real). Measured (2026-12-07, 2-core Xeon beside a full test run): 101 s,
mostly the push of both platforms to the empty registry; the attestations about 6 s, each verify about 1 s.
"""

import json
import subprocess
from pathlib import Path

import pytest

from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.image_build.image_index import RECORD
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.stages import Built, attest, candidate, push, scan
from ngc_paddle.release.state_file import State
from tests.integration.conftest import CLI, KEY_PASSWORD, REPO, key_pair, own_registry
from tests.integration.test_attest import drop_attestation

PORT = 5036
PLATFORMS = ("linux/amd64", "linux/arm64")


def verify(ref: str, public_key: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "verify", ref, "--key", str(public_key)], capture_output=True, text=True, cwd=REPO,
                          timeout=600)


def seed_gates(state: State, folder: Path, entry: str) -> None:
    """The gates of one platform as passed, with the SBOM and scan report its scan stage would write."""
    for stage in ("validate", "bench", "scan"):
        state.record(entry, stage, "", "passed", f"seeded by the test ({entry})")
    sbom = scan.sbom(folder / entry)
    sbom.parent.mkdir(parents=True)
    sbom.write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.5", "components": [], "seeded": entry}))
    (sbom.parent / "scan.json").write_text(json.dumps({"blocked": False, "seeded": entry}))


def test_the_index_and_each_platform_are_attested_and_verified(built, tmp_path: Path, monkeypatch) -> None:
    resolved = ResolvedRelease.load(REPO, built.release).flavor(built.flavor)
    record = json.loads((resolved.reports_dir / RECORD).read_text())
    assert list(record["platforms"]) == list(PLATFORMS) and engine.image_id(built.image) == record["index"]
    key, public = key_pair(tmp_path / "owner")
    monkeypatch.setenv("COSIGN_PASSWORD", KEY_PASSWORD)
    state = State(tmp_path / "release" / "state.json")
    state.record(built.flavor, "build", record["index"], "passed", built.image, image=built.image)
    say: list[str] = []
    with own_registry(PORT, tmp_path / "registry", REGISTRY_TLS="1") as registry:
        # The candidate: docker push of the index tag pushes both platforms; the registry's index is the one built.
        ref = candidate.push(state, built.flavor, built.image, registry, say.append)
        assert ref.endswith(f"@{record['index']}"), say
        refs = candidate.platform_refs(state, built.flavor, ref, resolved.reports_dir / RECORD)
        assert {p: r.rsplit("@", 1)[1] for p, r in refs.items()} == record["platforms"]

        folder = tmp_path / "release" / built.flavor
        subject = Built(resolved.with_digest(ref), record["index"], 1, folder,
                        ReleaseOptions(built.release, [built.flavor], registry, root=REPO, key=str(key)),
                        platform_refs={p: refs[p] for p in PLATFORMS})
        for entry in ("cpu", "cpu-arm64"):
            seed_gates(state, folder.parent, entry)
        outcome = attest.run(subject, state, say.append)
        assert outcome.status == "passed", "\n".join(say)
        assert len([line for line in say if "signer ok, subject digest ok" in line]) == 11  # 5 + 5 + the index's

        good = verify(ref, public)
        assert good.returncode == 0, good.stdout + good.stderr
        assert "an image index of linux/amd64, linux/arm64" in good.stdout
        assert good.stdout.count("signer ok, subject digest ok") == 11
        arm64 = refs["linux/arm64"]
        alone = verify(arm64, public)
        assert alone.returncode == 0 and alone.stdout.count("signer ok, subject digest ok") == 5, alone.stdout

        # The arm64 digest loses its lock attestation: the index no longer verifies, naming the platform.
        repository = ref.split("/", 1)[1].split("@", 1)[0]
        drop_attestation(registry, repository, arm64.rsplit("@", 1)[1], "https://ngc-paddle.dev/attestations/lock/v1")
        bad = verify(ref, public)
        assert bad.returncode == 1, bad.stdout + bad.stderr
        error = bad.stderr.strip().splitlines()
        assert len(error) == 1 and error[0].startswith(f"error: linux/arm64 {arm64}: attestation(s) failed: lock "
                                                       "missing"), bad.stderr
        assert "linux/amd64" not in error[0]

        # The release tag moves to the gated index; its platforms' digests are kept for the notes.
        digest = push.push(state, built.flavor, built.image, registry, say.append, gated=record["index"],
                           platforms=record["platforms"])
        assert digest == record["index"]
        assert state.data[built.flavor]["push"]["platform_digests"] == record["platforms"]


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch) -> None:
    monkeypatch.delenv("COSIGN_KEY", raising=False)
