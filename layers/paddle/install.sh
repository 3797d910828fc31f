#!/usr/bin/env bash
# Paddle layer: install its locked wheels, then check that paddle imports.
set -euo pipefail
start=$(date +%s)  # what changes from here on is clamped to SOURCE_DATE_EPOCH at the end
python /tmp/ngc/lib/install_pip_layer.py
# A wheel that installs but cannot import is a failed layer, not a finished one.
PYTHONDONTWRITEBYTECODE=1 python -c 'import paddle; print("[paddle] paddle", paddle.__version__, "imports")' \
  || { echo "NGC-PADDLE-ERROR layer paddle: component paddle installed but 'import paddle' fails; fix: check that the paddle build matches the flavor's CUDA/cuDNN pins" >&2; exit 1; }
bash /tmp/ngc/lib/clamp-mtimes.sh "$start"
