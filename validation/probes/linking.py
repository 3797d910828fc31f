"""Resolve every shared object of the given distributions or library folders as the dynamic loader would (JSON).

Usage: linking.py TARGET [TARGET...]; a TARGET is a distribution name (every ELF shared object its RECORD lists)
or an absolute folder (every ELF shared object in it: a vendor archive's libraries, e.g. /opt/tensorrt/lib).

The long form: docs/design-notes.md, section `validation/probes/linking.py`.
"""

import importlib.metadata as md
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

# ELF e_machine values by the names the platforms use; a file of another machine is reported by its number otherwise.
MACHINES = {3: "i386", 40: "arm", 62: "x86-64", 183: "aarch64", 243: "riscv64"}
DRIVER_LIBS = {"libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ptxjitcompiler.so.1", "libnvcuvid.so.1",
               "libnvidia-encode.so.1", "libnvidia-opticalflow.so.1"}


def is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def machine(path: str) -> str:
    """The ELF file's machine (e_machine, read in the byte order its header names)."""
    with open(path, "rb") as fh:
        header = fh.read(20)
    number = int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")
    return MACHINES.get(number, f"e_machine {number}")


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


def distribution_libraries() -> dict[str, str]:
    """Shared object file name -> the installed distribution that ships it (its RECORD), for case (2)."""
    shipped = {}
    for dist in md.distributions():
        for f in dist.files or []:
            if f.name.startswith("lib") and ".so" in f.name:
                shipped.setdefault(f.name, dist.metadata["Name"])
    return shipped


def resolve(target: str, shipped: dict[str, str]) -> dict:
    try:
        files, absent = shared_objects(target)
    except (md.PackageNotFoundError, FileNotFoundError):
        return {"installed": False, "checked": 0, "absent": [], "unresolved": {}, "preloaded": {}, "foreign": {}}
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(files, pool.map(ldd, files), strict=True))
    # ldd lists nothing for a file of another machine (the loader refuses it), so it would count as resolved
    own = machine(os.path.realpath(sys.executable))
    foreign = {path: arch for path in files if (arch := machine(path)) != own}
    unresolved, preloaded = {}, {}
    for path, (_found, missing) in results.items():
        for name in sorted(missing - DRIVER_LIBS):
            loader = next((other for other, (found, _m) in results.items() if other != path and name in found), None)
            if loader is not None:
                preloaded.setdefault(path, []).append(f"{name} (loaded first by {os.path.basename(loader)})")
            elif name in shipped and shipped[name] != target:
                preloaded.setdefault(path, []).append(f"{name} (shipped by {shipped[name]}, loaded by its import)")
            else:
                unresolved.setdefault(path, []).append(name)
    return {"installed": True, "checked": len(files), "absent": absent, "unresolved": unresolved,
            "preloaded": preloaded, "foreign": foreign}


def main() -> None:
    shipped = distribution_libraries()
    print(json.dumps({target: resolve(target, shipped) for target in sys.argv[1:]}))


if __name__ == "__main__":
    main()
