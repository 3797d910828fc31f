"""The monthly release pipeline end to end: interrupted and resumed, pushed, and blocked by a failing gate."""

import json
import os
import signal
import subprocess
from pathlib import Path

from ngc_paddle.release.pipeline import registry_digest
from tests.integration.conftest import CLI, REPO, run_cli

REGISTRY = "127.0.0.1:5000"


def start(root: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "--root", str(root), "release", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def test_release_resumes_pushes_and_a_failing_gate_keeps_the_previous_release(scratch_repo: Path) -> None:
    subprocess.run(["bash", str(REPO / "toolchain" / "ensure-registry.sh")], check=True)
    release = sorted(p.stem for p in (scratch_repo / "releases").glob("*.yaml"))[-1]
    # No vulnerability feed reaches the test host: without a waiver the scan is NOT RUN and nothing is pushed.
    # The waiver lives in the scratch copy only; the committed policy carries none.
    waived = scratch_repo / "security" / "waived.yaml"
    waived.write_text((scratch_repo / "security" / "policy.yaml").read_text()
                      + "vulnerability_waiver: {reason: no feed on the test host, expires: 2099-12-31}\n")
    args = (release, "--bench", "bench-rn50", "--registry", REGISTRY, "--policy", str(waived))

    # 1. Interrupt the pipeline once the benchmark stage has started.
    proc = start(scratch_repo, *args)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("--> bench"):
            os.killpg(proc.pid, signal.SIGINT)
            break
    proc.wait(timeout=300)
    assert proc.returncode != 0, "".join(seen[-20:])
    state = json.loads((scratch_repo / "build/release" / release / "state.json").read_text())
    assert state["cpu"]["validate"]["status"] == "passed" and "bench" not in state["cpu"]

    # 2. Rerun: finished stages are skipped, the rest runs, the image is pushed and the digest checked.
    done = run_cli("release", *args, root=scratch_repo, timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "--> validate: unchanged since" in done.stdout and "--> bench\n" in done.stdout
    state = json.loads((scratch_repo / "build/release" / release / "state.json").read_text())
    pushed = state["cpu"]["push"]["digest"]
    assert registry_digest(REGISTRY, "ngc-paddle-itest", f"{release}-cpu") == pushed
    notes = (scratch_repo / "release-notes" / f"{release}.md").read_text()
    cpu_table = notes.split("### cpu:", 1)[1].split("###", 1)[0]
    assert "MISMATCH" not in cpu_table and "not built" not in cpu_table
    for line in cpu_table.splitlines()[4:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5:
            assert cells[3] == cells[2] or cells[3].startswith(cells[2] + "."), line  # image agrees with manifest
    assert pushed in notes and "| cpu | scan | passed | vulnerabilities not scanned: no feed on the test host, " \
                               "waiver expires 2099-12-31" in notes

    # 3. A changed image that fails a gate is not pushed; the registry keeps the previous release.
    banner = scratch_repo / "image" / "lib" / "banner.py"
    banner.write_text(banner.read_text() + "\n# changed for the next build\n")
    policy = scratch_repo / "security" / "strict.yaml"
    kinds = "block_on: [secret, private-key, credential, setuid"
    policy.write_text(waived.read_text().replace(f"{kinds}]", f"{kinds}, user]"))
    blocked = run_cli("release", *args[:-2], "--policy", str(policy), root=scratch_repo, timeout=3600)
    assert blocked.returncode == 1, blocked.stdout[-2000:]
    assert "push skipped: cpu: scan gate" in blocked.stdout and "runs-as-root" in blocked.stdout
    assert blocked.stderr.startswith("error: release") and "keeps the previous release" in blocked.stderr
    assert registry_digest(REGISTRY, "ngc-paddle-itest", f"{release}-cpu") == pushed
