#!/usr/bin/env bash
# Register the library folders of wheels with the dynamic loader.
# Why: Paddle dlopen()s cuDNN, cuBLAS, NCCL and TensorRT by soname; a wheel's lib folder is not on
# the loader's path unless it is listed in /etc/ld.so.conf.d. Usage: register-libs.sh NAME GLOB...
set -euo pipefail
name=$1; shift
conf=/etc/ld.so.conf.d/ngc-paddle-${name}.conf
: > "$conf"
for pattern in "$@"; do
  for dir in $pattern; do
    [ -d "$dir" ] && echo "$dir" >> "$conf"
  done
done
[ -s "$conf" ] || { echo "NGC-PADDLE-ERROR layer ${name}: no library folder matched $*" >&2; exit 1; }
ldconfig
echo "[${name}] registered $(wc -l < "$conf") library folder(s) with the loader"
