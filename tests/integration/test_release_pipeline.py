"""The monthly release pipeline end to end: interrupted and resumed, refused by a registry that wants a login,
pushed over TLS with one, and blocked by a failing gate."""

import io
import json
import os
import signal
import subprocess
import tarfile
from pathlib import Path

import pytest

from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.release import pipeline as release_pipeline
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.registry import LoginRequired, served_digest, served_platforms
from ngc_paddle.release.stages import Built, release_folder
from ngc_paddle.release.stages import bench as bench_stage
from ngc_paddle.release.stages import push as push_stage
from ngc_paddle.release.stages import scan as scan_stage
from ngc_paddle.release.stages import validate as validate_stage
from ngc_paddle.release.state_file import State
from tests.integration.conftest import CLI, INTERRUPTIBLE, KEY_PASSWORD, REPO, key_pair, scratch

# A registry of its own (TLS with a self-signed CA trusted through /etc/docker/certs.d, htpasswd login), so the
# push goes through the docker client's credentials and TLS as against any real registry.
REGISTRY, USER, PASSWORD = "127.0.0.1:5443", "ngc-release-test", "not-a-secret-test-only"
IMAGE = os.environ.get("NGC_PADDLE_ITEST_IMAGE", "ngc-paddle-itest")  # a name of one's own when tests run side by side


@pytest.fixture
def scratch_repo(tmp_path: Path) -> Path:
    return scratch(tmp_path / "repo", IMAGE)


@pytest.fixture
def docker_config(tmp_path: Path) -> dict[str, str]:
    """An empty docker config (no login yet) that still finds the CLI plugins (buildx) of the default one."""
    config = tmp_path / "docker-config"
    config.mkdir()
    plugins = Path(os.environ.get("DOCKER_CONFIG", Path.home() / ".docker")) / "cli-plugins"
    if plugins.is_dir():
        (config / "cli-plugins").symlink_to(plugins.resolve())
    return {**os.environ, "DOCKER_CONFIG": str(config)}


def tls_registry() -> None:
    subprocess.run(["bash", str(REPO / "toolchain" / "ensure-registry.sh")], check=True, env={
        **os.environ, "REGISTRY_PORT": REGISTRY.split(":")[1], "REGISTRY_TLS": "1", "REGISTRY_USER": USER,
        "REGISTRY_PASSWORD": PASSWORD})


def login(env: dict[str, str]) -> None:
    subprocess.run(["docker", "login", REGISTRY, "-u", USER, "--password-stdin"], input=PASSWORD, text=True,
                   check=True, capture_output=True, env=env)


def test_the_push_stage_over_tls_needs_a_login_and_checks_the_digest(tmp_path: Path, docker_config: dict,
                                                                   monkeypatch) -> None:
    """The push stage alone, on a one-file image (seconds): the full pipeline pushes in the test below."""
    tls_registry()
    image = f"{IMAGE}-push:{tmp_path.name.lower()}"
    payload, tar = io.BytesIO(), io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as archive:
        member = tarfile.TarInfo("hello")
        payload.write(f"{tmp_path}\n".encode())  # new content each run: a new digest
        member.size = payload.tell()
        archive.addfile(member, io.BytesIO(payload.getvalue()))
    subprocess.run(["docker", "import", "-", image], input=tar.getvalue(), check=True, capture_output=True)
    monkeypatch.setenv("DOCKER_CONFIG", docker_config["DOCKER_CONFIG"])
    state = State(tmp_path / "state.json")
    try:
        with pytest.raises(LoginRequired) as refused:
            push_stage.push(state, "cpu", image, REGISTRY, say=lambda _l: None)
        assert refused.value.exit_code == 2 and "\n" not in str(refused.value)
        assert f"the registry {REGISTRY} refuses it" in str(refused.value)
        assert str(refused.value).endswith(f"fix: docker login {REGISTRY}")
        assert state.data["cpu"]["push"]["status"] == "failed" and "digest" not in state.data["cpu"]["push"]

        login(docker_config)
        pushed = push_stage.push(state, "cpu", image, REGISTRY, say=lambda _l: None)
        assert pushed.startswith("sha256:") and state.data["cpu"]["push"]["digest"] == pushed
        assert served_digest(f"{REGISTRY}/{image}") == pushed  # read back over TLS with the login
        lines: list[str] = []
        assert push_stage.push(state, "cpu", image, REGISTRY, say=lines.append) == pushed
        assert "already there" in lines[0]  # unchanged image, same digest served: not pushed again
    finally:
        subprocess.run(["docker", "image", "rm", image, f"{REGISTRY}/{image}"], capture_output=True)


def seed_passed(root: Path, release: str, plans, flavor: str = "cpu", **options) -> None:
    """Build FLAVOR's image as the release's build stage will find it, and record the stages `plans` make as passed
    in the release's state file, under the keys the pipeline computes for that image: a rerun skips them. A seeded
    scan leaves the SBOM and report a scan writes (month-over-month and the notes read them)."""
    built_now = subprocess.run([*CLI, "--root", str(root), "build", "--flavor", flavor], capture_output=True,
                               text=True, cwd=REPO, timeout=1800)
    assert built_now.returncode == 0, built_now.stdout[-2000:] + built_now.stderr
    resolved = ResolvedRelease.load(root, release).flavor(flavor)
    image = resolved.image
    opts = ReleaseOptions(release, [flavor], root=root, **options)
    built = Built(resolved, engine.image_id(image) or "", engine.image_size(image),
                  release_folder(root, release) / flavor, opts, engine.host_has_nvidia_gpus())
    state = State(release_folder(root, release) / "state.json")
    for plan in plans:
        step = plan(built)
        state.record(flavor, step.name, step.key, "passed", f"seeded by the test for {image}")
        if step.name == scan_stage.NAME:
            seed_scan_outputs(built.folder)
    seed_platforms(state, built)


def seed_scan_outputs(flavor_folder: Path) -> None:
    """The SBOM and report a scan stage writes, empty: where the test seeds the scan, nothing it asserts reads them."""
    sbom = scan_stage.sbom(flavor_folder)
    sbom.parent.mkdir(parents=True, exist_ok=True)
    sbom.write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.5", "components": []}))
    (sbom.parent / "scan.json").write_text(json.dumps({"blocked": False, "seeded": True}))


def seed_platforms(state: State, built: Built) -> None:
    """Each further platform of the flavor's index (cpu-arm64) as the pipeline gates it (PLATFORM_GATES: validation,
    benchmarks and scan under qemu, many minutes each here) recorded as passed under its keys, with the SBOM and scan
    report its scan writes (the attestations sign them): these tests assert on the amd64 gates and the push."""
    for platform in built.spec.platforms[1:]:
        resolved = built.release_run.flavor(built.flavor, platform)
        other = Built(resolved, engine.image_id(resolved.image) or "", 0, built.folder.parent / resolved.build_name,
                      built.opts, built.gpu_host)
        for plan in release_pipeline.PLATFORM_GATES:
            step = plan(other)
            state.record(other.entry, step.name, step.key, "passed", f"seeded by the test for {resolved.image}")
        seed_scan_outputs(other.folder)


def cli(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "--root", str(root), "release", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=3600)


def start(root: Path, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "--root", str(root), "release", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **INTERRUPTIBLE, env=env)


@pytest.mark.alone
def test_release_resumes_pushes_and_a_failing_gate_keeps_the_previous_release(scratch_repo: Path, docker_config: dict,
                                                                             monkeypatch) -> None:
    tls_registry()
    release = sorted(p.stem for p in (scratch_repo / "releases").glob("*.yaml"))[-1]
    key, public_key = key_pair(scratch_repo.parent / "release-owner")  # signs the attestations (stages/attest.py)
    docker_config = {**docker_config, "COSIGN_KEY": str(key), "COSIGN_PASSWORD": KEY_PASSWORD}
    # No vulnerability feed reaches the test host: without a waiver the scan is NOT RUN and nothing is pushed.
    # The waiver lives in the scratch copy only; the committed policy carries none.
    waived = scratch_repo / "security" / "waived.yaml"
    waived.write_text((scratch_repo / "security" / "policy.yaml").read_text()
                      + "vulnerability_waiver: {reason: no feed on the test host, expires: 2099-12-31}\n")
    args = (release, "--bench", "bench-rn50", "--registry", REGISTRY, "--policy", str(waived))
    state_file = scratch_repo / "build/release" / release / "state.json"

    # 1. Without a login the candidate push (before any gate: the gates run the candidate by digest) is refused in
    #    one line naming the registry and the fix; nothing is gated, nothing recorded as pushed.
    refused = cli(scratch_repo, docker_config, *args)
    assert refused.returncode == 2, refused.stdout[-3000:] + refused.stderr
    assert refused.stderr.count("\n") == 1 and f"fix: docker login {REGISTRY}" in refused.stderr, refused.stderr
    state = json.loads(state_file.read_text())
    assert state["cpu"]["candidate"]["status"] == "failed" and "validate" not in state["cpu"]
    assert "push" not in state["cpu"] and "--> validate" not in refused.stdout

    # 2. With a login (the docker config's credentials), over TLS: the candidate is pushed; interrupt the pipeline
    #    once the benchmark stage has started. The validation is seeded as passed (the suite's own run of this image
    #    is test_validation.py's; gpu-cu118's validate stage runs for real in test_release_two_flavors.py): the
    #    benchmark, which an efficiency gate decides, is what this test runs alone for.
    seed_passed(scratch_repo, release, (validate_stage.plan,), registry=REGISTRY, benchmarks=("bench-rn50",),
                policy=waived)
    login(docker_config)
    proc = start(scratch_repo, docker_config, *args)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("--> bench"):
            os.killpg(proc.pid, signal.SIGINT)
            break
    proc.wait(timeout=300)
    assert proc.returncode != 0, "".join(seen[-20:])
    assert "--> validate: unchanged since" in "".join(seen), "".join(seen[-20:])  # the seeded stage is not run
    state = json.loads(state_file.read_text())
    assert state["cpu"]["validate"]["status"] == "passed" and "bench" not in state["cpu"]
    candidate = state["cpu"]["candidate"]["digest"]
    assert f"pushed {REGISTRY}/{IMAGE}:{release}-cpu-candidate@{candidate}" in "".join(seen)

    # 3. Rerun: finished stages are skipped, the rest runs, and the release tag moves to the digest the gates ran
    #    (read back through the docker client: the one docker push reported).
    done = cli(scratch_repo, docker_config, *args)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "--> validate: unchanged since" in done.stdout and "--> bench\n" in done.stdout
    assert f"--> push {REGISTRY}/{IMAGE}:{release}-cpu-candidate: already there" in done.stdout
    state = json.loads(state_file.read_text())
    pushed = state["cpu"]["push"]["digest"]
    assert pushed == candidate  # nothing unproven carries the release tag: it is the gated digest
    monkeypatch.setenv("DOCKER_CONFIG", docker_config["DOCKER_CONFIG"])  # the login, for served_digest's client
    # cpu is an image index (linux/amd64, linux/arm64): the tag serves the platforms' digests the gates ran
    platforms = state["cpu"]["push"]["platform_digests"]
    assert served_platforms(f"{REGISTRY}/{IMAGE}:{release}-cpu") == platforms == \
        served_platforms(f"{REGISTRY}/{IMAGE}@{pushed}") == state["cpu"]["candidate"]["platform_digests"]
    # Its evidence is signed and attached to each platform's digest and the index: a user verifies it with the
    # owner's public key.
    assert "    attest: passed: 5 signed and verified on linux/amd64" in done.stdout, done.stdout[-3000:]
    verified = subprocess.run([*CLI, "verify", f"{REGISTRY}/{IMAGE}@{pushed}", "--key", str(public_key)],
                              capture_output=True, text=True, cwd=REPO, env=docker_config, timeout=600)
    assert verified.returncode == 0 and verified.stdout.count("signer ok, subject digest ok") == 11, verified.stdout
    notes = (scratch_repo / "release-notes" / f"{release}.md").read_text()
    cpu_table = notes.split("### cpu:", 1)[1].split("###", 1)[0]
    assert "MISMATCH" not in cpu_table and "not built" not in cpu_table
    rows = cpu_table.split("| --- |", 1)[1].splitlines()[1:]  # the table's rows, after its header and rule
    assert len(rows) > 10, cpu_table
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5:
            # the (amd64) image agrees with the manifest's version for its platform (the cell adds another
            # platform's where it differs: "3.3.1 (linux/arm64: 3.2.2)"; a Debian package adds its revision)
            version = cells[2].split(" (", 1)[0]
            assert cells[3] == version or cells[3].startswith((version + ".", version + "-")), line
    assert pushed in notes and "| cpu | scan | passed | vulnerabilities not scanned: no feed on the test host, " \
                               "waiver expires 2099-12-31" in notes
    assert "## Benchmarks (cpu)" in notes and "bench-rn50" in notes.split("## Benchmarks (cpu)", 1)[1]
    known = (scratch_repo / "release-notes" / "known-issues" / f"{release}.md").read_text().splitlines()[0]
    assert known in notes

    # 4. A changed image that fails a gate is not pushed; the registry keeps the previous release. The changed image's
    #    validation and benchmark are seeded as passed (step 3 proved them on the same content): the rerun runs only
    #    the gates this step asserts on.
    banner = scratch_repo / "image" / "lib" / "banner.py"
    banner.write_text(banner.read_text() + "\n# changed for the next build\n")
    policy = scratch_repo / "security" / "strict.yaml"
    # The image runs as a non-root user now; what it does ship and the policy allows is Debian's GnuTLS
    # self-test keys (a known key fixture, informational): a policy that blocks on those blocks the release.
    policy.write_text(waived.read_text().replace("block_on: [", "block_on: [key-fixture, "))
    seed_passed(scratch_repo, release, (validate_stage.plan, bench_stage.plan), registry=REGISTRY,
                benchmarks=("bench-rn50",), policy=policy)
    blocked = cli(scratch_repo, docker_config, *args[:-2], "--policy", str(policy))
    assert blocked.returncode == 1, blocked.stdout[-2000:]
    assert "--> validate: unchanged since" in blocked.stdout and "--> bench: unchanged since" in blocked.stdout
    assert "push skipped: cpu: scan gate" in blocked.stdout and "key-fixture" in blocked.stdout
    assert blocked.stderr.startswith("error: release") and "keeps the previous release" in blocked.stderr
    notes = (scratch_repo / "release-notes" / f"{release}.md").read_text()
    assert f"not pushed (the registry keeps an earlier image: {pushed})" in notes
    assert served_platforms(f"{REGISTRY}/{IMAGE}:{release}-cpu") == platforms
