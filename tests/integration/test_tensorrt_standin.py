"""gpu-cu118's TensorRT layer from its vendor archive (`source: nvidia-developer`, kind `archive`), proven with a small
stand-in of NVIDIA's tar served from 127.0.0.1 (the real TensorRT-8.6.1.6.Linux.x86_64-gnu.cuda-11.8.tar.gz is ~2 GB
and only on NVIDIA's developer downloads, which this host cannot reach).

The stand-in is laid out as NVIDIA's tar: TensorRT-8.6.1.6/lib/ holds real shared objects compiled here with
TensorRT's sonames (libnvinfer.so.8 -> libnvinfer.so.8.6.1, exporting getInferLibVersion() = 8601, what Paddle asks;
libnvinfer_plugin.so.8, which needs libnvinfer.so.8), a static library and a stubs/ folder the layer must not
extract; TensorRT-8.6.1.6/python/ holds the cp311 `tensorrt` wheel (the package and its __version__) beside decoys
(a cp310 wheel, a tensorrt_lean wheel) the lock must not pick. The test locks the flavor through the mirror
(`ngc-paddle lock --source nvidia-developer=URL`: nothing pending, the archive and its wheel locked by sha256), builds
the layers up to tensorrt on the cached os/cuda/dali layers (the stand-in layer is the only new one) and runs that
layer image's checks: the bindings import at the pin, libnvinfer.so and libnvinfer_plugin.so open by the names
Paddle opens, libnvinfer reports the pinned version, every library resolves.
"""

import base64
import hashlib
import http.server
import json
import shutil
import subprocess
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ngc_paddle import engine
from ngc_paddle.flavor import resolve
from ngc_paddle.image_build.bakefile import bake_command, bake_env, resolved_group, write_build_inputs
from ngc_paddle.layers import bake_target
from ngc_paddle.lock.base_image import ensure_base_image
from ngc_paddle.lock.lock_file import read_lock
from tests.integration.conftest import docker, run_cli, scratch

IMAGE = "ngc-paddle-h29trt-itest"
FLAVOR = "gpu-cu118"
PRODUCT = "8.6.1.6"  # the manifest's pin
WHEEL_VERSION = "8.6.1"  # what NVIDIA's tar carries for it
ARCHIVE = f"TensorRT-{PRODUCT}.Linux.x86_64-gnu.cuda-11.8.tar.gz"
TOP = f"TensorRT-{PRODUCT}"
LIBNVINFER = "int getInferLibVersion(void) { return 8601; }\n"  # NV_TENSORRT_VERSION of 8.6.1
PLUGIN = "int getInferLibVersion(void);\nint initLibNvInferPlugins(void *logger, const char *ns) " \
         "{ return getInferLibVersion() == 8601; }\n"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def wheel(folder: Path, name: str, tag: str) -> Path:
    """A real wheel of `name` 8.6.1 with tag `tag`: its package and __version__."""
    dist = f"{name}-{WHEEL_VERSION}.dist-info"
    files = {
        f"{name}/__init__.py": f'"""Stand-in for TensorRT {WHEEL_VERSION} (ngc-paddle tests)."""\n'
                               f'__version__ = "{WHEEL_VERSION}"\n'.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {WHEEL_VERSION}\n".encode(),
        f"{dist}/WHEEL": f"Wheel-Version: 1.0\nGenerator: ngc-paddle-tests\nRoot-Is-Purelib: false\nTag: {tag}\n"
                         .encode(),
    }
    record = "\n".join([*(_record_line(n, d) for n, d in files.items()), f"{dist}/RECORD,,"]) + "\n"
    path = folder / f"{name}-{WHEEL_VERSION}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, data in {**files, f"{dist}/RECORD": record.encode()}.items():
            zf.writestr(member, data)
    return path


def standin_archive(folder: Path) -> Path:
    """TensorRT-8.6.1.6.Linux.x86_64-gnu.cuda-11.8.tar.gz as NVIDIA lays it out, small."""
    if shutil.which("gcc") is None:
        pytest.skip("no C compiler (gcc) to build the stand-in libnvinfer.so.8; fix: apt-get install gcc")
    lib, python = folder / TOP / "lib", folder / TOP / "python"
    (lib / "stubs").mkdir(parents=True)
    python.mkdir()
    (folder / "nvinfer.c").write_text(LIBNVINFER)
    (folder / "plugin.c").write_text(PLUGIN)
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libnvinfer.so.8", "-o", str(lib / "libnvinfer.so.8.6.1"),
                    str(folder / "nvinfer.c")], check=True)
    (lib / "libnvinfer.so.8").symlink_to("libnvinfer.so.8.6.1")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libnvinfer_plugin.so.8", "-o",
                    str(lib / "libnvinfer_plugin.so.8.6.1"), str(folder / "plugin.c"), "-L", str(lib),
                    "-l:libnvinfer.so.8"], check=True)
    (lib / "libnvinfer_plugin.so.8").symlink_to("libnvinfer_plugin.so.8.6.1")
    (lib / "libnvinfer_static.a").write_bytes(b"!<arch>\n")  # not extracted: no static libraries
    shutil.copy(lib / "libnvinfer.so.8.6.1", lib / "stubs" / "libnvinfer.so")  # not extracted: stubs
    wheel(python, "tensorrt", "cp311-none-linux_x86_64")
    wheel(python, "tensorrt", "cp310-none-linux_x86_64")  # another Python: not locked
    wheel(python, "tensorrt_lean", "cp311-none-linux_x86_64")  # another distribution: not locked
    path = folder / "serve" / ARCHIVE
    path.parent.mkdir()
    with tarfile.open(path, "w:gz") as tar:
        tar.add(folder / TOP, arcname=TOP)
    return path


@pytest.fixture
def nvidia_mirror(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A folder of NVIDIA's tars on 127.0.0.1 (an ephemeral port) serving the stand-in: (its URL, the archive)."""
    archive = standin_archive(tmp_path)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, directory=str(archive.parent), **kwargs)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", archive
    finally:
        server.shutdown()
        server.server_close()


def test_tensorrt_layer_locks_and_builds_from_a_mirror_of_nvidias_tar(tmp_path: Path, nvidia_mirror) -> None:
    url, archive = nvidia_mirror
    repo = scratch(tmp_path / "repo", IMAGE)
    lock_file = repo / "releases" / f"26.12-{FLAVOR}.lock.json"
    committed = json.loads(lock_file.read_text())
    assert list(committed["pending_layers"]) == ["tensorrt"]

    # 1. Locked through the mirror: nothing pending, the archive pinned by its hash with the cp311 tensorrt wheel.
    proc = run_cli("lock", "26.12", "--flavor", FLAVOR, "--source", f"nvidia-developer={url}", root=repo, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "left out of the lock" not in proc.stdout
    locked = read_lock(lock_file)
    assert locked.pending_layers == {}
    (entry,) = locked.archives
    assert (entry.component, entry.version, entry.layer, entry.source, entry.file) == (
        "tensorrt", PRODUCT, "tensorrt", "nvidia-developer", ARCHIVE)
    assert entry.sha256 == hashlib.sha256(archive.read_bytes()).hexdigest() and entry.url == f"{url}/{ARCHIVE}"
    assert entry.libraries == f"{TOP}/lib"
    assert (entry.wheel.name, entry.wheel.version, entry.wheel.member) == (
        "tensorrt", WHEEL_VERSION, f"{TOP}/python/tensorrt-{WHEEL_VERSION}-cp311-none-linux_x86_64.whl")
    assert not [e for e in locked.pip if e.layer == "tensorrt"]

    # The layers below keep the committed lock's entries (PyPI or Debian may have moved on since it was made; the
    # cached os/cuda/dali images are those of the committed lock): only the archive and the inputs are new.
    fresh = json.loads(lock_file.read_text())
    committed.update(inputs=fresh["inputs"], pending_layers={}, archives=fresh["archives"])
    lock_file.write_text(json.dumps(committed, indent=1) + "\n")
    check = run_cli("manifest", "check", "26.12", root=repo)
    assert check.returncode == 0 and f"{FLAVOR} locked" in check.stdout, check.stdout + check.stderr

    # 2. Built up to the tensorrt layer with the mirror: the archive fetched, checked, extracted, its wheel installed.
    resolved = resolve(repo, "26.12", FLAVOR, {"nvidia-developer": url})
    spec = resolved.spec
    lock = resolved.build_lock()
    base = ensure_base_image(spec.components["os"], resolved.manifest.sources[spec.components["python"].source],
                             print, lock.base.snapshot)
    bake_file = write_build_inputs(resolved.release_run, {FLAVOR: base})
    env = bake_env(resolved.manifest)
    printed = resolved_group(bake_file, resolved, env)
    tags = []
    try:
        for layer in spec.layers[: spec.layers.index("tensorrt") + 1]:
            target = bake_target(layer, FLAVOR)
            built = engine.docker(*bake_command(bake_file.relative_to(repo), target, "--progress", "plain"), cwd=repo,
                                  env=env, check=False)
            assert built.returncode == 0, built.stderr[-3000:]
            tags.append(printed["target"][target]["tags"][0])
        log = built.stderr
        assert f"[tensorrt] archive {ARCHIVE}: 4 libraries into /opt/tensorrt/lib, wheel tensorrt {WHEEL_VERSION}" \
            in log, log[-3000:]
        assert "[tensorrt] registered 1 library folder(s) with the loader, 2 unversioned name(s) linked" in log, \
            log[-3000:]
        listing = docker("run", "--rm", "--network", "none", "--entrypoint", "ls", tags[-1], "/opt/tensorrt/lib").stdout
        assert sorted(listing.split()) == ["libnvinfer.so", "libnvinfer.so.8", "libnvinfer.so.8.6.1",
                                           "libnvinfer_plugin.so", "libnvinfer_plugin.so.8",
                                           "libnvinfer_plugin.so.8.6.1"]  # no static library, no stubs

        # 3. The layer image's checks (and those of the layers below).
        out = tmp_path / "checks"
        proc = run_cli("validate", tags[-1], "--output", str(out), root=repo, timeout=900)
        report = json.loads((out / "validation.json").read_text())
        status = {c["id"]: c for c in report["checks"]}
        for check_id in ("func.tensorrt-import", "version.tensorrt", "version.tensorrt-library", "link.tensorrt",
                         "link.runtime.tensorrt", "link.runtime.cudnn", "link.runtime.cublas"):
            assert status.get(check_id, {}).get("status") == "passed", (check_id, status.get(check_id),
                                                                        proc.stdout[-2000:])
        assert proc.returncode in (0, 3), proc.stdout[-2000:]
    finally:
        for tag in tags:
            docker("rmi", tag, check=False)
