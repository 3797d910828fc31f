#!/usr/bin/env bash
# Make sure a container registry answers on 127.0.0.1:${REGISTRY_PORT:-5000}, the release's default push target.
# Where none answers and we are root on Debian, install Debian's docker-registry
# (distribution 2.8) and start it bound to 127.0.0.1 only, with its storage under /var/lib.
# Idempotent: does nothing when a registry already answers on that port (plain HTTP or TLS), whatever its
# TLS and login settings: stop that one (it runs `docker-registry serve /etc/ngc-paddle/registry-PORT/...`)
# to start it with others.
#
# REGISTRY_TLS=1 serves TLS with a certificate signed by a self-signed CA made here with openssl; the CA
# is installed as /etc/docker/certs.d/127.0.0.1:PORT/ca.crt, which dockerd and the docker CLI read at
# each connection (no engine restart). REGISTRY_USER + REGISTRY_PASSWORD require a login (htpasswd
# bcrypt file, made with Debian's apache2-utils htpasswd). Use a port of its own for such a registry
# (e.g. 5443): a test registry with a login must not take the plain default's place.
set -euo pipefail
PORT=${REGISTRY_PORT:-5000}
ADDR=127.0.0.1:$PORT
STORE=${REGISTRY_STORAGE:-/var/lib/ngc-paddle-registry$([ "$PORT" = 5000 ] || echo "-$PORT")}
TLS=${REGISTRY_TLS:-0}
USER_NAME=${REGISTRY_USER:-}
CONF_DIR=/etc/ngc-paddle/registry-$PORT
CONF=$CONF_DIR/config.yml
CERTS=/etc/docker/certs.d/$ADDR
log() { printf '[registry] %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Any HTTP answer from /v2/ counts (401 included: a registry that wants a login answers too).
answers() {
  python3 - "$ADDR" "$CERTS/ca.crt" <<'PY' 2>/dev/null
import ssl, sys, urllib.error, urllib.request
addr, ca = sys.argv[1], sys.argv[2]
for scheme in ("http", "https"):
    context = ssl.create_default_context(cafile=ca) if scheme == "https" else None
    try:
        urllib.request.urlopen(f"{scheme}://{addr}/v2/", timeout=2, context=context)
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except (OSError, ValueError):
        continue
sys.exit(1)
PY
}

apt_install() {  # PACKAGE COMMAND
  command -v "$2" >/dev/null && return 0
  log "installing $1"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$1" >/dev/null 2>&1 \
    || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
         DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$1" >/dev/null; } \
    || die "cannot install $1 from the Debian archive"
}

answers && exit 0
# Two callers at once (two scans, a scan and a release) start one registry: the second waits, then finds it.
mkdir -p /run/lock
exec 9>"/run/lock/ngc-paddle-registry-$PORT.lock"
flock 9
answers && exit 0
[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || die "no registry answers on $ADDR; fix: start one there or pass --registry"
if ! command -v docker-registry >/dev/null; then
  apt_install docker-registry docker-registry
  # The package starts its own service on all interfaces where an init system runs; we start ours below.
  pkill -f '^/usr/bin/docker-registry serve /etc/docker/registry/config.yml' 2>/dev/null || true
fi
mkdir -p "$CONF_DIR" "$STORE"
extra=""
if [ "$TLS" = 1 ]; then
  if [ ! -s "$CONF_DIR/server.crt" ]; then
    log "making a self-signed CA and a certificate for 127.0.0.1 in $CONF_DIR"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=ngc-paddle test registry CA" \
      -keyout "$CONF_DIR/ca.key" -out "$CONF_DIR/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$CONF_DIR/server.key" \
      -out "$CONF_DIR/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$CONF_DIR/san.ext"
    openssl x509 -req -in "$CONF_DIR/server.csr" -CA "$CONF_DIR/ca.crt" -CAkey "$CONF_DIR/ca.key" \
      -CAcreateserial -days 3650 -extfile "$CONF_DIR/san.ext" -out "$CONF_DIR/server.crt" 2>/dev/null
    chmod 600 "$CONF_DIR/ca.key" "$CONF_DIR/server.key"
  fi
  mkdir -p "$CERTS" && cp "$CONF_DIR/ca.crt" "$CERTS/ca.crt"
  extra+="  tls: {certificate: $CONF_DIR/server.crt, key: $CONF_DIR/server.key}"$'\n'
fi
auth=""
if [ -n "$USER_NAME" ]; then
  [ -n "${REGISTRY_PASSWORD:-}" ] || die "REGISTRY_USER without REGISTRY_PASSWORD; fix: set both or neither"
  apt_install apache2-utils htpasswd
  htpasswd -Bbc "$CONF_DIR/htpasswd" "$USER_NAME" "$REGISTRY_PASSWORD" 2>/dev/null
  auth="auth: {htpasswd: {realm: ngc-paddle-$PORT, path: $CONF_DIR/htpasswd}}"
fi
cat > "$CONF" <<YAML
version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: $STORE}, delete: {enabled: true}}
http:
  addr: $ADDR
$extra$auth
YAML
log "starting docker-registry on $ADDR (storage $STORE$([ "$TLS" = 1 ] && echo ", TLS")$([ -n "$USER_NAME" ] && echo ", login required"))"
# distribution reads REGISTRY_* variables as overrides of its config (REGISTRY_STORAGE=/path would replace the
# storage section and stop it with "StorageDriver not registered"): this script's own settings stay here.
env $(compgen -e | grep '^REGISTRY_' | sed 's/^/-u /') setsid docker-registry serve "$CONF" >>"/var/log/ngc-paddle-registry-$PORT.log" 2>&1 </dev/null 9>&- &
for _ in $(seq 1 30); do answers && { log "registry is up"; exit 0; }; sleep 1; done
die "docker-registry did not answer on $ADDR within 30 s: see /var/log/ngc-paddle-registry-$PORT.log"
