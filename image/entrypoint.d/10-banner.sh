# Banner: product, release, flavor and the key component versions, read from the baked manifest.
if [ "${NGC_PADDLE_QUIET:-0}" != 1 ]; then
  /opt/venv/bin/python /opt/ngc-paddle/lib/banner.py >&2 || echo "WARNING: cannot read /opt/ngc-paddle/manifest.json" >&2
fi
