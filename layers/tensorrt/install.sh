#!/usr/bin/env bash
# TensorRT layer: install its locked wheels or its locked vendor archive, and register the library folders with the
# dynamic loader (with the unversioned names Paddle dlopen()s: libnvinfer.so, libnvinfer_plugin.so).
set -euo pipefail
start=$(date +%s)  # what changes from here on is clamped to SOURCE_DATE_EPOCH at the end
# An optional layer whose lock is pending (its source unreachable when locking): one line, nothing installed.
if python /tmp/ngc/lib/install_pip_layer.py --left-out; then exit 0; fi
python /tmp/ngc/lib/install_pip_layer.py
# gpu-cu118: TensorRT 8.6.1.6 for CUDA 11.8 from NVIDIA's tar (its libraries, its cp311 wheel).
python /tmp/ngc/lib/install_archive_layer.py
# TensorRT 10's wheels (gpu) keep the libraries in tensorrt_libs/; an archive's are where its spec says.
# shellcheck disable=SC2046  # one folder per word
bash /tmp/ngc/lib/register-libs.sh tensorrt "/opt/venv/lib/python3*/site-packages/tensorrt_libs" \
  $(python /tmp/ngc/lib/install_archive_layer.py --libraries)
bash /tmp/ngc/lib/clamp-mtimes.sh "$start"
