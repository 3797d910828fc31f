#!/usr/bin/env bash
# Register library folders with the dynamic loader, and give each versioned library its unversioned name.
# Why: Paddle dlopen()s cuDNN, cuBLAS, NCCL and TensorRT by name; a wheel's or an archive's lib folder is not on
# the loader's path unless it is listed in /etc/ld.so.conf.d. And the names Paddle opens are the unversioned
# development names where it was built without pip's CUDA libraries (Paddle 2.6: libcudnn.so, libcublas.so,
# libnvinfer.so, libnvinfer_plugin.so; paddle/phi/backends/dynload/dynamic_loader.cc and tensorrt.cc), which
# NVIDIA's wheels and TensorRT's tar do not ship (they ship libcudnn.so.8, libnvinfer.so.8...): each folder gets
# `libX.so -> libX.so.N` (the shortest versioned name, the soname) where no libX.so exists, as a CUDA toolkit's
# -dev packages do; ldconfig then caches those names too. layers/declared-files.yaml declares the links.
# Usage: register-libs.sh NAME GLOB...
set -euo pipefail
name=$1; shift
conf=/etc/ld.so.conf.d/ngc-paddle-${name}.conf
: > "$conf"
links=0
for pattern in "$@"; do
  for dir in $pattern; do
    [ -d "$dir" ] || continue
    echo "$dir" >> "$conf"
    # Sorted by name: libX.so.8 comes before libX.so.8.6.1, so the link points at the soname.
    for lib in "$dir"/lib*.so.[0-9]*; do
      [ -e "$lib" ] || continue
      dev="${lib%%.so.*}.so"
      if [ ! -e "$dev" ] && [ ! -L "$dev" ]; then
        ln -s "$(basename "$lib")" "$dev"
        links=$((links + 1))
      fi
    done
  done
done
[ -s "$conf" ] || { echo "NGC-PADDLE-ERROR layer ${name}: no library folder matched $*" >&2; exit 1; }
ldconfig
echo "[${name}] registered $(wc -l < "$conf") library folder(s) with the loader, ${links} unversioned name(s) linked"
