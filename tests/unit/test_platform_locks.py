"""A lock per platform: the committed arm64 lock of cpu (aarch64 wheels, arm64 Debian packages, an arm64 base) beside
the amd64 one, how `ngc-paddle lock` resolves a platform's wheels natively, and how the scan picks the lock of the
image's platform."""

import shutil
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename

from ngc_paddle import cli
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.lock.check import lock_status
from ngc_paddle.lock.lock_file import lock_path, read_lock
from ngc_paddle.lock.pip_lock import lock_pip, requirements_of, target_platform
from ngc_paddle.lock.subject import ManifestFlavor
from ngc_paddle.manifest.loader import load_manifest
from ngc_paddle.scan.source.image_release import UnknownRelease, image_flavor, image_platform

REPO = Path(__file__).resolve().parents[2]
ARM = "linux/arm64"
AMD_LOCK = REPO / "releases" / "26.12-cpu.lock.json"
ARM_LOCK = REPO / "releases" / "26.12-cpu.arm64.lock.json"


@pytest.fixture
def releases(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "releases", tmp_path / "releases")
    return tmp_path / "releases"


def _arches(lock) -> set[str]:
    """The machines of the lock's wheels ('any' for pure Python ones)."""
    found = set()
    for entry in lock.pip:
        for tag in parse_wheel_filename(entry.file)[3]:
            found.add("any" if tag.platform == "any" else tag.platform.rsplit("_", 1)[-1]
                      if not tag.platform.endswith("x86_64") else "x86_64")
    return found


def test_the_arm64_lock_holds_aarch64_wheels_arm64_packages_and_an_arm64_base() -> None:
    arm, amd = read_lock(ARM_LOCK), read_lock(AMD_LOCK)
    assert arm.inputs.platform == "manylinux_2_36_aarch64" and amd.inputs.platform == "manylinux_2_36_x86_64"
    assert _arches(arm) <= {"aarch64", "any"} and "aarch64" in _arches(arm)
    assert _arches(amd) <= {"x86_64", "any"}
    versions = arm.python_versions()
    assert versions["paddlepaddle"] == "3.2.2" and versions["paddle2onnx"] == "1.3.1"
    assert amd.python_versions()["paddlepaddle"] == "3.3.1"
    assert {e.architecture for e in arm.debian} <= {"arm64", "all"} and "arm64" in {e.architecture for e in arm.debian}
    assert {e.architecture for e in arm.base.packages} <= {"arm64", "all"}
    assert arm.base.kind == "debootstrap" and arm.base.image == "ngc-paddle-base:bookworm-arm64"
    assert arm.base.rootfs_sha256 != amd.base.rootfs_sha256
    assert arm.generated_by == "ngc-paddle lock 26.12 --flavor cpu --platform linux/arm64"
    assert {e.sha256 for e in arm.pip}.isdisjoint({e.sha256 for e in amd.pip if "x86_64" in e.file})


def test_each_platform_is_checked_against_its_own_lock() -> None:
    release = ResolvedRelease.load(REPO, "26.12")
    amd, arm = release.flavor("cpu"), release.flavor("cpu", ARM)
    assert amd.lock == read_lock(AMD_LOCK) and arm.lock == read_lock(ARM_LOCK)
    assert not amd.lock_problem and not arm.lock_problem
    assert amd.image_manifest["locked_python"]["paddlepaddle"] == "3.3.1"
    assert arm.image_manifest["locked_python"]["paddlepaddle"] == "3.2.2"


def test_the_amd64_lock_at_the_arm64_path_is_refused_in_one_line(releases: Path) -> None:
    shutil.copy(releases / AMD_LOCK.name, releases / ARM_LOCK.name)
    manifest = load_manifest(releases / "26.12.yaml")
    subject = ManifestFlavor(manifest.model_copy(update={"flavors": {
        **manifest.flavors, "cpu": manifest.flavors["cpu"].on(ARM)}}), "cpu", ARM)
    with pytest.raises(ManifestError) as err:
        lock_status(subject, releases)
    text = str(err.value)
    assert "\n" not in text and text.startswith(str(releases / ARM_LOCK.name))
    assert "inputs.components.paddle.version: the manifest says 3.2.2, the lock 3.3.1" in text
    assert text.endswith("fix: run 'ngc-paddle lock 26.12 --flavor cpu' and commit 26.12-cpu.arm64.lock.json")


def test_manifest_check_names_a_missing_platform_lock(releases: Path, capsys) -> None:
    assert cli.main(["--root", str(REPO), "manifest", "check", "26.12"]) == 0
    assert "cpu linux/amd64 locked; cpu linux/arm64 locked; gpu lock pending" in capsys.readouterr().out
    (releases / ARM_LOCK.name).unlink()
    assert cli.main(["--root", str(releases.parent), "manifest", "check", "26.12"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {releases / ARM_LOCK.name}: (file): no lock for flavor cpu of 26.12")


def test_lock_pip_asks_pip_for_the_platforms_wheels_and_evaluates_its_markers() -> None:
    manifest = load_manifest(REPO / "releases" / "26.12.yaml")
    arm = manifest.model_copy(update={"flavors": {**manifest.flavors, "cpu": manifest.flavors["cpu"].on(ARM)}})
    assert target_platform("bookworm", ARM) == "manylinux_2_36_aarch64"
    commands: list[list[str]] = []

    def fake(cmd: list[str]) -> dict:
        commands.append(cmd)
        return {"install": []}

    with pytest.raises(ManifestError, match="lacks pinned component"):
        lock_pip(ManifestFlavor(arm, "cpu", ARM), run=fake)
    cmd = commands[0]
    platforms = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--platform"]
    assert platforms[0] == "manylinux_2_36_aarch64" and "manylinux2014_aarch64" in platforms
    assert not any("x86_64" in p for p in platforms)
    assert "paddlepaddle==3.2.2" in cmd and "paddle2onnx==1.3.1" in cmd and "--only-binary=:all:" in cmd
    item = {"metadata": {"requires_dist": ['a; platform_machine == "aarch64"', 'b; platform_machine == "x86_64"']}}
    assert [r.name for r in requirements_of(item, [], "3.11", "aarch64")] == ["a"]
    assert [r.name for r in requirements_of(item, [], "3.11")] == ["b"]  # the default platform's machine


def test_lock_run_locks_each_platform_and_only_those_asked(monkeypatch) -> None:
    from ngc_paddle import lock_command

    tried: list[tuple[str, str]] = []
    real = read_lock(AMD_LOCK)
    monkeypatch.setattr(lock_command, "build_lock", lambda f, say: tried.append((f.name, f.platform)) or real)
    written: list[str] = []
    monkeypatch.setattr(lock_command, "write_lock",
                        lambda root, lock, platform: written.append(platform) or REPO / "releases" / "x.lock.json")
    release = ResolvedRelease.load(REPO, "26.12")
    lock_command.run(release, ["cpu"], lambda _line: None)
    assert tried == [("cpu", "linux/amd64"), ("cpu", ARM)] and written == ["linux/amd64", ARM]
    tried.clear()
    lock_command.run(release, [], lambda _line: None, platforms=[ARM])  # the flavors built for it
    assert tried == [("cpu", ARM)]
    with pytest.raises(ManifestError, match="flavor gpu-cu118 is not built for linux/arm64"):
        lock_command.run(release, ["gpu-cu118"], lambda _line: None, platforms=[ARM])
    with pytest.raises(ManifestError, match=r"^--platform linux/riscv64: not a known platform; fix: use one of"):
        lock_command.run(release, [], lambda _line: None, platforms=["linux/riscv64"])
    gpu_only = ResolvedRelease.load(REPO, "23.01")
    with pytest.raises(ManifestError, match="no flavor to lock is built for linux/arm64"):
        lock_command.run(gpu_only, [], lambda _line: None, platforms=[ARM])
    assert tried == [("cpu", ARM)]  # nothing more was tried


def test_a_failed_platform_lock_leaves_the_committed_one(releases: Path, monkeypatch) -> None:
    from ngc_paddle import lock_command

    before = (releases / ARM_LOCK.name).read_bytes()

    def broken(flavor, say):
        raise ManifestError("pip could not resolve the flavor: no wheel; fix: check the pins")

    monkeypatch.setattr(lock_command, "build_lock", broken)
    with pytest.raises(ManifestError):
        lock_command.run(ResolvedRelease.load(releases.parent, "26.12"), ["cpu"], lambda _l: None, platforms=[ARM])
    assert (releases / ARM_LOCK.name).read_bytes() == before
    assert lock_path(releases, "26.12", "cpu", ARM) == releases / ARM_LOCK.name


def test_the_scan_reads_the_lock_of_the_images_platform() -> None:
    labels = {"ngc-paddle.release": "26.12", "ngc-paddle.flavor": "cpu"}
    assert image_platform({"os": "linux", "architecture": "arm64"}) == ARM
    assert image_platform({"Os": "linux", "Architecture": "amd64"}) == "linux/amd64"
    assert image_platform({}) is None
    arm = image_flavor(labels, None, REPO, {}, ARM)
    assert arm.lock_file == ARM_LOCK and arm.lock == read_lock(ARM_LOCK)
    assert image_flavor(labels, None, REPO, {}, None).lock_file == AMD_LOCK
    with pytest.raises(UnknownRelease, match=r"flavor gpu-cu118 of release 26\.12 is not built for linux/arm64"):
        image_flavor({**labels, "ngc-paddle.flavor": "gpu-cu118"}, None, REPO, {}, ARM)


def _installed_as(lock) -> list:
    """The packages an image built from `lock` holds, as the scan's inventory lists them."""
    from ngc_paddle.scan.source.inventory import Package

    debs = {p.package: p for p in lock.base.packages} | {p.package: p for p in lock.debian}
    return [*(Package("deb", p.package, p.version, "os", arch=p.architecture) for p in debs.values()),
            *(Package("pypi", e.name, e.version, e.layer, path=f"/opt/venv/lib/python3.11/site-packages/{e.name}")
              for e in lock.pip)]


def test_drift_holds_each_platforms_image_to_its_own_lock() -> None:
    from ngc_paddle.scan.checks import drift

    arm, amd = read_lock(ARM_LOCK), read_lock(AMD_LOCK)
    assert drift.compare(_installed_as(arm), arm) == [] and drift.compare(_installed_as(amd), amd) == []
    crossed = {(f.package, f.installed, f.fixed) for f in drift.compare(_installed_as(arm), amd)}
    assert ("paddlepaddle", "3.2.2", "3.3.1") in crossed  # an arm64 image against the amd64 lock drifts


def test_another_platforms_base_is_bootstrapped_for_it_under_its_own_tag(monkeypatch) -> None:
    """The default platform's base is bootstrapped exactly as before (no --arch, no --platform: the same digest);
    arm64's with mmdebstrap --arch=arm64, built for linux/arm64 and tagged apart, never pulled."""
    import subprocess

    from ngc_paddle.lock import base_image
    from ngc_paddle.platforms import PLATFORMS

    manifest = load_manifest(REPO / "releases" / "26.12.yaml")
    debian, os_comp = manifest.sources["debian"], manifest.flavors["cpu"].components["os"]
    commands: list[list[str]] = []

    def fake_run(cmd, **kwargs):
        commands.append(cmd)
        if cmd[0] == "mmdebstrap":
            Path(cmd[-2]).write_bytes(b"rootfs")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(base_image.shutil, "which", lambda name: "/usr/bin/mmdebstrap")
    monkeypatch.setattr(base_image.subprocess, "run", fake_run)
    monkeypatch.setattr(base_image.engine, "image_id", lambda ref: None)
    pulled: list[str] = []
    monkeypatch.setattr(base_image.engine, "try_pull", lambda ref: pulled.append(ref) or False)
    snapshot = "Sat, 11 Jul 2026 10:16:37 UTC"
    assert base_image.ensure_base_image(os_comp, debian, lambda _l: None, snapshot) == "ngc-paddle-base:bookworm"
    assert pulled == ["debian:bookworm-slim"]
    strap, built = commands
    assert not any(a.startswith("--arch") for a in strap) and "--platform" not in built
    commands.clear()
    pulled.clear()
    arm = base_image.ensure_base_image(os_comp, debian, lambda _l: None, snapshot, platform=PLATFORMS[ARM])
    assert arm == "ngc-paddle-base:bookworm-arm64" and pulled == []
    strap, built = commands
    assert "--arch=arm64" in strap and built[built.index("--platform") + 1] == ARM
    assert built[built.index("--tag") + 1] == "ngc-paddle-base:bookworm-arm64"


def test_the_os_layers_trial_install_runs_on_the_platform(monkeypatch) -> None:
    import subprocess

    from ngc_paddle.lock import debian_lock

    manifest = load_manifest(REPO / "releases" / "26.12.yaml")
    seen: list[list[str]] = []

    def fake_run(image, *cmd, flags=(), **_kw):
        seen.append(list(flags))
        return subprocess.CompletedProcess(cmd, 0, "=== before\n=== after\n", "")

    monkeypatch.setattr(debian_lock.engine, "run", fake_run)
    debian_lock.lock_debian(ManifestFlavor(manifest, "cpu", ARM), "ngc-paddle-base:bookworm-arm64", REPO)
    debian_lock.lock_debian(ManifestFlavor(manifest, "cpu"), "ngc-paddle-base:bookworm", REPO)
    assert seen[0][:2] == ["--platform", ARM] and "--platform" not in seen[1]
