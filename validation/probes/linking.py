"""Resolve every shared object of the given distributions or library folders as the dynamic loader would (JSON).

Usage: linking.py TARGET [TARGET...]; a TARGET is a distribution name (every ELF shared object its RECORD lists)
or an absolute folder (every ELF shared object in it: a vendor archive's libraries, e.g. /opt/tensorrt/lib).

Each file goes through ldd, which resolves its DT_NEEDED entries the way ld.so does for that file: its own
DT_RPATH/DT_RUNPATH, LD_LIBRARY_PATH, the ld.so cache, the default folders. What that proves: the file loads on
its own. One more case loads at run time and is counted, named, as `preloaded`: a dependency that ldd does not
find for the file alone but that another shared object of the same target resolves (through its own RUNPATH),
which loads it first and so satisfies the name (ld.so matches an already loaded object by its soname): numpy's
auditwheel'd libgfortran needs libquadmath, which the extension module that loads both finds; Paddle's
libmklml_intel.so needs libiomp5.so, which libphi.so (which dlopen()s MKL) loads first. A name that no object of
the target resolves stays unresolved, even where a file of that name lies elsewhere (libnvinfer.so.8 beside
TensorRT 10 is missing). Driver libraries, which the NVIDIA container toolkit mounts at run time, are not counted.
"""

import importlib.metadata as md
import json
import os
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


def shared_objects(target: str) -> tuple[list[str], list[str]]:
    """(ELF shared objects on disk, shared objects listed but missing from disk) of a distribution or a folder."""
    if target.startswith("/"):
        if not os.path.isdir(target):
            raise FileNotFoundError(target)
        names = sorted(os.listdir(target))
        listed = [os.path.join(target, n) for n in names if n.startswith("lib") and ".so" in n]
        absent = []
    else:
        dist = md.distribution(target)
        listed = [str(dist.locate_file(f)) for f in dist.files or [] if ".so" in f.name]
        absent = sorted(f for f in listed if not os.path.lexists(f))
    return sorted(f for f in listed if os.path.isfile(f) and not os.path.islink(f) and is_elf(f)), absent


def ldd(path: str) -> tuple[set[str], set[str]]:
    """(the names ldd resolves for this file, the names it does not find)."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    found, missing = set(), set()
    for line in out.splitlines():
        name, arrow, rest = line.strip().partition("=>")
        if not arrow:
            continue
        (missing if "not found" in rest else found).add(name.strip())
    return found, missing


def resolve(target: str) -> dict:
    try:
        files, absent = shared_objects(target)
    except (md.PackageNotFoundError, FileNotFoundError):
        return {"installed": False, "checked": 0, "absent": [], "unresolved": {}, "preloaded": {}}
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(files, pool.map(ldd, files), strict=True))
    unresolved, preloaded = {}, {}
    for path, (_found, missing) in results.items():
        for name in sorted(missing - DRIVER_LIBS):
            loader = next((other for other, (found, _m) in results.items() if other != path and name in found), None)
            if loader is None:
                unresolved.setdefault(path, []).append(name)
            else:
                preloaded.setdefault(path, []).append(f"{name} (loaded first by {os.path.basename(loader)})")
    return {"installed": True, "checked": len(files), "absent": absent, "unresolved": unresolved,
            "preloaded": preloaded}


def main() -> None:
    print(json.dumps({target: resolve(target) for target in sys.argv[1:]}))


if __name__ == "__main__":
    main()
