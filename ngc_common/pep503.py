"""PEP 503 name normalisation for the image side: the one rule the layer installer and the suite share.

Why: the installer (layers/lib/install_pip_layer.py, at build time), the distributions probe and the
version, import and licence checks all compare distribution names. The host side uses
packaging.utils.canonicalize_name; the image side cannot (the lower layers carry no `packaging`, and
the installer runs before anything is installed), so this is the same rule written out (PEP 503,
"Normalized Names"): runs of `-`, `_` and `.` become one `-`, lower case. tests/unit/test_pep503.py
checks it agrees with packaging on tricky names. Standard library only.

Where it is found: in the image, in the installed ngc_common package; in a layer image, in the copy of
ngc_common the host puts beside the probes; the pip layers' Dockerfiles bind-mount this file at
/tmp/ngc/shared/pep503.py for the installer.
"""

import re

_SEPARATORS = re.compile(r"[-_.]+")


def canonical(name: str) -> str:
    return _SEPARATORS.sub("-", name).lower()
