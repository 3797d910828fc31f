"""The release of two flavors in one run (cpu and gpu-cu118) against a registry over TLS with a login: all or nothing.

On a host without a GPU, gpu-cu118's validation and benchmark gates are NOT PROVEN: without a person's word
(`--accept-unproven REASON`, `make release ACCEPT_UNPROVEN=...`) neither flavor is pushed; with it both are,
each digest is read back through the registry with the login, and one notes file holds both flavors with
their own gates and digests, gpu-cu118's unproven rows with the reason. `--flavor all` also tries gpu (CUDA
12.6), whose lock is pending on this host: reported as not built, with why, without holding back the others.

Cost: the builds are BuildKit cache hits of the release's own layers (a scratch name of its own); one
benchmark (bench-rn50, as the cpu release test) instead of two; gpu-cu118's benchmark stops at once
(no GPU: NOT PROVEN). The second run skips every passed stage (stored state) and reruns only the NOT PROVEN
ones; the push of gpu-cu118 (about 7 GB) is the long part.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from ngc_paddle.image_build.scratch import scratch_copy
from ngc_paddle.release.registry import served_digest
from tests.integration.conftest import CLI, REPO, own_registry
from tests.integration.test_release_pipeline import docker_config  # noqa: F401 (a fixture)

# A registry of this test's own (port, storage), so that its several GB go when the test ends.
REGISTRY, USER, PASSWORD = "127.0.0.1:5447", "ngc-release-test", "not-a-secret-test-only"
NAME = os.environ.get("NGC_PADDLE_ITEST_IMAGE", "ngc-paddle-itest") + "-flavors"
REASON = "no GPU on the test host"


@pytest.fixture
def registry(tmp_path: Path):
    """A TLS registry with a login on a port of its own, its storage under tmp_path; stopped and removed after."""
    with own_registry(int(REGISTRY.split(":")[1]), tmp_path / "registry", REGISTRY_TLS="1", REGISTRY_USER=USER,
                      REGISTRY_PASSWORD=PASSWORD) as address:
        yield address


@pytest.fixture
def scratch(tmp_path: Path):
    """A copy of the repository whose images are named NAME; every image of that name removed after."""
    root = scratch_copy(REPO, tmp_path / "repo", NAME)
    try:
        yield root
    finally:
        refs = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True,
                              text=True).stdout.split()
        mine = [r for r in refs if r.rsplit(":", 1)[0] in (NAME, f"{NAME}-layers", f"{REGISTRY}/{NAME}")]
        if mine:  # untags the layers it shares with the release's own images; removes only what is its own
            subprocess.run(["docker", "image", "rm", *mine], capture_output=True)


def release(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "--root", str(root), "release", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=3600)


def gate_rows(notes: str, flavor: str) -> dict[str, list[str]]:
    """stage -> [result, detail] of FLAVOR's rows in the notes' gate table."""
    table = notes.split("## Release gates", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0] == flavor:
            rows[cells[1]] = [cells[2], "|".join(cells[3:])]
    return rows


def test_two_flavors_push_all_or_nothing_and_share_one_notes_file(scratch: Path, registry: str,
                                                                  docker_config: dict,  # noqa: F811
                                                                  monkeypatch) -> None:
    release_id = sorted(p.stem for p in (scratch / "releases").glob("*.yaml"))[-1]
    # No vulnerability feed reaches the test host: a waiver in the scratch copy (as the cpu release test does).
    waived = scratch / "security" / "waived.yaml"
    waived.write_text((scratch / "security" / "policy.yaml").read_text()
                      + "vulnerability_waiver: {reason: no feed on the test host, expires: 2099-12-31}\n")
    # Unsigned (--no-attest): tests/integration/test_release_pipeline.py signs and verifies a release.
    common = ("--bench", "bench-rn50", "--registry", registry, "--policy", str(waived), "--no-attest")
    subprocess.run(["docker", "login", registry, "-u", USER, "--password-stdin"], input=PASSWORD, text=True,
                   check=True, capture_output=True, env=docker_config)
    monkeypatch.setenv("DOCKER_CONFIG", docker_config["DOCKER_CONFIG"])  # the login, for served_digest's client
    refs = {f: f"{registry}/{NAME}:{release_id}-{f}" for f in ("cpu", "gpu-cu118")}
    state_path = scratch / "build" / "release" / release_id / "state.json"
    # 1. Without a person's word, gpu-cu118's NOT PROVEN gates block the whole release: cpu passes every gate
    #    and is not pushed either.
    blocked = release(scratch, docker_config, release_id, "--flavor", "cpu gpu-cu118", *common)
    out = blocked.stdout
    assert blocked.returncode == 3, out[-3000:] + blocked.stderr  # held back by missing evidence alone: NOT PROVEN
    assert blocked.stderr.strip().splitlines()[-1].startswith(f"error: release {release_id} blocked by: gpu-cu118")
    skipped = next(line for line in out.splitlines() if line.startswith("==> push skipped: "))
    assert "gpu-cu118: validate gate NOT PROVEN" in skipped and "gpu-cu118: bench gate NOT PROVEN" in skipped
    assert "--accept-unproven REASON" in skipped and "; cpu: " not in skipped and ": cpu: " not in skipped, skipped
    assert "    cpu: built and gated, not pushed" in out and "    gpu-cu118: built and gated, not pushed" in out
    state = json.loads(state_path.read_text())
    assert all("push" not in state[f] for f in refs), state
    assert {s: state["cpu"][s]["status"] for s in ("validate", "bench", "scan")} == dict.fromkeys(
        ("validate", "bench", "scan"), "passed")
    assert state["gpu-cu118"]["validate"]["status"] == state["gpu-cu118"]["bench"]["status"] == "not proven"
    assert "no GPU" in state["gpu-cu118"]["bench"]["detail"], state["gpu-cu118"]["bench"]
    assert served_digest(refs["cpu"]) is None and served_digest(refs["gpu-cu118"]) is None  # neither pushed

    # 2. With the reason, every flavor the host can build: gpu's lock is pending here (not built, with why);
    #    the passed stages are not run again; both images pushed, each digest read back with the login.
    done = release(scratch, docker_config, release_id, "--flavor", "all", "--accept-unproven", REASON, *common)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr
    assert out.count("--> validate: unchanged since") == 1 and out.count("--> scan: unchanged since") == 2, out
    # gpu-cu118's NOT PROVEN gates have the same inputs (image, no GPU here): taken as they are, not run again.
    assert out.count("--> validate: NOT PROVEN with the same inputs on ") == 1, out
    assert out.count("--> bench: NOT PROVEN with the same inputs on ") == 1, out
    state = json.loads(state_path.read_text())
    assert state["gpu"]["build"]["status"] == "failed" and "lock" in state["gpu"]["build"]["detail"]
    assert f"    gpu: not built: {state['gpu']['build']['detail']}" in out
    digests = {f: state[f]["push"]["digest"] for f in refs}
    assert digests["cpu"] != digests["gpu-cu118"]
    for flavor, ref in refs.items():
        assert digests[flavor].startswith("sha256:") and served_digest(ref) == digests[flavor], flavor
        assert f"    {flavor}: pushed {digests[flavor]}" in out

    # 3. One notes file: each flavor with its own gate rows and its own digest; gpu-cu118's unproven rows say so,
    #    with the reason; gpu not built, with why.
    notes = (scratch / "release-notes" / f"{release_id}.md").read_text()
    cpu, cu118, gpu = gate_rows(notes, "cpu"), gate_rows(notes, "gpu-cu118"), gate_rows(notes, "gpu")
    for rows in (cpu, cu118):
        assert set(rows) == {"build", "validate", "bench", "ab", "scan", "month-over-month", "attest"}, rows
        assert rows.pop("attest")[0] == "unsigned"  # --no-attest: the notes say the evidence is not signed
        # The previous release (23.01) has neither flavor: the A/B part is NOT RUN, not blocking, with the reason.
        ab_result, ab_detail = rows.pop("ab")
        assert ab_result == "not run" and "first release" in ab_detail, (ab_result, ab_detail)
    assert all(result == "passed" for result, _ in cpu.values()), cpu
    for stage in ("validate", "bench"):
        result, detail = cu118[stage]
        assert result == "NOT PROVEN, pushed on a person's word" and detail.endswith(f"accepted by a person: {REASON}")
    assert cu118["bench"][1].startswith("bench-rn50: NOT PROVEN")
    assert cu118["build"][0] == "passed" and NAME in cu118["build"][1] and NAME in cpu["build"][1]
    assert gpu["build"][0] == "not built" and gpu["build"][1] == state["gpu"]["build"]["detail"]
    table = notes.split("## Image digests", 1)[1]
    for flavor in refs:
        assert f"| `{NAME}:{release_id}-{flavor}` | {digests[flavor]} |" in table
    assert f"| `{NAME}:{release_id}-gpu` | not built: " in table
    assert "## Benchmarks (cpu)" in notes
