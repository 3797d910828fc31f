"""Resolve every shared object of the given distributions with the dynamic loader (JSON).

Usage: linking.py DIST [DIST...]. For each distribution, every ELF shared object in its RECORD is
run through ldd. A dependency counts as missing when ldd cannot find it AND no file with that
soname exists in site-packages or the loader cache: wheels load their bundled siblings by soname
(paddle/libs, nvidia/*/lib), which a per-file ldd does not see. A library that is really absent
(deleted, or built for another major version such as libnvinfer.so.8 beside TensorRT 10) stays
missing. Driver libraries that the NVIDIA container toolkit mounts at run time are not counted.
"""

import importlib.metadata as md
import json
import os
import site
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

DRIVER_LIBS = {"libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ptxjitcompiler.so.1", "libnvcuvid.so.1",
               "libnvidia-encode.so.1", "libnvidia-opticalflow.so.1"}


def is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def shipped_names() -> set[str]:
    names = set()
    for folder in site.getsitepackages():
        for _root, _dirs, files in os.walk(folder):
            names.update(f for f in files if ".so" in f)
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    names.update(line.split()[0] for line in out.splitlines()[1:] if line.strip())
    return names


def shared_objects(dist_name: str) -> tuple[list[str], list[str]]:
    """(ELF shared objects on disk, shared objects the RECORD lists but the disk lacks)."""
    dist = md.distribution(dist_name)
    listed = [str(dist.locate_file(f)) for f in dist.files or [] if ".so" in f.name]
    absent = sorted(f for f in listed if not os.path.lexists(f))
    return sorted(f for f in listed if os.path.isfile(f) and not os.path.islink(f) and is_elf(f)), absent


def not_found(path: str) -> list[str]:
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    return sorted({line.split("=>")[0].strip() for line in out.splitlines() if "not found" in line})


def main() -> None:
    available = shipped_names()
    report = {}
    for dist_name in sys.argv[1:]:
        try:
            files, absent = shared_objects(dist_name)
        except md.PackageNotFoundError:
            report[dist_name] = {"installed": False, "checked": 0, "absent": [], "unresolved": {}}
            continue
        with ThreadPoolExecutor(max_workers=4) as pool:
            missing = dict(zip(files, pool.map(not_found, files), strict=True))
        unresolved = {f: [lib for lib in libs if lib not in available and lib not in DRIVER_LIBS]
                      for f, libs in missing.items()}
        report[dist_name] = {"installed": True, "checked": len(files), "absent": absent,
                             "unresolved": {f: libs for f, libs in unresolved.items() if libs}}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
