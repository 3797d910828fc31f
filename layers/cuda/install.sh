#!/usr/bin/env bash
set -euo pipefail
python /tmp/ngc/lib/install_pip_layer.py
bash /tmp/ngc/lib/register-libs.sh cuda "/opt/venv/lib/python3*/site-packages/nvidia/*/lib"
