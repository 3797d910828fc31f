"""Install one pip layer's locked wheels for another platform, on the build platform, into a folder.

Why: pip under qemu is slow (Paddle alone took about 6 minutes); a wheel needs no code of its own run to be installed,
so the layer's lock entries are installed here, natively, with layers/lib/install_pip_layer.py's own pip command
(hashes required, each source its only index) plus `--platform` (the target's tags, PIP_PLATFORMS) `--target DIR`.
The target layer copies DIR into its venv (layers/foreign/Dockerfile). Kept out of layers/lib, which the default
platform's layers mount: their inputs, and BuildKit's cache of them, stay what they were.

  python install_foreign.py DIR     (LAYER_SPEC and PIP_PLATFORMS in the environment)
"""

import base64
import csv
import hashlib
import importlib.util
import io
import json
import os
import py_compile
import sys
import sysconfig
from pathlib import Path

# install_pip_layer.py: bind-mounted at /tmp/ngc/lib in the build, in the repository's layers/lib for the unit tests.
for _folder in (Path("/tmp/ngc/lib"), Path(__file__).resolve().parents[1] / "lib"):
    if (_folder / "install_pip_layer.py").is_file():
        sys.path.insert(0, str(_folder))
        break
import install_pip_layer as pip_layer  # noqa: E402


def foreign_flags(spec: dict, target: str) -> list[str]:
    """Install for another platform into `target`: its wheels only (PIP_PLATFORMS, newest manylinux first, from
    ngc_paddle/lock/pip_lock.py) for this Python, which is the target's (both are the release's os layer)."""
    tags = os.environ.get("PIP_PLATFORMS", "").split()
    if not tags:
        pip_layer.fail(spec, None, "installing for another platform needs the PIP_PLATFORMS build argument",
                       "build another platform's layer through make image PLATFORMS=... (the bake file sets it)")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    flags = ["--target", os.path.join(target, "site-packages"), "--python-version", version, "--implementation",
             "cp", "--abi", f"cp{version.replace('.', '')}", "--abi", "abi3", "--abi", "none"]
    for tag in [*tags, "any"]:
        flags += ["--platform", tag]
    return flags


def main() -> None:
    spec = json.loads(os.environ["LAYER_SPEC"])
    target = sys.argv[1]
    flags = foreign_flags(spec, target)
    native = pip_layer.pip_command
    pip_layer.pip_command = lambda s, source, requirements: [*native(s, source, requirements), *flags]
    if not pip_layer.left_out(spec):
        if spec.get("pending"):
            pip_layer.fail(spec, None, f"flavor {spec['flavor']} has no lock yet ({spec['pending']})")
        groups: dict[str, list[dict]] = {}
        for entry in spec["packages"]:
            groups.setdefault(entry["source"], []).append(entry)
        for source_name, entries in groups.items():
            print(f"[{spec['layer']}] for {flags[flags.index('--platform') + 1]}:", flush=True)
            pip_layer.install_source(spec, source_name, entries)
    move_data_files(target)  # `pip check` is the layer checks' job, in the target image
    recompile_bytecode(target, sysconfig.get_paths()["purelib"])


TEMP_HOME = "../../"  # pip --target's temporary install (its home scheme) seen from its site-packages (lib/python)
VENV_ROOT = "../../../"  # the venv seen from its site-packages (lib/pythonX.Y/site-packages)


def move_data_files(target: str) -> None:
    """pip --target puts what a wheel installs outside site-packages (console scripts in bin/, .data/data files such
    as sympy's share/man/man1/isympy.1) into site-packages/bin, site-packages/share, ..., and its RECORDs name them
    where its temporary install had them (../../bin/NAME). In the venv they belong beside lib/: move each such file
    to TARGET/bin, TARGET/share, ... (the layer copies those into the venv) and name it there in its RECORD (same
    bytes, same hash), so the scan's integrity check finds each one installed by its package."""
    site = Path(target, "site-packages")
    moved_dirs: set[Path] = set()
    for record in sorted(site.glob("*.dist-info/RECORD")):
        lines = record.read_text().splitlines(keepends=True)
        moved = []
        for line in lines:
            path, sep, rest = line.partition(",")
            relative = path.removeprefix(TEMP_HOME)
            if path.startswith(TEMP_HOME) and not relative.startswith("../") and (site / relative).is_file():
                destination = Path(target, relative)
                destination.parent.mkdir(parents=True, exist_ok=True)
                os.rename(site / relative, destination)
                moved_dirs.add((site / relative).parent)
                line = f"{VENV_ROOT}{relative}{sep}{rest}"
            moved.append(line)
        if moved != lines:
            record.write_text("".join(moved))
    for folder in sorted(moved_dirs, key=lambda f: len(f.parts), reverse=True):  # the folders the moves emptied
        while folder != site and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent


def recompile_bytecode(target: str, venv_site: str) -> None:
    """pip --target compiles each .pyc in a temporary install (/tmp/pip-target-XXXXXXXX/...), and the .pyc keeps that
    random path as its source's: two builds wrote different bytes (the arm64 layers were not reproducible) and a
    traceback in the image named a path that never existed there. Compile each .pyc a RECORD lists again from its
    source, named as the venv holds it (VENV_SITE: this interpreter's, the target's too: both are the release's os
    layer), hash-based as pip writes them with SOURCE_DATE_EPOCH, and record its new hash and size."""
    site = Path(target, "site-packages")
    for record in sorted(site.glob("*.dist-info/RECORD")):
        lines = record.read_bytes().decode().splitlines(keepends=True)
        rewritten = [_recompiled(site, venv_site, line) for line in lines]
        if rewritten != lines:
            record.write_bytes("".join(rewritten).encode())


def _recompiled(site: Path, venv_site: str, line: str) -> str:
    """One RECORD line, naming the .pyc compiled again where it names a .pyc of a recorded-beside source."""
    body = line.rstrip("\r\n")
    row = next(csv.reader([body]), [])
    if len(row) != 3 or not row[0].endswith(".pyc") or row[0].startswith("../"):
        return line
    try:
        source = importlib.util.source_from_cache(row[0])
    except ValueError:  # not a __pycache__/NAME.TAG.pyc of this interpreter
        return line
    pyc = site / row[0]
    if not pyc.is_file() or not (site / source).is_file():
        return line
    py_compile.compile(str(site / source), cfile=str(pyc), dfile=os.path.join(venv_site, source), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    data = pyc.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    out = io.StringIO()
    csv.writer(out, lineterminator=line[len(body):]).writerow([row[0], f"sha256={digest}", str(len(data))])
    return out.getvalue()


if __name__ == "__main__":
    main()
