#!/usr/bin/env bash
# TensorRT layer: install its locked wheels and register their library folders with the dynamic loader.
set -euo pipefail
start=$(date +%s)  # what changes from here on is clamped to SOURCE_DATE_EPOCH at the end
python /tmp/ngc/lib/install_pip_layer.py
bash /tmp/ngc/lib/register-libs.sh tensorrt "/opt/venv/lib/python3*/site-packages/tensorrt_libs"
bash /tmp/ngc/lib/clamp-mtimes.sh "$start"
