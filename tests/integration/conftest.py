"""Integration fixtures: a running engine, the default flavor built once, and scratch copies of the repo.

These tests build and run real images. `make test` (and .ci/run) start the engine first; a
missing engine is a failure with the fix, not a skip.
"""

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from ngc_paddle.image_build.scratch import scratch_copy
from ngc_paddle.manifest import load_manifest
from ngc_paddle.manifest.loader import latest_release
from ngc_paddle.platforms import DEFAULT_PLATFORM
from perf.suite_times import TIMES

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "ngc_paddle.cli"]
# A scratch copy's build of the default platform alone: the tests of build mechanics (caches, locks, layer checks,
# failures) that the other platforms do not change; `built` builds every platform, as `make image` does.
AMD64 = ("--platform", DEFAULT_PLATFORM)
SHARED_CACHES = ("cache",)  # build/cache: the freshness check's verified Debian indexes, shared with scratch copies


@dataclass
class Built:
    image: str
    release: str
    flavor: str
    manifest: object
    report: dict
    output: str


def run_cli(*args: str, root: Path = REPO, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "--root", str(root), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)


def docker(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=timeout)


# Tests whose verdicts need a quiet CPU carry `@pytest.mark.alone`: a benchmark's CPU efficiency gate decides there
# (a PASS or a FAIL asserted, a planted slowdown caught), and another test's load starting or stopping between a peak
# probe and the work reads as a regression, a miss or a work that outran its peak (NOT PROVEN). `make integration`
# runs them one at a time after the others, which run on xdist workers, each file's tests on one worker
# (`--dist loadfile`: its module fixtures are made once; no two files use one scratch image name).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files with the longest recorded times first (docs/test-times.json, per test of this run; a file not
    recorded yet first of all): a worker that takes the last file then does not run on alone for minutes."""
    try:
        recorded = json.loads(TIMES.read_text())["tests_s"]
    except (OSError, ValueError, KeyError):
        return
    per_file: dict[str, float] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        per_file[path] = per_file.get(path, 0.0) + recorded.get(item.nodeid, float("inf"))
    items.sort(key=lambda item: -per_file[item.nodeid.split("::", 1)[0]])  # stable: a file keeps its order


@contextlib.contextmanager
def one_worker_at_a_time(name: str) -> Iterator[None]:
    """A lock shared by the xdist workers of this machine: what it guards (a build, a suite run) runs once at a time;
    the next worker then finds the images built and the build answers from their labels."""
    folder = REPO / "build" / "test-locks"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A folder every xdist worker of this run sees (the parent of the workers' own temporary roots)."""
    root = tmp_path_factory.getbasetemp()
    return root if worker_id == "master" else root.parent


@pytest.fixture(scope="session", autouse=True)
def engine() -> None:
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        pytest.fail("no Docker engine answers; fix: run `make toolchain` (or `make test`, which starts it)")


@pytest.fixture(scope="session")
def built() -> Built:
    """The newest release's default flavor, built with `ngc-paddle build` as `make image` does."""
    release = latest_release(REPO / "releases")
    manifest = load_manifest(REPO / "releases" / f"{release}.yaml")
    with one_worker_at_a_time("build-default"):
        proc = run_cli("build")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    flavor = manifest.default_flavor
    report = json.loads((REPO / "build" / "reports" / f"{release}-{flavor}" / "build.json").read_text())
    return Built(f"{manifest.image}:{release}-{flavor}", release, flavor, manifest, report, proc.stdout)


@pytest.fixture(scope="session")
def built_cu118() -> str:
    """The GPU flavor that builds from PyPI alone (CUDA 11.8), built as `make image FLAVOR=gpu-cu118` does."""
    with one_worker_at_a_time("build-gpu-cu118"):
        proc = run_cli("build", "--flavor", "gpu-cu118", timeout=3600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    return next(line.split()[2].rstrip(",") for line in proc.stdout.splitlines()
                if line.startswith(("==> tagged", "==> unchanged")))


class Validated(NamedTuple):
    image: str
    proc: subprocess.CompletedProcess
    report: dict
    folder: Path


@pytest.fixture(scope="session")
def cu118_validated(built_cu118: str, shared_dir: Path) -> Validated:
    """gpu-cu118's whole validation suite from the host, run once for the whole run (xdist workers included): read by
    every test that only reads its report."""
    folder = shared_dir / "cu118-validation"
    with one_worker_at_a_time("validate-gpu-cu118"):
        ran = folder / "process.json"
        if not ran.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            proc = run_cli("validate", built_cu118, "--output", str(folder))
            ran.write_text(json.dumps({"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}))
        seen = json.loads(ran.read_text())
    proc = subprocess.CompletedProcess(["validate", built_cu118], seen["returncode"], seen["stdout"], seen["stderr"])
    assert (folder / "validation.json").is_file(), proc.stdout[-3000:] + proc.stderr
    return Validated(built_cu118, proc, json.loads((folder / "validation.json").read_text()), folder)


class BenchRun(NamedTuple):
    proc: subprocess.CompletedProcess
    result: dict
    work: Path  # /workspace of the run: its folder is work/out/rn50-*


@pytest.fixture(scope="session")
def rn50_default(built: Built, tmp_path_factory: pytest.TempPathFactory) -> BenchRun:
    """bench-rn50's default run in the built image (training, inference, the CPU gates), once for the session: read
    by every test that only reads its result (the benchmark's own test; the fleet's Slurm-vs-here comparison). Its
    users are `alone` tests, so it runs on a quiet CPU."""
    from tests.integration.test_bench_rn50 import bench

    work = tmp_path_factory.mktemp("rn50-default")
    proc, result = bench(built.image, work)
    assert result is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    return BenchRun(proc, result, work)


def _sigint_as_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# Start a command that a test interrupts (os.killpg(pid, SIGINT)): a session of its own, and SIGINT at its default
# disposition. A test run started in the background by a non-interactive shell inherits SIGINT ignored, and Python
# then installs no KeyboardInterrupt handler: the Ctrl-C a test sends would be lost.
INTERRUPTIBLE = {"start_new_session": True, "preexec_fn": _sigint_as_default}


EXIT_OF_VERDICT = {"PASS": 0, "FAIL": 1, "NOT PROVEN": 3, "SMOKE": 0}


def assert_cpu_floors_decide(result: dict, floors: int) -> list[dict]:
    """A default CPU run of a benchmark: where gates.yaml has floors for the run's CPU kind, those `floors` acceptance
    gates decide it (PASS or FAIL each, or NOT RUN over a rechecked peak); a kind without floors (CI lands on more than
    one kind) is NOT PROVEN, saying so and naming the kind, its efficiencies reported and no CPU gate applied.
    Returns the CPU gates that applied."""
    from benchmarks.harness import acceptance_gates

    table = acceptance_gates.load(REPO / "benchmarks" / "gates.yaml")
    kind = result["config"]["cpu_kind"]
    cpu = [g for g in result["gates"] if g["profile"] == "cpu" and g["status"] != "N/A"]  # this CPU kind's floors
    if acceptance_gates.unfloored_cpu(table, result["model"], "cpu", result["config"]) is None:
        assert len(cpu) == floors and all(g["acceptance"] for g in cpu), (kind, cpu)
        # A floor decides (PASS or FAIL), except a figure below it over a peak probed again after the work (the work
        # had outrun the probes beside it, seen on a quiet Xeon too): NOT RUN with that reason, and the run NOT PROVEN.
        undecided = [g for g in cpu if g["status"] == "NOT RUN"]
        assert all("probed again after the work" in g["reason"] for g in undecided), cpu
        assert all(g["status"] in ("PASS", "FAIL", "NOT RUN") for g in cpu), cpu
        decided = ("FAIL",) if any(g["status"] == "FAIL" for g in cpu) else ("NOT PROVEN",) if undecided else \
            ("PASS", "FAIL")  # FAIL: another gate of the run (the back ends' agreement) may fail it
        assert result["verdict"] in decided, (result["verdict"], result["verdict_reasons"], cpu)
    else:
        assert result["verdict"] == "NOT PROVEN" and cpu == [], (kind, cpu)
        assert any(f"no CPU efficiency floor for this CPU kind ({kind};" in why for why in result["verdict_reasons"])
    return cpu


def scratch(destination: Path, image: str) -> Path:
    """A scratch copy of the repository (images named `image`) that shares the checkout's download caches."""
    root = scratch_copy(REPO, destination, image)
    for name in SHARED_CACHES:
        (REPO / "build" / name).mkdir(parents=True, exist_ok=True)
        (root / "build").mkdir(exist_ok=True)
        (root / "build" / name).symlink_to(REPO / "build" / name)
    return root


@pytest.fixture
def scratch_repo(tmp_path: Path) -> Path:
    """A copy of the repository whose images are named ngc-paddle-itest, so tests can break it freely."""
    return scratch(tmp_path / "repo", "ngc-paddle-itest")


def _registry_pids(config: str) -> list[int]:
    """Pids of the registry processes serving CONFIG (the exact command line ensure-registry.sh starts)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")[:-1]
        except OSError:
            continue
        if proc.name.isdigit() and [a.decode() for a in argv[-2:]] == ["serve", config] and b"registry" in argv[0]:
            found.append(int(proc.name))
    return found


def _stop(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


@contextlib.contextmanager
def own_registry(port: int, storage: Path, **settings: str) -> Iterator[str]:
    """A registry on 127.0.0.1:PORT of a test's own (toolchain/ensure-registry.sh; REGISTRY_TLS, _USER, _PASSWORD
    as `settings`), its storage in `storage`; stopped and its storage removed afterwards."""
    config = f"/etc/ngc-paddle/registry-{port}/config.yml"
    _stop(_registry_pids(config))  # a leftover of an interrupted run: its storage is gone
    subprocess.run(["bash", str(REPO / "toolchain" / "ensure-registry.sh")], check=True, env={
        **os.environ, "REGISTRY_PORT": str(port), "REGISTRY_STORAGE": str(storage), **settings})
    try:
        yield f"127.0.0.1:{port}"
    finally:
        _stop(_registry_pids(config))
        shutil.rmtree(storage, ignore_errors=True)


KEY_PASSWORD = "test-only-key-password"  # of the cosign key pairs tests make; nothing real is signed with them


def key_pair(folder: Path) -> tuple[Path, Path]:
    """A cosign key pair of a test's own (cosign generate-key-pair, as a release owner makes one): key, public key."""
    folder.mkdir(parents=True)
    subprocess.run(["cosign", "generate-key-pair"], cwd=folder, check=True, capture_output=True,
                   env={"PATH": os.environ["PATH"], "COSIGN_PASSWORD": KEY_PASSWORD})
    return folder / "cosign.key", folder / "cosign.pub"


PREVIOUS = "26.11"  # a release before 26.12 that shipped a cpu flavor, made by previous_release()


def previous_release(root: Path, image: str, registry: str) -> str:
    """Give the scratch copy `root` a release before 26.12 that shipped a cpu flavor, as a real one leaves it on the
    release host: releases/26.11.yaml (26.12's manifest with the cpu flavor alone), its build and push recorded in
    build/release/26.11/state.json by the release's own writers (the pushed digest is what the A/B's default
    reference reads) and its SBOM (a minimal one: month-over-month then lists every package as added). Its image is
    `image` (the built cpu image) labelled as release 26.11 (a new config, no new layer), pushed to `registry`.
    Returns the reference the release will compare with, REGISTRY/NAME@DIGEST."""
    from ngc_paddle import engine
    from ngc_paddle.release.stages import push, release_folder, scan
    from ngc_paddle.release.state_file import State

    manifest = yaml.safe_load((root / "releases" / "26.12.yaml").read_text())
    manifest.update(release=PREVIOUS, default_flavor="cpu", flavors={"cpu": manifest["flavors"]["cpu"]})
    (root / "releases" / f"{PREVIOUS}.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    name = manifest["image"]
    local = f"{name}-previous:{PREVIOUS}-cpu"
    # no attestations: BuildKit's would make the image an index, whose digest is not the image manifest's one
    subprocess.run(["docker", "build", "--provenance=false", "--sbom=false", "-q", "-t", local, "-"], check=True,
                   capture_output=True, timeout=600,
                   input=f"FROM {image}\nLABEL ngc-paddle.release={PREVIOUS}\n", text=True)
    folder = release_folder(root, PREVIOUS)
    state = State(folder / "state.json")
    state.record("cpu", "build", engine.image_id(local) or "", "passed", f"{local} (test fixture)",
                 image=local, size=engine.image_size(local))
    digest = push.push_tag(state, "cpu", push.NAME, local, f"{registry}/{name}:{PREVIOUS}-cpu", lambda _l: None)
    sbom = scan.sbom(folder / "cpu")
    sbom.parent.mkdir(parents=True)
    sbom.write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.5", "components": []}))
    return f"{registry}/{name}@{digest}"


def remove_previous(root: Path, registry: str) -> None:
    """The local tags previous_release() made (the image's layers are the built image's: nothing else goes)."""
    name = yaml.safe_load((root / "releases" / "26.12.yaml").read_text())["image"]
    subprocess.run(["docker", "image", "rm", f"{name}-previous:{PREVIOUS}-cpu", f"{registry}/{name}:{PREVIOUS}-cpu"],
                   capture_output=True)
