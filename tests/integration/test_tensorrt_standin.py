"""gpu-cu118's TensorRT layer from `source: nvidia`, proven with a local PEP 503 index on 127.0.0.1 serving a small
stand-in `tensorrt` wheel (NVIDIA's 8.5.3.1 is ~1 GB and only on NVIDIA's index, which this host cannot reach).

The stand-in is a real wheel of the pinned name and version: the Python package `tensorrt` (its __version__) and a
real shared object with the soname libnvinfer.so.8 that exports getInferLibVersion() (what Paddle asks TensorRT),
compiled here. The test locks the flavor through the index (`ngc-paddle lock --source nvidia=URL`: no layer left
pending, the wheel locked by its sha256, from nvidia only), then builds the layers up to tensorrt on the cached
os/cuda/dali layers (the stand-in layer is the only new one) and runs that layer image's checks.
"""

import base64
import hashlib
import http.server
import json
import shutil
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ngc_paddle import engine
from ngc_paddle.flavor import resolve
from ngc_paddle.image_build.bakefile import bake_command, bake_env, resolved_group, write_build_inputs
from ngc_paddle.image_build.scratch import scratch_copy
from ngc_paddle.layers import bake_target
from ngc_paddle.lock.base_image import ensure_base_image
from ngc_paddle.lock.model import read_lock
from tests.integration.conftest import REPO, docker, run_cli

IMAGE = "ngc-paddle-h29trt-itest"
FLAVOR = "gpu-cu118"
VERSION = "8.5.3.1"  # the manifest's pin (what Paddle 2.6.2 was compiled against)
LIBNVINFER = "int getInferLibVersion(void) { return 8503; }\n"  # NV_TENSORRT_VERSION of 8.5.3


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def standin_wheel(folder: Path) -> Path:
    """tensorrt-8.5.3.1-py3-none-any.whl: the package and libnvinfer.so.8, as TensorRT 8.5's own wheel lays them."""
    if shutil.which("gcc") is None:
        pytest.skip("no C compiler (gcc) to build the stand-in libnvinfer.so.8; fix: apt-get install gcc")
    source = folder / "nvinfer.c"
    source.write_text(LIBNVINFER)
    library = folder / "libnvinfer.so.8"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libnvinfer.so.8", "-o", str(library), str(source)],
                   check=True)
    dist = f"tensorrt-{VERSION}.dist-info"
    files = {
        "tensorrt/__init__.py": (f'"""Stand-in for TensorRT {VERSION} (ngc-paddle tests)."""\n'
                                 f'__version__ = "{VERSION}"\n').encode(),
        "tensorrt/libnvinfer.so.8": library.read_bytes(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: tensorrt\nVersion: {VERSION}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: ngc-paddle-tests\nRoot-Is-Purelib: false\n"
                         b"Tag: py3-none-any\n",
    }
    record = "\n".join([*(_record_line(n, d) for n, d in files.items()), f"{dist}/RECORD,,"]) + "\n"
    wheel = folder / f"tensorrt-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in {**files, f"{dist}/RECORD": record.encode()}.items():
            zf.writestr(name, data)
    return wheel


@pytest.fixture
def nvidia_index(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A PEP 503 simple index on 127.0.0.1 (an ephemeral port) serving the stand-in: (its URL, the wheel)."""
    root = tmp_path / "index"
    project = root / "simple" / "tensorrt"
    project.mkdir(parents=True)
    wheel = standin_wheel(tmp_path)
    shutil.copy(wheel, project / wheel.name)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (project / "index.html").write_text(f'<html><body><a href="{wheel.name}#sha256={sha}">{wheel.name}</a>'
                                        "</body></html>\n")
    (root / "simple" / "index.html").write_text('<html><body><a href="tensorrt/">tensorrt</a></body></html>\n')

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", wheel
    finally:
        server.shutdown()
        server.server_close()


def test_tensorrt_layer_locks_and_builds_from_an_nvidia_mirror(tmp_path: Path, nvidia_index) -> None:
    url, wheel = nvidia_index
    repo = scratch_copy(REPO, tmp_path / "repo", IMAGE)
    lock_file = repo / "releases" / f"26.12-{FLAVOR}.lock.json"
    committed = json.loads(lock_file.read_text())
    assert list(committed["pending_layers"]) == ["tensorrt"]

    # 1. Locked through the mirror: nothing pending, the stand-in pinned by its hash, from nvidia alone.
    proc = run_cli("lock", "26.12", "--flavor", FLAVOR, "--source", f"nvidia={url}", root=repo, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "left out of the lock" not in proc.stdout
    locked = read_lock(lock_file)
    assert locked.pending_layers == {}
    entry = next(e for e in locked.pip if e.name == "tensorrt")
    assert (entry.version, entry.layer, entry.source, entry.component) == (VERSION, "tensorrt", "nvidia", "tensorrt")
    assert entry.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest() and entry.url.startswith(url)

    # The layers below keep the committed lock's entries (PyPI or Debian may have moved on since it was made; the
    # cached os/cuda/dali images are those of the committed lock): only the tensorrt layer and the inputs are new.
    fresh = json.loads(lock_file.read_text())
    committed.update(inputs=fresh["inputs"], pending_layers={},
                     pip=committed["pip"] + [e for e in fresh["pip"] if e["layer"] == "tensorrt"])
    lock_file.write_text(json.dumps(committed, indent=1) + "\n")
    check = run_cli("manifest", "check", "26.12", root=repo)
    assert check.returncode == 0 and f"{FLAVOR} locked" in check.stdout, check.stdout + check.stderr

    # 2. Built up to the tensorrt layer with the mirror: pip installs the stand-in from the index alone.
    resolved = resolve(repo, "26.12", FLAVOR, {"nvidia": url})
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
        assert f"[tensorrt] pip install 1 locked wheel(s) from nvidia: tensorrt=={VERSION}" in log, log[-3000:]
        assert "[tensorrt] registered 1 library folder(s) with the loader" in log, log[-3000:]

        # 3. The layer image's checks (and those of the layers below): the bindings import at the pin, libnvinfer.so.8
        # is on the loader path and resolves.
        out = tmp_path / "checks"
        proc = run_cli("validate", tags[-1], "--output", str(out), root=repo, timeout=900)
        report = json.loads((out / "validation.json").read_text())
        status = {c["id"]: c["status"] for c in report["checks"]}
        for check_id in ("func.tensorrt-import", "version.tensorrt", "link.tensorrt", "link.runtime.tensorrt"):
            assert status.get(check_id) == "passed", (check_id, status.get(check_id), proc.stdout[-2000:])
        assert proc.returncode in (0, 3), proc.stdout[-2000:]
    finally:
        for tag in tags:
            docker("rmi", tag, check=False)
