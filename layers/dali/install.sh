#!/usr/bin/env bash
# DALI layer: install its locked wheels, then check that nvidia.dali imports.
set -euo pipefail
start=$(date +%s)  # what changes from here on is clamped to SOURCE_DATE_EPOCH at the end
python /tmp/ngc/lib/install_pip_layer.py
PYTHONDONTWRITEBYTECODE=1 python -c 'import nvidia.dali as d; print("[dali] nvidia.dali", d.__version__, "imports")'
bash /tmp/ngc/lib/clamp-mtimes.sh "$start"
