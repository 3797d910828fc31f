"""Install one pip layer's locked arm64 wheels both ways, side by side: natively (pip --platform --target, in the
default platform's os layer, as the build does) and under qemu (pip in the arm64 os layer), from the same local
folder of the same wheels, so the ratio is the install's alone (no download on either side).

Why: the arm64 build installs its wheels natively because pip under emulation is slow (docs/building.md); this
measures by how much on the host that runs it, in one run, rather than quoting a figure from another machine.
"""

import json
import subprocess
import time
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.lock.pip_lock import platform_tags

WORK = "/tmp/ngc-wheels"
# The os layer's venv has no pip of its own (the first pip layer installs the locked one): Debian's pip wheel, run as
# a program, as layers/lib/install_pip_layer.py does there; the same pip on both sides.
DEBIAN_PIP = 'exec /opt/venv/bin/python "$(ls /usr/share/python-wheels/pip-*.whl | tail -n 1)/pip" "$@"'


def requirements(lock: dict, layer: str) -> str:
    """The layer's locked wheels as a hash-checking requirements file."""
    entries = [e for e in lock["pip"] if e["layer"] == layer]
    return "".join(f"{e['name']}=={e['version']} --hash=sha256:{e['sha256']}\n" for e in entries)


def download(lock: dict, layer: str, folder: Path, pip: str) -> int:
    """The layer's wheels for the lock's platform into `folder` (made here; hashes checked); how many."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "requirements.txt").write_text(requirements(lock, layer))
    flags = [f for tag in platform_tags(lock["inputs"]["platform"]) for f in ("--platform", tag)]
    subprocess.run([pip, "download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version", "3.11",
                    "--implementation", "cp", *flags, "--require-hashes", "-r", str(folder / "requirements.txt"),
                    "-d", str(folder)], check=True)
    return len(list(folder.glob("*.whl")))


def timed_install(image: str, folder: Path, platform: str | None, pip_flags: list[str]) -> float:
    """Seconds one offline `pip install` of the folder's wheels takes in a container of `image`."""
    started = time.monotonic()
    engine.docker("run", "--rm", "--network", "none", *(["--platform", platform] if platform else []),
                  "-v", f"{folder}:{WORK}:ro", "--entrypoint", "sh", image, "-c", DEBIAN_PIP, "pip", "install",
                  "--quiet", "--no-deps", "--no-index", "--find-links", WORK, "--require-hashes", "-r",
                  f"{WORK}/requirements.txt", *pip_flags)
    return time.monotonic() - started


def compare(lock_file: Path, layer: str, native_os: str, foreign_os: str, folder: Path, pip: str) -> dict:
    """Native and emulated install seconds of `layer`'s locked wheels, and their ratio."""
    lock = json.loads(lock_file.read_text())
    count = download(lock, layer, folder, pip)
    flags = [f for tag in platform_tags(lock["inputs"]["platform"]) for f in ("--platform", tag)]
    native = timed_install(native_os, folder, None, [*flags, "--only-binary=:all:", "--target", "/tmp/target"])
    emulated = timed_install(foreign_os, folder, "linux/arm64", [])
    return {"layer": layer, "wheels": count, "native_s": round(native, 1), "emulated_s": round(emulated, 1),
            "emulated_over_native": round(emulated / native, 1)}
