#!/usr/bin/env bash
# CUDA layer: install its locked wheels and register their library folders with the dynamic loader.
set -euo pipefail
python /tmp/ngc/lib/install_pip_layer.py
bash /tmp/ngc/lib/register-libs.sh cuda "/opt/venv/lib/python3*/site-packages/nvidia/*/lib"
