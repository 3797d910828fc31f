#!/usr/bin/env bash
# OS layer: Debian archive from the manifest, Python and the runtime libraries, one venv.
# All values arrive as build arguments generated from the release manifest.
set -euo pipefail
: "${APT_MIRROR:?}" "${APT_SUITE:?}" "${APT_PACKAGES:?}" "${PYTHON_VERSION:?}"

fail() { echo "NGC-PADDLE-ERROR layer os: $*" >&2; exit 1; }
start=$(date +%s)  # what changes from here on is clamped to SOURCE_DATE_EPOCH at the end

# Use the archive the manifest names, whatever the base image came with.
rm -f /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list
{
  echo "deb ${APT_MIRROR} ${APT_SUITE} main"
  echo "deb ${APT_MIRROR} ${APT_SUITE}-updates main"
  [ -z "${APT_SECURITY:-}" ] || echo "deb ${APT_SECURITY} ${APT_SUITE}-security main"
} > /etc/apt/sources.list
# Keep downloaded packages in the cache mount instead of deleting them (debian images do by default).
rm -f /etc/apt/apt.conf.d/docker-clean
apt_opts=()
ca=/tmp/ngc/secrets/ca  # the build's CA secret (a trial run of `ngc-paddle lock` mounts it there too)
[ ! -s "$ca" ] || apt_opts+=(-o "Acquire::https::CaInfo=$ca")

export DEBIAN_FRONTEND=noninteractive
apt-get "${apt_opts[@]}" update -qq || fail "component python: Debian archive ${APT_MIRROR} ${APT_SUITE} cannot be read; fix: check sources.debian in the manifest or the network"
# Without a lock (only while `ngc-paddle lock` resolves the layer in a throwaway container) take what
# -updates and -security have fixed since the base's point release, so the lock pins the fixed versions
# of base packages too (the scan's freshness check blocks an image that lacks a published security
# update: re-lock to take new ones). With a lock, nothing floats: every changed package is in APT_PACKAGES.
if [ "${APT_UPGRADE:-0}" = 1 ]; then
  apt-get "${apt_opts[@]}" upgrade -y -qq --no-install-recommends \
    || fail "component os: cannot apply the updates of ${APT_SUITE}-updates/-security; fix: check sources.debian in the manifest or the network"
fi
# APT_PACKAGES: every package the layer adds, pinned as pkg=version by the flavor's lock (unpinned
# names only while `ngc-paddle lock` resolves them in a throwaway container).
# shellcheck disable=SC2086  # APT_PACKAGES is a space-separated list
if ! apt_out=$(apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends ${APT_PACKAGES} 2>&1); then
  echo "$apt_out"
  first=$(grep -m1 '^E:' <<<"$apt_out" || echo "apt-get install failed")
  fail "component python: cannot install the locked Debian packages from ${APT_MIRROR} ${APT_SUITE}: ${first#E: }; fix: the archive no longer has a locked version (or cannot be read): run ngc-paddle lock for this flavor and commit the lock"
fi
echo "$apt_out" | tail -n 3

found=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$found" = "$PYTHON_VERSION" ] || fail "component python: the manifest pins Python ${PYTHON_VERSION} but ${APT_SUITE} provides ${found}; fix: pin python ${found} or use a suite that ships ${PYTHON_VERSION}"

# No pip of Debian's in the venv: pip, setuptools and wheel are locked entries of the first pip layer.
python3 -m venv --without-pip /opt/venv
# No caches, logs or apt lists in the layer (the lists live in a cache mount). dpkg.log is the base's own
# file: emptied, not removed, since a removal leaves a whiteout stamped with the build time.
rm -rf /var/log/apt/* /root/.cache
: > /var/log/dpkg.log
# Only in a build (SOURCE_DATE_EPOCH from the lock, layers/lib mounted); not in `ngc-paddle lock`'s trial run.
[ -z "${SOURCE_DATE_EPOCH:-}" ] || bash /tmp/ngc/lib/clamp-mtimes.sh "$start"
