"""The release of two flavors in one run (cpu and gpu-cu118) against a registry over TLS with a login: all or nothing,
and the cpu flavor's A/B against the previous release's image.

On a host without a GPU, gpu-cu118's validation and benchmark gates are NOT PROVEN: without a person's word
(`--accept-unproven REASON`, `make release ACCEPT_UNPROVEN=...`) neither flavor is pushed; with it both are,
each digest is read back through the registry with the login, and one notes file holds both flavors with
their own gates and digests, gpu-cu118's unproven rows with the reason. `--flavor all` also tries gpu (CUDA
12.6), whose lock is pending on this host: reported as not built, with why, without holding back the others.
The scratch copy has a release before 26.12 (26.11, conftest.previous_release) that shipped cpu alone: the
cpu flavor's `ab` stage finds its image by the default lookup (the pushed digest in 26.11's state.json), pulls
it from the registry with the login and runs it against the candidate in smoke rounds on this host (ab.json with
both digests, the node's facts, every round's figures; the notes show ratio and interval per metric); gpu-cu118,
new in 26.12, has no previous image: its A/B is NOT RUN with the reason and does not block.

Cost: the builds are BuildKit cache hits of the release's own layers (a scratch name of its own). The cpu
flavor's validation and benchmark are seeded as passed in the release's state file (the cpu release test,
test_release_pipeline.py, runs both for real and asserts the notes' benchmark section), and so is gpu-cu118's scan
(test_scan_integrity.py scans that image and asserts its report; the cpu release test runs a scan stage): this run
gates what this test asserts, and no efficiency gate decides here, so it runs beside other tests. gpu-cu118's
validation runs for real (NOT PROVEN without a GPU) and its benchmark stops at once (no GPU: NOT PROVEN). The A/B: 3
smoke rounds after a warm-up round (8 runs of seconds each). The second run skips every passed stage (stored state)
and reruns only the NOT PROVEN ones. Measured before gpu-cu118's scan was seeded (2026-12-07, Intel Xeon with
AVX-512, beside other work): 587 s, of which the cpu A/B 205 s, gpu-cu118's validation, benchmark and scan 230 s (its
scan cold: the user's scan cache did not hold its layers yet), gpu-cu118's build from the cache 41 s and its
candidate push 37 s; the second run 5 s.
"""

import json
import os
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ngc_paddle.release.registry import served_digest, served_platforms
from ngc_paddle.release.stages import bench as bench_stage
from ngc_paddle.release.stages import scan as scan_stage
from ngc_paddle.release.stages import validate as validate_stage
from tests.integration.conftest import CLI, PREVIOUS, REPO, own_registry, previous_release
from tests.integration.conftest import scratch as scratch_of
from tests.integration.test_release_pipeline import docker_config, seed_passed  # noqa: F401 (a fixture)

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
    root = scratch_of(tmp_path / "repo", NAME)
    try:
        yield root
    finally:
        refs = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True,
                              text=True).stdout.split()
        mine = [r for r in refs if r.rsplit(":", 1)[0] in (NAME, f"{NAME}-layers", f"{NAME}-previous",
                                                            f"{REGISTRY}/{NAME}")]
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
                                                                  monkeypatch, built) -> None:
    release_id = sorted(p.stem for p in (scratch / "releases").glob("*.yaml"))[-1]
    # No vulnerability feed reaches the test host: a waiver in the scratch copy (as the cpu release test does).
    waived = scratch / "security" / "waived.yaml"
    waived.write_text((scratch / "security" / "policy.yaml").read_text()
                      + "vulnerability_waiver: {reason: no feed on the test host, expires: 2099-12-31}\n")
    # Unsigned (--no-attest): tests/integration/test_release_pipeline.py signs and verifies a release.
    common = ("--bench", "bench-rn50", "--registry", registry, "--policy", str(waived), "--no-attest", "--ab-smoke")
    subprocess.run(["docker", "login", registry, "-u", USER, "--password-stdin"], input=PASSWORD, text=True,
                   check=True, capture_output=True, env=docker_config)
    monkeypatch.setenv("DOCKER_CONFIG", docker_config["DOCKER_CONFIG"])  # the login, for served_digest's client
    refs = {f: f"{registry}/{NAME}:{release_id}-{f}" for f in ("cpu", "gpu-cu118")}
    state_path = scratch / "build" / "release" / release_id / "state.json"
    reference = previous_release(scratch, built.image, registry)  # 26.11's cpu image, pushed by digest
    # cpu's validation and benchmark: passed, under the keys this release computes (the A/B's reference among them);
    # cpu-arm64's gates (its platform of the cpu index) too, under the scan policy of this run
    seed_passed(scratch, release_id, (validate_stage.plan, bench_stage.plan), registry=registry,
                benchmarks=("bench-rn50",), ab_smoke=True, policy=waived)
    # gpu-cu118's scan: passed (its image's scan is test_scan_integrity.py's clean gpu-cu118 test; a release's scan
    # stage runs for real in the cpu release test): its validation and benchmark run here, for real
    seed_passed(scratch, release_id, (scan_stage.plan,), flavor="gpu-cu118", registry=registry,
                benchmarks=("bench-rn50",), ab_smoke=True, policy=waived)
    # 1. Without a person's word, gpu-cu118's NOT PROVEN gates block the whole release: cpu passes every gate
    #    (its A/B may be NOT PROVEN: two images of the same content on a busy host) and is not pushed either.
    #    cpu's seeded validation and benchmark are not run again.
    first_day = datetime.now(UTC).date()  # the scan's key holds the day: a run past midnight scans again
    blocked = release(scratch, docker_config, release_id, "--flavor", "cpu gpu-cu118", *common)
    out = blocked.stdout
    assert blocked.returncode == 3, out[-3000:] + blocked.stderr  # held back by missing evidence alone: NOT PROVEN
    assert out.count("--> validate: unchanged since") == out.count("--> bench: unchanged since") == 2, out  # +arm64
    last = blocked.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: release {release_id} blocked by: ") and "gpu-cu118: validate gate" in last
    skipped = next(line for line in out.splitlines() if line.startswith("==> push skipped: "))
    assert "gpu-cu118: validate gate NOT PROVEN" in skipped and "gpu-cu118: bench gate NOT PROVEN" in skipped
    assert "--accept-unproven REASON" in skipped, skipped
    assert "    cpu: built and gated, not pushed" in out and "    gpu-cu118: built and gated, not pushed" in out
    state = json.loads(state_path.read_text())
    assert all("push" not in state[f] for f in refs), state
    gates = ("validate", "bench", "scan", "month-over-month")
    assert {s: state["cpu"][s]["status"] for s in gates} == dict.fromkeys(gates, "passed"), state["cpu"]
    assert state["cpu"]["month-over-month"]["detail"].startswith(f"against {PREVIOUS}: ")
    assert all(f"cpu: {s} gate" not in skipped for s in gates), skipped
    ab_entry = state["cpu"]["ab"]
    assert ab_entry["status"] in ("passed", "not proven"), ab_entry  # 3 rounds cannot FAIL (the U test needs 4)
    assert ("cpu: ab gate NOT PROVEN" in skipped) == (ab_entry["status"] == "not proven"), skipped
    assert state["gpu-cu118"]["ab"] == {**state["gpu-cu118"]["ab"], "status": "not run", "detail": (
        f"A/B NOT RUN: release {PREVIOUS} has no flavor gpu-cu118: {release_id} is its first release; the absolute "
        "gates decide alone")}
    summary = check_ab_report(scratch / "build" / "release" / release_id / "cpu", ab_entry, reference,
                              state["cpu"]["candidate"]["digest"])
    assert state["gpu-cu118"]["validate"]["status"] == state["gpu-cu118"]["bench"]["status"] == "not proven"
    assert "no GPU" in state["gpu-cu118"]["bench"]["detail"], state["gpu-cu118"]["bench"]
    assert served_digest(refs["cpu"]) is None and served_digest(refs["gpu-cu118"]) is None  # neither pushed

    # 2. With the reason, every flavor the host can build: gpu's lock is pending here (not built, with why);
    #    the passed stages are not run again; both images pushed, each digest read back with the login.
    done = release(scratch, docker_config, release_id, "--flavor", "all", "--accept-unproven", REASON, *common)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr
    assert out.count("--> validate: unchanged since") == 2, out
    scans_kept = out.count("--> scan: unchanged since")  # cpu, cpu-arm64, gpu-cu118, each scanned in step 1
    if datetime.now(UTC).date() == first_day:
        assert scans_kept == 3, out
    else:  # midnight passed since step 1: a scan keyed by the day before ran again (and passed: the push went on)
        assert scans_kept + out.count("--> scan\n") == 3, out
    # gpu-cu118's NOT PROVEN gates have the same inputs (image, no GPU here): taken as they are, not run again.
    assert out.count("--> validate: NOT PROVEN with the same inputs on ") == 1, out
    assert out.count("--> bench: NOT PROVEN with the same inputs on ") == 1, out
    assert ("--> ab: unchanged since" in out) == (ab_entry["status"] == "passed"), out  # else accepted as it was
    state = json.loads(state_path.read_text())
    assert state["gpu"]["build"]["status"] == "failed" and "lock" in state["gpu"]["build"]["detail"]
    assert f"    gpu: not built: {state['gpu']['build']['detail']}" in out
    digests = {f: state[f]["push"]["digest"] for f in refs}
    assert digests["cpu"] != digests["gpu-cu118"]
    assert served_digest(refs["gpu-cu118"]) == digests["gpu-cu118"]
    # cpu is an image index: its tag serves the platforms' digests the gates ran, as its push entry keeps them
    assert served_platforms(refs["cpu"]) == state["cpu"]["push"]["platform_digests"] == \
        state["cpu"]["candidate"]["platform_digests"]
    for flavor in refs:
        assert digests[flavor].startswith("sha256:"), flavor
        assert f"    {flavor}: pushed {digests[flavor]}" in out

    # 3. One notes file: each flavor with its own gate rows and its own digest; gpu-cu118's unproven rows say so,
    #    with the reason; gpu not built, with why.
    notes = (scratch / "release-notes" / f"{release_id}.md").read_text()
    cpu, cu118, gpu = gate_rows(notes, "cpu"), gate_rows(notes, "gpu-cu118"), gate_rows(notes, "gpu")
    for rows in (cpu, cu118):
        assert set(rows) == {"build", "validate", "ab", "bench", "scan", "month-over-month", "attest"}, rows
        assert rows.pop("attest")[0] == "unsigned"  # --no-attest: the notes say the evidence is not signed
    assert cpu.pop("ab")[0] == ("passed" if ab_entry["status"] == "passed" else "NOT PROVEN, pushed on a person's word")
    assert all(result == "passed" for result, _ in cpu.values()), cpu
    assert cu118.pop("ab") == ["not run", state["gpu-cu118"]["ab"]["detail"]]
    for stage in ("validate", "bench"):
        result, detail = cu118[stage]
        assert result == "NOT PROVEN, pushed on a person's word" and detail.endswith(f"accepted by a person: {REASON}")
    assert cu118["bench"][1].startswith("bench-rn50: NOT PROVEN")
    assert cu118["build"][0] == "passed" and NAME in cu118["build"][1] and NAME in cpu["build"][1]
    assert gpu["build"][0] == "not built" and gpu["build"][1] == state["gpu"]["build"]["detail"]
    table = notes.split("## Image digests", 1)[1]
    assert f"| `{NAME}:{release_id}-gpu-cu118` | {digests['gpu-cu118']} |" in table
    assert f"| `{NAME}:{release_id}-cpu` | {digests['cpu']} (image index) |" in table  # and each platform's digest
    for platform, digest in state["cpu"]["push"]["platform_digests"].items():
        assert f"| `{NAME}:{release_id}-cpu` {platform} | {digest} |" in table, table
    assert f"| `{NAME}:{release_id}-gpu` | not built: " in table
    # This month vs last month: the cpu flavor's A/B, ratio and interval per metric as ab.json has them; gpu-cu118's
    # first release says why it has none.
    section = notes.split("## This month vs last month: A/B (cpu)", 1)[1].split("\n## ", 1)[0]
    assert section.lstrip().startswith("### this host") and f"last month: {reference} ({PREVIOUS})" in section
    assert f"- verdict: **{summary['verdict']}** (3 rounds interleaved on one node" in section
    for m in summary["metrics"]:
        assert f"| {m['ratio']:.3f} | [{m['low']:.3f}, {m['high']:.3f}] | {m['status']} |" in section, (m, section)
    assert (f"## This month vs last month: A/B (gpu-cu118)\n\nA/B NOT RUN: release {PREVIOUS} has no flavor "
            f"gpu-cu118: {release_id} is its first release: the absolute gates decided alone.") in notes


def check_ab_report(flavor_folder: Path, entry: dict, reference: str, candidate: str) -> dict:
    """The cpu flavor's A/B as the `ab` stage left it (found by its stored key): both digests, the node's facts, every
    round's figures of both images, each metric's ratio and interval; ab.md and rounds.svg beside it."""
    runs = sorted((flavor_folder / "ab" / entry["key"]).glob("ab-*"))
    assert len(runs) == 1, runs
    summary = json.loads((runs[0] / "ab.json").read_text())
    assert summary["verdict"] == {"passed": "PASS", "not proven": "NOT PROVEN"}[entry["status"]]
    assert entry["detail"].startswith(f"A/B {summary['verdict']} against {reference} ({PREVIOUS}) (3 rounds)")
    assert summary["candidate"]["digest"] == candidate and summary["reference"]["digest"] == reference.split("@")[1]
    assert summary["candidate"]["id"] != summary["reference"]["id"]  # two images, of the same content
    node = summary["node"]
    assert node["hostname"] == socket.gethostname() and node["cpu_model"] and node["cpus"].isdigit(), node
    assert (summary["rounds"], summary["warmup_rounds"]) == (3, 1) and summary["missing"] == []
    ran = {(s["round"], s["image"], s["step"]) for s in summary["steps"] if s["exit"] in (0, 1, 3)}
    assert ran == {(r, side, "bench-rn50") for r in range(4) for side in ("candidate", "reference")}, summary["steps"]
    gated = [m for m in summary["metrics"] if m["status"] != "INFO"]
    assert "bench-rn50:train.fp32.ips" in {m["key"] for m in gated}, summary["metrics"]
    for m in gated:
        figures = {(s["round"], s["image"]) for s in summary["samples"] if s["metric"] == m["key"]}
        assert figures == {(r, side) for r in range(4) for side in ("candidate", "reference")}, m["key"]
        assert m["rounds"] == 3 and m["low"] <= m["ratio"] <= m["high"]
    text = (runs[0] / "ab.md").read_text()
    assert summary["candidate"]["digest"] in text and summary["reference"]["digest"] in text and "- node: " in text
    assert (runs[0] / "rounds.svg").read_text().startswith("<svg")
    return summary
