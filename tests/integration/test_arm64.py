"""The cpu flavor built for linux/arm64 on this x86-64 host (opt-in: `make image PLATFORMS=linux/arm64`), validated
and benchmarked under qemu: everything functional passes, and nothing measured under emulation is a PASS.

Costly (an emulated os layer, suite and validation): its own file, so CI can run it or leave it out.
"""

import json
import os
from pathlib import Path

import pytest

from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine
from perf import bench_stop
from tests.integration.conftest import docker, run_cli, scratch

# Over 30 minutes on a 2-core machine (the os layer and the suite run under qemu): `make test-arm64`, not `make test`.
pytestmark = pytest.mark.emulated

IMAGE = "ngc-paddle-itest-arm64"
PLATFORM = "linux/arm64"
AS_ME = ("--user", f"{os.getuid()}:{os.getgid()}")
# What must run and pass under emulation: versions, linking, imports, training steps, export, the DALI CPU pipeline.
# (link.paddle is waived on arm64 by the manifest, with why: Paddle's aarch64 wheel ships files no arm64 loader opens)
MUST_PASS = ("version.paddle", "version.python", "version.paddle2onnx", "link.dali", "link.onnxruntime",
             "link.paddle2onnx", "pyenv.pip-check", "pyenv.import.paddle", "func.paddle-run-check",
             "func.train-loss-decreases", "func.inference-onnx-agree", "func.dali-cpu-pipeline")
# The files of Paddle's aarch64 wheel that the manifest waives (releases/26.12.yaml, paddle's `unresolved:`)
WAIVED = ("libblas.so.3", "libgfortran.so.3", "liblapack.so.3", "libquadmath.so.0", "libopenblas.so.0")


@pytest.fixture(scope="module")
def arm64(tmp_path_factory: pytest.TempPathFactory):
    """The arm64 image of a scratch copy, built with `ngc-paddle build --platform linux/arm64`; removed afterwards."""
    root = scratch(tmp_path_factory.mktemp("arm64") / "repo", IMAGE)
    proc = run_cli("build", "--platform", PLATFORM, root=root, timeout=3600)
    tags = [f"{IMAGE}:26.12-cpu-arm64", *(f"{IMAGE}-layers:26.12-cpu-arm64-{layer}" for layer in ("os", "dali",
                                                                                                  "paddle"))]
    yield proc, tags[0]
    docker("image", "rm", *tags, check=False)


def test_the_build_tags_an_arm64_image_of_its_own(arm64) -> None:
    proc, image = arm64
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-2000:])
    assert f"==> tagged {image} " in proc.stdout
    assert "--> [3/4 linux/arm64] paddle: building" in proc.stdout  # progress names the platform
    for layer in ("dali", "paddle"):  # a pip layer that ran (not taken from the cache) installed natively
        if f"{layer}: built in" in proc.stdout:
            assert f"[{layer}] for manylinux_2_36_aarch64:" in proc.stdout, proc.stdout[-3000:]
    config = json.loads(docker("image", "inspect", image).stdout)[0]
    assert (config["Os"], config["Architecture"]) == ("linux", "arm64")
    assert docker("image", "inspect", f"{IMAGE}:26.12-cpu", check=False).returncode != 0  # no amd64 tag taken


def test_validate_under_emulation_passes_everything_but_proves_no_speed(arm64, tmp_path: Path) -> None:
    _, image = arm64
    proc = docker("run", "--rm", "--platform", PLATFORM, "--network", "none", *AS_ME, "-v", f"{tmp_path}:/report",
                  image, "validate", "--output", "/report", check=False, timeout=3000)
    report = json.loads((tmp_path / "validation.json").read_text())
    assert proc.returncode == 3 and report["verdict"] == "NOT PROVEN", (proc.stdout[-3000:], proc.stderr[-1500:])
    assert report["emulated"].startswith("emulated: aarch64 programs run under qemu-user on a x86_64 CPU")
    waiver, emulated = report["verdict_reasons"]  # the manifest's waiver on this platform, and the emulation
    assert emulated == f"{report['emulated']} (every functional check ran; performance is not proven)"
    assert waiver.startswith("1 check(s) waived by the manifest (link.paddle): ")
    assert all(f"{name} needs " in waiver for name in WAIVED) and "(it is x86-64 code)" in waiver, waiver
    statuses = {c["id"]: c for c in report["checks"]}
    assert not [c for c in report["checks"] if c["status"] in ("failed", "error")]
    assert all(statuses[check]["status"] == "passed" for check in MUST_PASS), {c: statuses.get(c) for c in MUST_PASS}
    assert statuses["link.paddle"]["status"] == "skipped" and statuses["link.paddle"]["waived"]
    for check in report["checks"]:  # a skip names its reason (a cpu flavor's GPU checks, a component it lacks)
        assert check["status"] != "skipped" or check["message"] not in ("", "ok"), check


def test_bench_smoke_runs_and_its_cpu_gates_are_not_proven(arm64, tmp_path: Path) -> None:
    _, image = arm64
    proc = docker("run", "--rm", "--platform", PLATFORM, "--network", "none", *AS_ME, "-e", "NGC_PADDLE_QUIET=1",
                  "-v", f"{tmp_path}:/workspace", image, "bench-rn50", "--smoke", "--output", "/workspace/out",
                  check=False, timeout=1800)
    result = json.loads(sorted((tmp_path / "out").glob("*/result.json"))[-1].read_text())
    assert proc.returncode == 0 and result["verdict"] == "SMOKE", proc.stderr[-2000:]
    assert result["environment"]["emulated"].startswith("emulated: aarch64")
    assert result["config"]["cpu_kind"] == "emulated-aarch64"
    cpu = [g for g in result["gates"] if g["profile"] == "cpu"]
    assert cpu and all(g["status"] == "NOT PROVEN" and g["reason"].startswith("emulated:") for g in cpu), cpu
    assert result["results"]["train"]["fp32"]["steps"] == 1


def test_bench_smoke_stops_on_sigterm_within_the_grace(arm64, tmp_path: Path) -> None:
    """`docker stop -t 10` during the emulated training step: an exit of 143 (not Docker's SIGKILL, 137) is the
    proof that the command ended within the grace, with its INTERRUPTED report."""
    _, image = arm64
    name, _ = bench_stop.start_until(image, tmp_path, ("bench-rn50", "--smoke", "--output", "/workspace/out"),
                                     until=("train ",), platform=PLATFORM)
    engine.docker("stop", "-t", str(bench_stop.STOP_GRACE_S), name, timeout=bench_stop.STARTUP_GUARD_S)
    code, output = bench_stop.wait_exit(name)
    assert code == ExitCode.TERMINATED, output[-2000:]
    result = json.loads(sorted((tmp_path / "out").glob("*/result.json"))[-1].read_text())
    assert result["verdict"] == "INTERRUPTED" and result["verdict_reasons"][0].startswith("stopped by SIGTERM")
