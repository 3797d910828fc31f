#!/usr/bin/env bash
# Make room for the test suite on the engine's disk before it starts, and stop early when there is none.
#
# Why: the integration tests build two flavors (the GPU one is ~10 GB), push them to scratch registries and
# unpack them for the scan gate; a disk that fills halfway fails a 30-minute run on "no space left on
# device". This reclaims what only earlier runs left behind (BuildKit cache beyond a cap, dangling images,
# the tests' scratch tags, engine instances no dockerd serves) and fails in one line when even that is not
# enough. It never removes a tagged release image (ngc-paddle:*) or a running instance's data.
set -euo pipefail

log() { printf '[disk] %s\n' "$*" >&2; }

NEED_GIB=${NGC_DISK_NEED_GIB:-30}      # what a full `make test` writes at its peak, with margin
MIN_GIB=${NGC_DISK_MIN_GIB:-15}        # below this after cleaning, the run cannot finish: stop now
CACHE_KEEP=${NGC_BUILD_CACHE_KEEP:-8gb}
DATA_ROOT=$(docker info --format '{{.DockerRootDir}}' 2>/dev/null || echo /var/lib/docker)

free_gib() { df -P -BG "$DATA_ROOT" | awk 'NR==2 {gsub("G","",$4); print $4}'; }

before=$(free_gib)
log "$before GiB free on $DATA_ROOT's disk (a full test run needs about $NEED_GIB)"
if [ "$before" -lt "$NEED_GIB" ]; then
  docker builder prune -f --keep-storage "$CACHE_KEEP" >/dev/null || true
  docker image prune -f >/dev/null || true
  # Pulled and pushed copies (127.0.0.1:PORT/...), a reproducibility run's images: nothing reuses them. A pulled
  # image kept only by its digest (REPO@sha256:..., tag <none>: an A/B's reference, a release's readback) is
  # removed by that reference, which `REPO:<none>` is not: those were never removed and piled up.
  docker images --digests --format '{{.Repository}} {{.Tag}} {{.Digest}}' \
    | awk '$1 ~ /^(127\.0\.0\.1:[0-9]+\/|ngc-paddle-repro)/ {
             if ($2 != "<none>") print $1 ":" $2; else if ($3 != "<none>") print $1 "@" $3 }' \
    | xargs -r docker rmi -f >/dev/null 2>&1 || true
  for dir in /var/lib/ngc-paddle/engines/*/; do
    [ -d "$dir" ] || continue
    name=$(basename "$dir")
    pid=$(cat "/run/ngc-paddle/engines/$name/dockerd.pid" 2>/dev/null || true)
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
      umount -R "/run/ngc-paddle/engines/$name/netns/"* "$dir" 2>/dev/null || true
      rm -rf "$dir" "/run/ngc-paddle/engines/$name" && log "removed engine instance '$name' (no dockerd serves it)"
    fi
  done
  rm -rf /tmp/pytest-of-"$(id -un)" 2>/dev/null || true
  log "$(free_gib) GiB free after removing earlier runs' leftovers"
  # The test session's own images (ngc-paddle-*itest*) last: the next run rebuilds them (gpu-cu118's 7 GB among
  # them, several minutes), and where `make image` built the same layers they share their content and free
  # little. Only when the run could not finish otherwise.
  if [ "$(free_gib)" -lt "$MIN_GIB" ]; then
    docker images --format '{{.Repository}}:{{.Tag}}' | grep -E '^ngc-paddle-[a-z0-9-]*itest' \
      | xargs -r docker rmi -f >/dev/null 2>&1 || true
    log "$(free_gib) GiB free after removing the test session's images (rebuilt by this run)"
  fi
fi
if [ "$(free_gib)" -lt "$MIN_GIB" ]; then
  printf 'error: disk: only %s GiB free on %s, the test suite needs at least %s GiB; fix: free space on that disk (docker system prune -a removes every image)\n' \
    "$(free_gib)" "$DATA_ROOT" "$MIN_GIB" >&2
  exit 1
fi
