#!/usr/bin/env bash
# Make what one build step wrote the same in every build: clamp its mtimes to SOURCE_DATE_EPOCH and
# empty the loader's aux cache. Usage: clamp-mtimes.sh STEP_START (seconds since the epoch, `date +%s`
# taken at the start of the step).
# Why: a layer tar records each file's mtime, so two builds of the same lock differ in every file they
# write. BuildKit 0.13 can rewrite them itself (exporter option rewrite-timestamp=true), but the BuildKit
# embedded in dockerd 20.10 (this project's engine) ignores both that option and SOURCE_DATE_EPOCH:
# checked with perf/image_build/bench_repro.py. Only what changed since the step started is touched:
# touching older files would copy them up into this layer. What BuildKit itself would stamp (mount points,
# secret stubs, /etc from its hosts/resolv.conf stubs) never reaches the layer: every mount lies under a
# tmpfs at /tmp, and the os layer ships /etc/hosts and /etc/resolv.conf (layers/os/Dockerfile).
set -euo pipefail
since=${1:?usage: clamp-mtimes.sh STEP_START}
# Caches the step's own runs wrote in root's home (Paddle's first import writes ~/.cache/paddle): not part
# of the image. No layer below has ~/.cache (pip's cache is a mount under /tmp), so this leaves no whiteout.
rm -rf /root/.cache
[ -n "${SOURCE_DATE_EPOCH:-}" ] || exit 0
# ldconfig's aux cache holds inode numbers and ctimes of the libraries: a speed-up that differs per build
# (emptied rather than removed: a removal of the base's file would leave a whiteout stamped with the build time).
[ ! -s /var/cache/ldconfig/aux-cache ] || : > /var/cache/ldconfig/aux-cache
# -xdev: the image's own filesystem only (not /proc, /sys, the bind, cache and secret mounts).
find / -xdev -newermt "@$((since - 60))" -exec touch --no-dereference --date="@${SOURCE_DATE_EPOCH}" {} + \
  2>/dev/null || true
