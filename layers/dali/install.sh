#!/usr/bin/env bash
set -euo pipefail
python /tmp/ngc/lib/install_pip_layer.py
python -c 'import nvidia.dali as d; print("[dali] nvidia.dali", d.__version__, "imports")'
