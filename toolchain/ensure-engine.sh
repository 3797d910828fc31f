#!/usr/bin/env bash
# Make sure a current Docker engine (26 or newer, containerd image store) answers, with buildx and cosign.
#
# Why: build hosts of this project may be bare Debian 12 machines with only a docker client (see
# shared/docs/toolchain.md). Reproducible image digests (SOURCE_DATE_EPOCH), a registry build cache and
# attestations need BuildKit 0.13 and the containerd image store: Docker Engine 26. Debian 12 ships 20.10;
# Debian 13 (trixie) ships docker.io 26.1, containerd 1.7 and cosign 2.5, whose dependencies Debian 12
# satisfies; bake honours a target's `network` (this daemon has no bridge) from buildx 0.14, which Debian 14
# (forky) has. Where no engine answers and we are root on Debian, this installs those packages and starts
# dockerd with no bridge network, the containerd snapshotter and the network.host build entitlement. An
# engine that already answers is used as is when it is new enough and stores images in containerd;
# otherwise one line says what is needed. Idempotent.
#
# A second engine instance: with DOCKER_HOST=unix:///run/ngc-paddle/engines/NAME.sock (any socket path other
# than the default) and nothing answering there, a dockerd of its own is started on that socket, with its own
# data root (/var/lib/ngc-paddle/engines/NAME), exec root, containerd and cache: a second build host on one
# machine (the shared-cache and reproducibility checks use one; so can developers who must not share tags).
set -euo pipefail

log() { printf '[toolchain] %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

MIN_ENGINE_MAJOR=26
DEFAULT_SOCKET=/var/run/docker.sock
SOCKET=${DOCKER_HOST:-unix://$DEFAULT_SOCKET}
SOCKET=${SOCKET#unix://}
if [ "$SOCKET" = "$DEFAULT_SOCKET" ] || [ "$SOCKET" = /run/docker.sock ]; then
  INSTANCE=""
else
  case "$SOCKET" in /*) ;; *) die "DOCKER_HOST=$DOCKER_HOST: only a local unix socket can be started here; fix: start that engine yourself";; esac
  INSTANCE=$(basename "$SOCKET" .sock)
fi
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/ngc-paddle-dockerd${INSTANCE:+-$INSTANCE}.log}
DAEMON_CONFIG=${DAEMON_CONFIG:-/etc/ngc-paddle/daemon${INSTANCE:+-$INSTANCE}.json}
MIN_BUILDX=0.14  # the first buildx whose bake honours a target's `network` (and knows `entitlements`, `--allow`)
# The engine, its containerd and cosign from Debian 13 (trixie, stable); buildx from Debian 14 (forky), since
# trixie's 0.13 bake drops `network` and this daemon has no bridge to fall back on. All need only libc from
# the host, and the host's own suite gives their other dependencies (trixie's runc and tini need a newer glibc).
ENGINE_SUITE=${ENGINE_SUITE:-trixie}
ENGINE_PACKAGES=(docker.io containerd cosign)
BUILDX_SUITE=${BUILDX_SUITE:-forky}
BUILDX_PACKAGES=(docker-buildx)
HOST_SUITE_PACKAGES=(runc tini iptables adduser libsystemd0 sysvinit-utils debootstrap ca-certificates)

engine_answers() { docker info >/dev/null 2>&1; }
engine_version() { docker version -f '{{.Server.Version}}' 2>/dev/null; }
engine_major() { engine_version | cut -d. -f1; }
# The containerd image store reports its snapshotter as the storage driver's type.
containerd_store() { docker info -f '{{range .DriverStatus}}{{index . 0}}={{index . 1}} {{end}}' 2>/dev/null | grep -q 'driver-type=io.containerd.snapshotter.v1'; }
is_debian_root() { [ "$(id -u)" = 0 ] && [ -r /etc/debian_version ] && command -v apt-get >/dev/null; }
buildx_version() { docker buildx version 2>/dev/null | awk '{print $2}' | grep -oE '^v?[0-9]+\.[0-9]+' | tr -d v; }
have_buildx() { local v; v=$(buildx_version); [ -n "$v" ] && printf '%s\n%s\n' "$MIN_BUILDX" "$v" | sort -V -C; }
engine_missing() { ! have_installed_dockerd || ! command -v containerd >/dev/null || ! command -v cosign >/dev/null; }
have_installed_dockerd() { command -v dockerd >/dev/null && [ "$(dockerd --version | grep -oE '[0-9]+' | head -n1)" -ge "$MIN_ENGINE_MAJOR" ]; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then
    log "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || die "apt-get update failed: check the machine's Debian mirror"
    apt_updated=1
  fi
  log "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
    || die "apt-get install $* failed: check the machine's Debian mirror"
}

# The Debian mirror this machine already uses, so that the next suite comes from the same place.
debian_mirror() {
  local m
  m=$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
      | grep -oE 'https?://[^ ]+' | head -n1 || true)
  echo "${m:-http://deb.debian.org/debian}"
}

# Download SUITE's PACKAGES with a private sources list (the host's apt state is untouched), then install them
# with the host's apt, which takes their dependencies from the host's own suite.
install_from_suite() {  # SUITE PACKAGE...
  local suite=$1 tmp mirror; shift
  tmp=$(mktemp -d)
  mirror=$(debian_mirror)
  log "fetching $* from Debian $suite ($mirror)"
  mkdir -p "$tmp/lists/partial" "$tmp/debs"
  echo "deb $mirror $suite main" >"$tmp/sources.list"
  local opts=(-oDir::Etc::SourceList="$tmp/sources.list" -oDir::Etc::SourceParts=/dev/null
              -oDir::State::Lists="$tmp/lists" -oDir::Cache::Archives="$tmp/debs" -oAPT::Sandbox::User=root)
  apt-get "${opts[@]}" update -qq >/dev/null 2>&1 \
    || die "cannot read Debian $suite from $mirror: set ENGINE_SUITE (Docker Engine $MIN_ENGINE_MAJOR+) or BUILDX_SUITE (buildx $MIN_BUILDX+) to a suite that has it, or install them by hand"
  (cd "$tmp/debs" && apt-get "${opts[@]}" download "$@" >/dev/null 2>&1) \
    || die "cannot download $* from Debian $suite ($mirror)"
  apt_install "${HOST_SUITE_PACKAGES[@]}"
  log "installing $(cd "$tmp/debs" && ls ./*.deb | xargs -n1 basename | tr '\n' ' ')"
  # policy-rc.d: the package must not start its own dockerd (that one would bring a bridge network).
  local policy=/usr/sbin/policy-rc.d restore=""
  [ -e "$policy" ] && { cp -p "$policy" "$tmp/policy-rc.d.orig"; restore=1; }
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$tmp"/debs/*.deb >/dev/null 2>"$tmp/apt.err" \
    || { cat "$tmp/apt.err" >&2; die "installing $* from Debian $suite failed (see above)"; }
  if [ -n "$restore" ]; then cp -p "$tmp/policy-rc.d.orig" "$policy"; else rm -f "$policy"; fi
  rm -rf "$tmp"
}

write_daemon_config() {
  mkdir -p "$(dirname "$DAEMON_CONFIG")"
  # No bridge: builds and containers use the host network, nothing listens beyond 127.0.0.1.
  cat >"$DAEMON_CONFIG" <<'JSON'
{
  "bridge": "none",
  "iptables": false,
  "ip-masq": false,
  "features": {"containerd-snapshotter": true},
  "builder": {"entitlements": {"network-host": true}}
}
JSON
}

start_dockerd() {
  write_daemon_config
  local instance_flags=()
  if [ -n "$INSTANCE" ]; then
    local exec_root=/run/ngc-paddle/engines/$INSTANCE data_root=/var/lib/ngc-paddle/engines/$INSTANCE
    mkdir -p "$(dirname "$SOCKET")" "$exec_root" "$data_root"
    instance_flags=(--host "unix://$SOCKET" --data-root "$data_root" --exec-root "$exec_root"
                    --pidfile "$exec_root/dockerd.pid")
    log "engine instance '$INSTANCE': socket $SOCKET, data root $data_root"
  fi
  log "starting dockerd $(dockerd --version | awk '{print $3}' | tr -d ,) (containerd image store, no bridge network)"
  # setsid: the daemon must outlive the make/CI step that started it.
  setsid dockerd --config-file "$DAEMON_CONFIG" "${instance_flags[@]}" >>"$DOCKERD_LOG" 2>&1 </dev/null &
  for _ in $(seq 1 90); do
    engine_answers && { log "dockerd is up"; return 0; }
    sleep 1
  done
  die "dockerd did not answer within 90 s: see $DOCKERD_LOG"
}

check_running_engine() {
  local version major
  version=$(engine_version)
  major=${version%%.*}
  [[ "$major" =~ ^[0-9]+$ ]] || die "the Docker engine's version cannot be read (docker version said '$version')"
  if [ "$major" -lt "$MIN_ENGINE_MAJOR" ]; then
    die "Docker Engine $version answers; ngc-paddle needs $MIN_ENGINE_MAJOR.0 or newer; fix: stop it and run toolchain/ensure-engine.sh as root on Debian (installs docker.io $MIN_ENGINE_MAJOR from Debian $ENGINE_SUITE), or upgrade it from your distribution / docs.docker.com/engine/install"
  fi
  containerd_store || die "Docker Engine $version answers without the containerd image store; fix: set {\"features\": {\"containerd-snapshotter\": true}} in its daemon.json and restart it"
}

main() {
  command -v docker >/dev/null || { is_debian_root && apt_install docker.io; } || die "no docker client: install Docker"
  if ! engine_answers; then
    is_debian_root || die "no Docker engine answers and this is not a Debian host where we are root: start Docker Engine $MIN_ENGINE_MAJOR+ (or set DOCKER_HOST)"
    engine_missing && install_from_suite "$ENGINE_SUITE" "${ENGINE_PACKAGES[@]}"
    command -v debootstrap >/dev/null || apt_install debootstrap
    engine_answers || start_dockerd
  fi
  check_running_engine
  command -v cosign >/dev/null || { is_debian_root && install_from_suite "$ENGINE_SUITE" cosign; } \
    || die "cosign is missing: install cosign 2.x (Debian: cosign from $ENGINE_SUITE)"
  have_buildx || { is_debian_root && install_from_suite "$BUILDX_SUITE" "${BUILDX_PACKAGES[@]}"; } \
    || die "docker buildx $MIN_BUILDX+ is missing (found: $(buildx_version || echo none)): install the buildx CLI plugin (Debian: docker-buildx from $BUILDX_SUITE)"
  have_buildx || die "docker buildx $(buildx_version) is older than $MIN_BUILDX after installing Debian $BUILDX_SUITE's: a plugin of your own shadows it ($(docker info -f '{{range .ClientInfo.Plugins}}{{if eq .Name "buildx"}}{{.Path}}{{end}}{{end}}' 2>/dev/null)); fix: remove or update it"
  if is_debian_root && ! command -v debootstrap >/dev/null; then apt_install debootstrap; fi
  log "engine: $(engine_version) (containerd image store), buildx: $(docker buildx version | awk '{print $2}'), cosign: $(cosign version 2>/dev/null | awk '/GitVersion/{print $2}')"
}

main "$@"
