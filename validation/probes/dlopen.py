"""dlopen() each given library name the way Paddle's loader does, and say what it found (JSON).

Usage: dlopen.py NAME [NAME...]. Paddle opens cuDNN, cuBLAS, NCCL, TensorRT... by name at run time
(paddle/phi/backends/dynload/dynamic_loader.cc: dlopen(name, RTLD_LAZY | RTLD_LOCAL), its FLAGS_*_dir unset):
the loader searches LD_LIBRARY_PATH, the ld.so cache and the default folders for exactly that name. Each name
here is opened the same way, in this process, without a GPU (loading a library needs no driver): the result is
`ok` with the file it resolved to, or the loader's error. Also reported: whether the installed Paddle was built
to open NVIDIA's pip-installed CUDA libraries by their versioned names (paddle.version.with_pip_cuda_libraries,
read from its file without importing Paddle; absent in Paddle 2.6, so "OFF"), or None where no Paddle is installed.
"""

import ctypes
import importlib.util
import json
import os
import re
import sys
from pathlib import Path


def mapped_files() -> set[str]:
    with open("/proc/self/maps") as fh:
        return {line.split(None, 5)[5].strip() for line in fh if len(line.split(None, 5)) == 6}


def open_library(name: str) -> dict:
    before = mapped_files()
    try:
        ctypes.CDLL(name, mode=os.RTLD_LAZY | os.RTLD_LOCAL)
    except OSError as exc:
        return {"ok": False, "error": " ".join(str(exc).split())[:300]}
    stem = name.split(".so")[0] + ".so"
    after = mapped_files()
    new = sorted(p for p in after - before if os.path.basename(p).startswith(stem))
    loaded = new or sorted(p for p in after if os.path.basename(p).startswith(stem))  # loaded before, as a dependency
    return {"ok": True, "path": loaded[0] if loaded else None}


def pip_cuda_libraries() -> str | None:
    spec = importlib.util.find_spec("paddle")
    if spec is None or not spec.submodule_search_locations:
        return None
    version = Path(next(iter(spec.submodule_search_locations))) / "version" / "__init__.py"
    text = version.read_text() if version.is_file() else ""
    found = re.search(r"^with_pip_cuda_libraries\s*(?::\s*str\s*)?=\s*'(ON|OFF)'", text, re.M)
    return found.group(1) if found else "OFF"


def main() -> None:
    print(json.dumps({"libraries": {name: open_library(name) for name in sys.argv[1:]},
                      "paddle_with_pip_cuda_libraries": pip_cuda_libraries()}))


if __name__ == "__main__":
    main()
