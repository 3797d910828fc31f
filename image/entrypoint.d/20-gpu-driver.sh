# GPU flavors: warn when no NVIDIA driver or GPU device is visible, and run what follows CPU-only.
# Sets NGC_PADDLE_CPU_ONLY=1 for the commands that follow; 25-driver-version.sh then judges the driver's version.
if [ -n "${NVIDIA_REQUIRE_CUDA:-}" ]; then
  _ngc_has_libcuda=0
  if ldconfig -p 2>/dev/null | grep -v '/compat/' | grep -q 'libcuda\.so\.1'; then _ngc_has_libcuda=1; fi
  for _d in ${LD_LIBRARY_PATH//:/ }; do
    case "$_d" in */compat*) continue ;; esac
    [ -e "$_d/libcuda.so.1" ] && _ngc_has_libcuda=1
  done
  _ngc_has_dev=0
  for _n in /dev/nvidiactl /dev/dxg /dev/nvgpu; do [ -e "$_n" ] && _ngc_has_dev=1; done
  if [ "$_ngc_has_libcuda" = 0 ] || [ "$_ngc_has_dev" = 0 ]; then
    export NGC_PADDLE_CPU_ONLY=1
    # Said once here: GPU Paddle would repeat it at every `import paddle` (a UserWarning: "You are using GPU version
    # Paddle, but your CUDA device is not set properly"), which the image's PYTHONWARNINGS (Dockerfile) silences.
    if [ "${NGC_PADDLE_QUIET:-0}" != 1 ]; then
      cat >&2 <<'MSG'
WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.
   Use the NVIDIA Container Toolkit to start this container with GPU support; see
   https://docs.nvidia.com/datacenter/cloud-native/ .
   Paddle runs on the CPU (its own warning about that at each import is silenced).
MSG
    fi
  fi
  unset _ngc_has_libcuda _ngc_has_dev _n _d
fi
