#!/usr/bin/env bash
# DALI layer: install its locked wheels, then check that nvidia.dali imports.
set -euo pipefail
python /tmp/ngc/lib/install_pip_layer.py
python -c 'import nvidia.dali as d; print("[dali] nvidia.dali", d.__version__, "imports")'
