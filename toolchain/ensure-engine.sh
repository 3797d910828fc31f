#!/usr/bin/env bash
# Make sure a Docker engine answers and `docker buildx` is available.
#
# Why: build hosts of this project may be bare Debian machines with only a docker client
# (see shared/docs/toolchain.md). Where no engine answers and we are root on a Debian-like
# system, install docker.io from the distribution and start dockerd with no bridge network;
# install buildx from the next Debian suite as a CLI plugin. Idempotent: does nothing when an
# engine and buildx already work. On any other host it only reports what is missing.
set -euo pipefail

log() { printf '[toolchain] %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

DOCKERD_LOG=${DOCKERD_LOG:-/var/log/ngc-paddle-dockerd.log}
PLUGIN_DIR=${DOCKER_CLI_PLUGIN_DIR:-$HOME/.docker/cli-plugins}
BUILDX_SUITE=${BUILDX_SUITE:-trixie}

engine_answers() { docker info >/dev/null 2>&1; }
is_debian_root() { [ "$(id -u)" = 0 ] && [ -r /etc/debian_version ] && command -v apt-get >/dev/null; }

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

ensure_packages() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  [ "${#missing[@]}" = 0 ] || apt_install "${missing[@]}"
}

start_dockerd() {
  log "starting dockerd (no bridge network; builds and containers use the host network)"
  # setsid: the daemon must outlive the make/CI step that started it.
  setsid dockerd --bridge=none --iptables=false --ip-masq=false >>"$DOCKERD_LOG" 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    engine_answers && { log "dockerd is up"; return 0; }
    sleep 1
  done
  die "dockerd did not answer within 60 s: see $DOCKERD_LOG"
}

# The Debian mirror this machine already uses, so that buildx comes from the same place.
debian_mirror() {
  local m
  m=$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
      | grep -oE 'https?://[^ ]+' | head -n1 || true)
  echo "${m:-http://deb.debian.org/debian}"
}

install_buildx() {
  local tmp mirror deb
  tmp=$(mktemp -d)
  mirror=$(debian_mirror)
  log "fetching docker-buildx from Debian $BUILDX_SUITE ($mirror)"
  mkdir -p "$tmp/lists/partial" "$tmp/debs"
  echo "deb $mirror $BUILDX_SUITE main" >"$tmp/sources.list"
  local opts=(-oDir::Etc::SourceList="$tmp/sources.list" -oDir::Etc::SourceParts=/dev/null
              -oDir::State::Lists="$tmp/lists" -oDir::Cache::Archives="$tmp/debs")
  apt-get "${opts[@]}" update -qq >/dev/null || die "cannot read Debian $BUILDX_SUITE from $mirror: set BUILDX_SUITE or install docker-buildx by hand"
  (cd "$tmp/debs" && apt-get "${opts[@]}" download docker-buildx >/dev/null) || die "cannot download docker-buildx from Debian $BUILDX_SUITE"
  deb=$(ls "$tmp"/debs/docker-buildx_*.deb)
  dpkg -x "$deb" "$tmp/root"
  mkdir -p "$PLUGIN_DIR"
  install -m 0755 "$tmp/root/usr/libexec/docker/cli-plugins/docker-buildx" "$PLUGIN_DIR/docker-buildx"
  rm -rf "$tmp"
}

main() {
  command -v docker >/dev/null || { is_debian_root && apt_install docker.io; } || die "no docker client: install Docker"
  if ! engine_answers; then
    is_debian_root || die "no Docker engine answers and this is not a Debian host where we are root: start dockerd (or set DOCKER_HOST)"
    ensure_packages
    engine_answers || start_dockerd
  fi
  if ! docker buildx version >/dev/null 2>&1; then
    is_debian_root || die "docker buildx is missing: install the buildx CLI plugin"
    install_buildx
    docker buildx version >/dev/null 2>&1 || die "docker buildx still not usable after install"
  fi
  if is_debian_root && ! command -v debootstrap >/dev/null; then apt_install debootstrap; fi
  log "engine: $(docker version -f '{{.Server.Version}}' 2>/dev/null), buildx: $(docker buildx version | awk '{print $2}')"
}

main "$@"
