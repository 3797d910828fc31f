#!/usr/bin/env bash
# TensorRT layer: install its locked wheels and register their library folders with the dynamic loader.
set -euo pipefail
start=$(date +%s)  # what changes from here on is clamped to SOURCE_DATE_EPOCH at the end
# An optional layer whose lock is pending (no NVIDIA index reached when locking): one line, nothing installed.
if python /tmp/ngc/lib/install_pip_layer.py --left-out; then exit 0; fi
python /tmp/ngc/lib/install_pip_layer.py
# TensorRT 10's wheels keep the libraries in tensorrt_libs/; TensorRT 8.5's single wheel beside its bindings.
bash /tmp/ngc/lib/register-libs.sh tensorrt "/opt/venv/lib/python3*/site-packages/tensorrt_libs" \
  "/opt/venv/lib/python3*/site-packages/tensorrt"
bash /tmp/ngc/lib/clamp-mtimes.sh "$start"
