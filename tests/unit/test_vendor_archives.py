"""Vendor archives (components of kind `archive`: gpu-cu118's TensorRT 8.6.1.6 tar for CUDA 11.8): the manifest's
rules, the lock (file and wheel by sha256, NVIDIA's layout), the match with the manifest, the layer's spec, the
in-image installer (what it extracts, the record, a changed file refused in one line), and the files the scan's
integrity check must find declared."""

import hashlib
import importlib.util
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from ngc_paddle.host_errors import ManifestError
from ngc_paddle.lock.archive_lock import lock_archive, supported_tags
from ngc_paddle.lock.check import lock_inputs, mismatch
from ngc_paddle.lock.layer_args import layer_args
from ngc_paddle.lock.lock_file import Lock, lock_path, read_lock
from ngc_paddle.lock.subject import ManifestFlavor
from ngc_paddle.manifest import load_manifest
from ngc_paddle.manifest.consistency import check as consistency
from ngc_paddle.manifest.resolve import apply_source_overrides, image_manifest
from ngc_paddle.manifest.schema import Component, Source
from ngc_paddle.scan.checks.integrity import load_declarations, matcher

REPO = Path(__file__).resolve().parents[2]
FLAVOR = "gpu-cu118"
FILE = "TensorRT-8.6.1.6.Linux.x86_64-gnu.cuda-11.8.tar.gz"
TOP = "TensorRT-8.6.1.6"


def manifest():
    return load_manifest(REPO / "releases" / "26.12.yaml")


def add(tar: tarfile.TarFile, name: str, data: bytes = b"", link: str | None = None, mode: int = 0o755) -> None:
    info = tarfile.TarInfo(name)
    if link is not None:
        info.type, info.linkname = tarfile.SYMTYPE, link
    else:
        info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data) if link is None else None)


def archive(path: Path, wheels: dict[str, bytes] | None = None, lib: bool = True) -> Path:
    """A tar laid out as NVIDIA's TensorRT tars (fake library bytes: the lock and the installer read no ELF)."""
    wheels = {"tensorrt-8.6.1-cp311-none-linux_x86_64.whl": b"cp311 wheel",
              "tensorrt-8.6.1-cp310-none-linux_x86_64.whl": b"cp310 wheel",
              "tensorrt_lean-8.6.1-cp311-none-linux_x86_64.whl": b"lean wheel"} if wheels is None else wheels
    with tarfile.open(path, "w:gz") as tar:
        if lib:
            add(tar, f"{TOP}/lib/libnvinfer.so.8.6.1", b"\x7fELF nvinfer")
            add(tar, f"{TOP}/lib/libnvinfer.so.8", link="libnvinfer.so.8.6.1")
            add(tar, f"{TOP}/lib/libnvinfer_static.a", b"!<arch>\n", mode=0o644)
            add(tar, f"{TOP}/lib/stubs/libnvinfer.so", b"\x7fELF stub")
            add(tar, f"{TOP}/lib/libevil.so", link="../../etc/passwd")  # a link out of the folder: never extracted
        for name, data in wheels.items():
            add(tar, f"{TOP}/python/{name}", data, mode=0o644)
        add(tar, f"{TOP}/include/NvInfer.h", b"// header", mode=0o644)
    return path


@pytest.fixture
def mirrored(tmp_path: Path):
    """A repository root whose wheelhouse/nvidia holds the archive, and the manifest pointed there."""
    folder = tmp_path / "wheelhouse" / "nvidia"
    folder.mkdir(parents=True)
    path = archive(folder / FILE)
    return tmp_path, path, apply_source_overrides(manifest(), {"nvidia-developer": "wheelhouse/nvidia"})


def test_an_archive_source_takes_a_url_or_a_folder_under_wheelhouse() -> None:
    assert Source(kind="archive", url="https://mirror.example/trt").url
    assert Source(kind="archive", path="wheelhouse/nvidia").path
    for bad, why in (({}, "needs a 'url'"), ({"url": "https://x.example", "path": "wheelhouse/x"}, "not both"),
                     ({"path": "elsewhere/nvidia"}, "must lie under wheelhouse/")):
        with pytest.raises(ValidationError, match=why):
            Source(kind="archive", **bad)
    m = apply_source_overrides(manifest(), {"nvidia-developer": "https://mirror.example/trt"})
    assert (m.sources["nvidia-developer"].url, m.sources["nvidia-developer"].path) == ("https://mirror.example/trt",
                                                                                     None)
    m = apply_source_overrides(manifest(), {"nvidia-developer": "wheelhouse/nvidia"})
    assert (m.sources["nvidia-developer"].url, m.sources["nvidia-developer"].path) == (None, "wheelhouse/nvidia")


def test_an_archive_component_names_its_file_and_a_runs_with_keeps_the_major() -> None:
    with pytest.raises(ValidationError, match="needs 'file'"):
        Component(layer="tensorrt", kind="archive", package="tensorrt", version="8.6.1.6", source="x")
    with pytest.raises(ValidationError, match="no other takes it"):
        Component(layer="tensorrt", kind="pip", package="tensorrt", version="8.6.1", source="x", file=FILE)
    m = manifest()
    assert consistency(m) == []
    paddle = m.flavors[FLAVOR].components["paddle"]
    assert paddle.built_against["tensorrt"] == "8.5.3" and paddle.runs_with["tensorrt"].version == "8.6"

    def with_runs(version: str):
        runs = {"tensorrt": {"version": version, "why": "test"}}
        comp = paddle.model_copy(update={"runs_with": {k: type(paddle.runs_with["tensorrt"])(**v)
                                                       for k, v in runs.items()}})
        flavor = m.flavors[FLAVOR].model_copy(update={"components": {**m.flavors[FLAVOR].components, "paddle": comp}})
        return [str(p) for p in consistency(m.model_copy(update={"flavors": {**m.flavors, FLAVOR: flavor}}))]

    assert any("runs_with.tensorrt: tensorrt 10.5 is another major" in p for p in with_runs("10.5"))
    assert any("built against tensorrt 8.5.3 (runs with 8.5) but the flavor pins tensorrt 8.6.1.6" in p
               for p in with_runs("8.5"))


def test_the_lock_pins_the_archive_and_the_wheel_for_the_images_python(mirrored) -> None:
    root, path, m = mirrored
    comp = m.flavors[FLAVOR].components["tensorrt"]
    entry = lock_archive(ManifestFlavor(m, FLAVOR), "tensorrt", comp, root)
    assert (entry.file, entry.sha256, entry.libraries) == (FILE, hashlib.sha256(path.read_bytes()).hexdigest(),
                                                          f"{TOP}/lib")
    assert entry.url == path.resolve().as_uri() and entry.source == "nvidia-developer"
    assert (entry.wheel.name, entry.wheel.version, entry.wheel.member) == (
        "tensorrt", "8.6.1", f"{TOP}/python/tensorrt-8.6.1-cp311-none-linux_x86_64.whl")  # not cp310, not lean
    assert entry.wheel.sha256 == hashlib.sha256(b"cp311 wheel").hexdigest()
    fetched = []
    url_manifest = apply_source_overrides(m, {"nvidia-developer": "https://mirror.example/trt"})
    by_url = lock_archive(ManifestFlavor(url_manifest, FLAVOR), "tensorrt", comp, root,
                          fetch=lambda url, target: fetched.append(url) or shutil.copy(path, target))
    assert fetched == [f"https://mirror.example/trt/{FILE}"] and by_url.sha256 == entry.sha256


@pytest.mark.parametrize("wheels, lib, error", [
    ({"tensorrt-8.6.1-cp310-none-linux_x86_64.whl": b"x"}, True, "expected one tensorrt wheel for the image's Python"),
    (None, False, "expected one TOP/lib/ folder of shared libraries, found none"),
    ({"tensorrt-8.5.3.1-cp311-none-linux_x86_64.whl": b"x"}, True, "its tensorrt wheel is version 8.5.3.1, not the "
                                                                   "component's 8.6.1.6"),
])
def test_an_archive_not_laid_out_as_pinned_is_refused_in_one_line(tmp_path: Path, wheels, lib, error) -> None:
    folder = tmp_path / "wheelhouse" / "nvidia"
    folder.mkdir(parents=True)
    archive(folder / FILE, wheels, lib)
    m = apply_source_overrides(manifest(), {"nvidia-developer": "wheelhouse/nvidia"})
    with pytest.raises(ManifestError, match=error) as caught:
        lock_archive(ManifestFlavor(m, FLAVOR), "tensorrt", m.flavors[FLAVOR].components["tensorrt"], tmp_path)
    assert "\n" not in str(caught.value) and "; fix: " in str(caught.value)
    assert supported_tags("3.11", "manylinux_2_36_x86_64")  # cp311 tags, down to linux_x86_64


def completed_lock(m, entry) -> Lock:
    lock = read_lock(lock_path(REPO / "releases", "26.12", FLAVOR))
    return Lock.model_validate({**lock.model_dump(), "pending_layers": {},
                                "inputs": lock_inputs(ManifestFlavor(m, FLAVOR)).model_dump(),
                                "archives": [entry.model_dump()]})


def test_a_lock_with_the_archive_matches_the_manifest_and_builds_its_spec(mirrored) -> None:
    root, _path, m = mirrored
    entry = lock_archive(ManifestFlavor(m, FLAVOR), "tensorrt", m.flavors[FLAVOR].components["tensorrt"], root)
    lock = completed_lock(m, entry)
    assert mismatch(ManifestFlavor(m, FLAVOR), lock) is None
    assert lock.python_versions()["tensorrt"] == "8.6.1"  # what pyenv.locked holds the image to
    other = entry.model_copy(update={"file": "TensorRT-8.6.1.6.Linux.x86_64-gnu.cuda-12.0.tar.gz"})
    assert mismatch(ManifestFlavor(m, FLAVOR), lock.model_copy(update={"archives": [other]})).startswith(
        "archives.tensorrt.file")


def test_each_field_of_an_archive_entry_is_held_to_its_component(mirrored) -> None:
    """An entry for a component that is not an archive, at another version, from another source, into another
    layer or installing another wheel, or no entry for the archive at all: the lock is stale, naming the field."""
    root, _path, m = mirrored
    subject = ManifestFlavor(m, FLAVOR)
    entry = lock_archive(subject, "tensorrt", m.flavors[FLAVOR].components["tensorrt"], root)
    lock = completed_lock(m, entry)

    def said(*entries) -> str | None:
        return mismatch(subject, lock.model_copy(update={"archives": list(entries)}))

    pip_component = next(n for n, c in m.flavors[FLAVOR].components.items() if c.kind == "pip")
    assert said(entry.model_copy(update={"component": pip_component})) == \
        f"archives.{pip_component}: {pip_component!r} is not an archive component of flavor {FLAVOR}"
    assert said(entry.model_copy(update={"component": "nothing"})).startswith("archives.nothing: 'nothing' is not")
    assert said(entry.model_copy(update={"version": "8.6.1.7"})).startswith("archives.tensorrt.version: ")
    assert said(entry.model_copy(update={"source": "pypi"})).startswith("archives.tensorrt.source: ")
    assert said(entry.model_copy(update={"layer": "app"})).startswith("archives.tensorrt.layer: ")
    wheel = entry.wheel.model_copy(update={"name": "tensorrt-libs"})
    assert said(entry.model_copy(update={"wheel": wheel})).startswith("archives.tensorrt.wheel.name: ")
    assert said() == f"archives: component tensorrt ({FILE}) is not locked"
    paddle = next(e for e in lock.pip if e.component == "paddle")  # a pip component after the archive one
    pip = [e.model_copy(update={"version": "0.0.1"}) if e is paddle else e for e in lock.pip]
    assert f"does not install component paddle ({paddle.name}==" in mismatch(subject, lock.model_copy(
        update={"pip": pip}))

    resolved = type("Resolved", (), {  # what layer_args needs of a resolved flavor
        "manifest": m, "name": FLAVOR, "lock": lock, "manifest_text": "{}", "pending_reason": "",
        "apt_packages": [], "driver_facts": None, "spec": m.flavors[FLAVOR]})()
    spec = json.loads(layer_args(resolved, "tensorrt")["LAYER_SPEC"])
    (arch,) = spec["archives"]
    assert (arch["location"], arch["into"], arch["record"], arch["sha256"]) == (
        "wheelhouse/nvidia", "/opt/tensorrt/lib", "/opt/tensorrt/ngc-archive.json", entry.sha256)
    assert spec["packages"] == [] and spec["left_out"] is None
    assert "archives" not in json.loads(layer_args(resolved, "cuda")["LAYER_SPEC"])  # other layers: as before
    carried = image_manifest(m, FLAVOR)["components"]["tensorrt"]
    assert (carried["kind"], carried["file"], carried["libraries"]) == ("archive", FILE, "/opt/tensorrt/lib")


@pytest.fixture
def installer(monkeypatch):
    """layers/lib/install_archive_layer.py, loaded from its folder (it imports install_pip_layer beside it)."""
    monkeypatch.syspath_prepend(str(REPO / "layers" / "lib"))
    spec = importlib.util.spec_from_file_location("install_archive_layer", REPO / "layers/lib/install_archive_layer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def layer_spec(tmp_path: Path, path: Path, sha256: str) -> dict:
    wheel = hashlib.sha256(b"cp311 wheel").hexdigest()
    return {"release": "26.12", "flavor": FLAVOR, "layer": "tensorrt", "lock": "releases/x.lock.json",
            "pending": None, "left_out": None, "sources": {}, "packages": [],
            "archives": [{"component": "tensorrt", "version": "8.6.1.6", "file": FILE, "sha256": sha256,
                          "source": "nvidia-developer", "location": path.parent.resolve().as_uri(),
                          "libraries": f"{TOP}/lib", "into": str(tmp_path / "opt/tensorrt/lib"),
                          "record": str(tmp_path / "opt/tensorrt/ngc-archive.json"),
                          "wheel": {"name": "tensorrt", "version": "8.6.1", "sha256": wheel,
                                    "member": f"{TOP}/python/tensorrt-8.6.1-cp311-none-linux_x86_64.whl"}}]}


def test_the_installer_extracts_the_libraries_installs_the_wheel_and_records_it(tmp_path, installer, monkeypatch,
                                                                                capsys) -> None:
    path = archive(tmp_path / FILE)
    spec = layer_spec(tmp_path, path, hashlib.sha256(path.read_bytes()).hexdigest())
    monkeypatch.setenv("LAYER_SPEC", json.dumps(spec))
    monkeypatch.setattr(installer, "ARCHIVE_CACHE", str(tmp_path / "cache"))
    installed = []

    def pip(cmd, **kwargs):
        requirements = Path(cmd[cmd.index("-r") + 1]).read_text()
        wheel = Path(cmd[cmd.index("--find-links") + 1]) / "tensorrt-8.6.1-cp311-none-linux_x86_64.whl"
        installed.append((requirements, wheel.read_bytes(), "--require-hashes" in cmd, "--no-index" in cmd))
        return type("Done", (), {"returncode": 0, "stdout": ""})()

    monkeypatch.setattr(installer.subprocess, "run", pip)
    installer.main()
    lib = tmp_path / "opt/tensorrt/lib"
    assert sorted(p.name for p in lib.iterdir()) == ["libnvinfer.so.8", "libnvinfer.so.8.6.1"]  # no .a, stubs, escape
    assert (lib / "libnvinfer.so.8").readlink() == Path("libnvinfer.so.8.6.1")
    assert installed == [(f"tensorrt==8.6.1 --hash=sha256:{spec['archives'][0]['wheel']['sha256']}\n",
                          b"cp311 wheel", True, True)]
    record = json.loads((tmp_path / "opt/tensorrt/ngc-archive.json").read_text())
    assert (record["file"], record["version"], record["sha256"]) == (FILE, "8.6.1.6", spec["archives"][0]["sha256"])
    assert f"[tensorrt] archive {FILE}: 2 libraries into {lib}, wheel tensorrt 8.6.1" in capsys.readouterr().out
    monkeypatch.setattr(installer.sys, "argv", ["install_archive_layer.py", "--libraries"])
    installer.main()
    assert capsys.readouterr().out.strip() == str(lib)


def test_the_installer_refuses_another_file_in_one_line(tmp_path, installer, monkeypatch, capsys) -> None:
    path = archive(tmp_path / FILE)
    monkeypatch.setenv("LAYER_SPEC", json.dumps(layer_spec(tmp_path, path, "0" * 64)))
    monkeypatch.setattr(installer, "ARCHIVE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(installer.subprocess, "run", lambda *a, **k: pytest.fail("nothing is installed"))
    with pytest.raises(SystemExit) as code:
        installer.main()
    out = capsys.readouterr().out.strip().splitlines()
    assert code.value.code == 1 and out[-1].startswith(f"NGC-PADDLE-ERROR layer tensorrt: archive {FILE} (component "
                                                       "tensorrt, locked in releases/x.lock.json) from source "
                                                       "nvidia-developer")
    assert f"the file's sha256 differs from the lock: expected {'0' * 64}, got " in out[-1] and "; fix: " in out[-1]
    assert not (tmp_path / "opt").exists()


def test_what_the_layers_add_is_declared_for_the_integrity_check() -> None:
    declared = matcher(load_declarations(REPO))
    site = "/opt/venv/lib/python3.11/site-packages"
    for path, layer in ((f"{site}/nvidia/cudnn/lib/libcudnn.so", "cuda"), (f"{site}/nvidia/cublas/lib/libcublasLt.so",
                                                                            "cuda"),
                        ("/opt/tensorrt/lib/libnvinfer.so", "tensorrt"), ("/opt/tensorrt/lib/libnvinfer.so.8.6.1",
                                                                          "tensorrt"),
                        ("/opt/tensorrt/ngc-archive.json", "tensorrt"), (f"{site}/tensorrt_libs/libnvinfer.so",
                                                                        "tensorrt")):
        assert declared(path, layer), path
    assert not declared(f"{site}/nvidia/cudnn/lib/libcudnn.so", "paddle")  # only the layer that writes it
    assert not declared(f"{site}/nvidia/cudnn/lib/evil.py", "cuda")
