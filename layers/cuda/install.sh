#!/usr/bin/env bash
# CUDA layer: install its locked wheels and register their library folders with the dynamic loader.
set -euo pipefail
start=$(date +%s)  # what changes from here on is clamped to SOURCE_DATE_EPOCH at the end
python /tmp/ngc/lib/install_pip_layer.py
bash /tmp/ngc/lib/register-libs.sh cuda "/opt/venv/lib/python3*/site-packages/nvidia/*/lib"
bash /tmp/ngc/lib/clamp-mtimes.sh "$start"
