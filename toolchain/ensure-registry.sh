#!/usr/bin/env bash
# Make sure a container registry answers on 127.0.0.1:${REGISTRY_PORT:-5000} (the release pipeline's
# default push target). Where none answers and we are root on Debian, install Debian's docker-registry
# (distribution 2.8) and start it bound to 127.0.0.1 only, with its storage under /var/lib.
# Idempotent: does nothing when the registry already answers.
set -euo pipefail
PORT=${REGISTRY_PORT:-5000}
ADDR=127.0.0.1:$PORT
STORE=${REGISTRY_STORAGE:-/var/lib/ngc-paddle-registry}
CONF=/etc/ngc-paddle/registry-$PORT.yml
log() { printf '[registry] %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

answers() { python3 -c "import urllib.request,sys; urllib.request.urlopen('http://$ADDR/v2/', timeout=2)" 2>/dev/null; }

answers && exit 0
[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || die "no registry answers on $ADDR; fix: start one there or pass --registry"
if ! command -v docker-registry >/dev/null; then
  log "installing docker-registry"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-registry >/dev/null 2>&1 \
    || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
         DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-registry >/dev/null; } \
    || die "cannot install docker-registry from the Debian archive"
  # The package starts its own service on all interfaces where an init system runs; we start ours below.
  pkill -f '^/usr/bin/docker-registry serve /etc/docker/registry/config.yml' 2>/dev/null || true
fi
mkdir -p "$(dirname "$CONF")" "$STORE"
cat > "$CONF" <<YAML
version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: $STORE}, delete: {enabled: true}}
http: {addr: $ADDR}
YAML
log "starting docker-registry on $ADDR (storage $STORE)"
setsid docker-registry serve "$CONF" >>/var/log/ngc-paddle-registry.log 2>&1 </dev/null &
for _ in $(seq 1 30); do answers && { log "registry is up"; exit 0; }; sleep 1; done
die "docker-registry did not answer on $ADDR within 30 s: see /var/log/ngc-paddle-registry.log"
