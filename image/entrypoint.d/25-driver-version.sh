# GPU flavors with a visible driver: compare its version with what the image's CUDA needs.
# The two figures come from ngc_paddle/driver.py through the baked manifest (cuda.min_driver: the oldest
# driver that runs the image through CUDA minor-version compatibility; cuda.full_driver: the
# driver of the image's CUDA release). Below the minimum CUDA cannot start at all: an ERROR line
# (shown even with NGC_PADDLE_QUIET=1) and the commands that follow run CPU-only. Between the two:
# a WARNING saying what does not work. Runs under the entrypoint's `set -e`: nothing here may fail.
#
# A `cuda-compat` component (NVIDIA's forward-compatibility libraries, cuda-compat-12-x) would plug
# in here: when the host driver is below the minimum on a data-center GPU, put its folder first on
# LD_LIBRARY_PATH, as NGC's images do. This image ships none, so it claims no such support.
if [ -n "${NVIDIA_REQUIRE_CUDA:-}" ] && [ "${NGC_PADDLE_CPU_ONLY:-0}" != 1 ]; then
  _ngc_driver=""
  if command -v nvidia-smi >/dev/null 2>&1; then
    _ngc_driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' \r')
  fi
  if [ -z "$_ngc_driver" ] && [ -r /proc/driver/nvidia/version ]; then
    _ngc_driver=$(sed -n 's/.*Kernel Module *\([0-9.]*\).*/\1/p' /proc/driver/nvidia/version | head -n1)
  fi
  _ngc_py=/opt/venv/bin/python
  [ -x "$_ngc_py" ] || _ngc_py=python3
  _ngc_facts=$("$_ngc_py" -c 'import json, sys
c = json.load(open(sys.argv[1]))["cuda"] or {}
print(c.get("min_driver", ""), c.get("full_driver", ""), c.get("version", ""), sep="|")
print(c.get("limits", ""))' "${NGC_PADDLE_MANIFEST:-/opt/ngc-paddle/manifest.json}" 2>/dev/null || true)
  IFS='|' read -r _ngc_min _ngc_full _ngc_cuda <<<"$(printf '%s\n' "$_ngc_facts" | head -n1)" || true
  _ngc_limits=$(printf '%s\n' "$_ngc_facts" | sed -n 2p)
  # true when $1 is an older version than $2 (dotted numbers, as sort -V orders them)
  _ngc_older() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$1" ]; }
  if printf '%s' "$_ngc_driver" | grep -Eq '^[0-9]+(\.[0-9]+)*$' && [ -n "$_ngc_min" ] && [ -n "$_ngc_full" ]; then
    if _ngc_older "$_ngc_driver" "$_ngc_min"; then
      export NGC_PADDLE_CPU_ONLY=1
      echo "ERROR: NVIDIA driver ${_ngc_driver} cannot run CUDA ${_ngc_cuda}: it needs driver ${_ngc_min} or later (${_ngc_full} or later for full functionality), and this image ships no CUDA forward-compatibility package. GPU functionality will not be available; update the host driver." >&2
    elif _ngc_older "$_ngc_driver" "$_ngc_full" && [ "${NGC_PADDLE_QUIET:-0}" != 1 ]; then
      echo "WARNING: NVIDIA driver ${_ngc_driver} is older than ${_ngc_full}, the driver of CUDA ${_ngc_cuda}; it runs this image through CUDA minor-version compatibility, with limits: ${_ngc_limits}. Update to ${_ngc_full} or later for full functionality." >&2
    fi
  fi
  unset -f _ngc_older
  unset _ngc_driver _ngc_py _ngc_facts _ngc_min _ngc_full _ngc_cuda _ngc_limits
fi
