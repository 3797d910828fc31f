"""What a vendor archive component installed, and the version its library reports (JSON).

Usage: archive_record.py COMPONENT LIBRARY SYMBOL. The record layers/lib/install_archive_layer.py wrote beside the
extracted libraries (ngc_common.image_paths.ARCHIVE_RECORD: the archive's file, sha256, version, wheel), and the
integer the library's own version function returns when LIBRARY is opened by that name (TensorRT:
libnvinfer.so's getInferLibVersion, the figure Paddle asks TensorRT for at run time).
"""

import ctypes
import json
import os
import sys
from pathlib import Path

from ngc_common.image_paths import ARCHIVE_RECORD  # installed in the image; in a layer image, copied beside this probe


def main() -> None:
    component, library, symbol = sys.argv[1:4]
    record = Path(ARCHIVE_RECORD.format(component=component))
    found = {"record": json.loads(record.read_text()) if record.is_file() else None, "reported": None}
    try:
        function = getattr(ctypes.CDLL(library, mode=os.RTLD_LAZY | os.RTLD_LOCAL), symbol)
        function.restype = ctypes.c_int
        found["reported"] = int(function())
    except (OSError, AttributeError) as exc:
        found["error"] = " ".join(str(exc).split())[:300]
    print(json.dumps(found))


if __name__ == "__main__":
    main()
