#!/usr/bin/env bash
# TensorRT layer: install its locked wheels and register their library folders with the dynamic loader.
set -euo pipefail
python /tmp/ngc/lib/install_pip_layer.py
bash /tmp/ngc/lib/register-libs.sh tensorrt "/opt/venv/lib/python3*/site-packages/tensorrt_libs"
