#!/usr/bin/env bash
# Make sure this machine runs containers of a foreign platform (linux/arm64 on an amd64 host) under emulation.
#
# Why: a build or lock that asks for another platform than the host's runs that platform's programs (apt in the
# trial install of the os layer, the build's RUN steps, `docker run --platform`) through qemu's user-mode
# emulator, registered with the kernel's binfmt_misc. Debian 12's qemu-user-static (7.2) and binfmt-support do
# this: with binfmt_misc mounted, the package registers qemu-aarch64 with the F flag (the kernel opens the
# interpreter once, so it works inside containers, whose root has no /usr/bin/qemu-aarch64-static).
# Idempotent: nothing is installed or registered twice. Usage: ensure-qemu.sh [MACHINE...]: the qemu names of
# the platforms' machines (default aarch64: linux/arm64; ngc_paddle/platforms.py maps a platform to its machine
# and calls this only for a foreign one); the host's own machine needs nothing. Every failure is one line naming
# the fix.
set -euo pipefail

log() { printf '[toolchain] %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

BINFMT=${BINFMT_MISC:-/proc/sys/fs/binfmt_misc}
PACKAGES=(qemu-user-static binfmt-support arch-test)  # arch-test: mmdebstrap --arch of a foreign architecture

# The machines Debian 12's qemu-user-static registers (its /usr/share/binfmts/qemu-*), known before it is
# installed: /usr/share/binfmts itself exists on hosts without it (other packages put formats there).
QEMU_MACHINES=" aarch64 aarch64_be alpha arm armeb cris hexagon hppa i386 loongarch64 m68k microblaze microblazeel mips
 mips64 mips64el mipsel mipsn32 mipsn32el or1k ppc ppc64 ppc64le riscv32 riscv64 s390x sh4 sh4eb sparc sparc32plus
 sparc64 x86_64 xtensa xtensaeb "

# The qemu emulator (binfmt entry qemu-MACHINE) a machine runs under; empty for the host's own machine.
emulator_for() {  # MACHINE
  [ "$1" = "$(uname -m)" ] && return 0
  if dpkg-query -W -f '${db:Status-Abbrev}' qemu-user-static 2>/dev/null | grep -q '^ii'; then
    [[ "$1" =~ ^[a-z0-9_]+$ ]] && [ -e "/usr/share/binfmts/qemu-$1" ]
  else
    [[ "$1" =~ ^[a-z0-9_]+$ && "$QEMU_MACHINES" == *" $1 "* ]]
  fi || die "no qemu emulator for machine '$1'; fix: name a machine qemu-user-static emulates (e.g. aarch64)"
  echo "$1"
}

registered() {  # NAME: enabled, with the F (fix binary) flag
  [ -r "$BINFMT/qemu-$1" ] && grep -qx enabled "$BINFMT/qemu-$1" && grep -qE '^flags: .*F' "$BINFMT/qemu-$1"
}

ensure_mounted() {
  [ -e "$BINFMT/register" ] && return 0
  [ "$(id -u)" = 0 ] || die "binfmt_misc is not mounted at $BINFMT and this is not root; fix: as root, run mount -t binfmt_misc binfmt_misc $BINFMT (or bash toolchain/ensure-qemu.sh)"
  log "mounting binfmt_misc at $BINFMT"
  mount -t binfmt_misc binfmt_misc "$BINFMT" 2>/dev/null \
    || die "binfmt_misc cannot be mounted at $BINFMT (a container without CAP_SYS_ADMIN, or a kernel without CONFIG_BINFMT_MISC); fix: on the host, run modprobe binfmt_misc && mount -t binfmt_misc binfmt_misc $BINFMT, or build on a native host of the platform"
}

ensure_packages() {
  local missing=() pkg
  for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f '${db:Status-Abbrev}' "$pkg" 2>/dev/null | grep -q '^ii' || missing+=("$pkg")
  done
  [ "${#missing[@]}" = 0 ] && return 0
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
    || die "${missing[*]} not installed and this is not a Debian host where we are root; fix: install ${PACKAGES[*]} (or register qemu with tonistiigi/binfmt)"
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || die "apt-get update failed; fix: check the machine's Debian mirror"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed; fix: check the machine's Debian mirror"
}

main() {
  local machines=("${@:-aarch64}") wanted=() machine name
  for machine in "${machines[@]}"; do
    name=$(emulator_for "$machine")
    [ -n "$name" ] && wanted+=("$name")
  done
  [ "${#wanted[@]}" = 0 ] && return 0  # the host's own platform
  ensure_mounted
  ensure_packages
  for name in "${wanted[@]}"; do
    registered "$name" && continue
    log "registering qemu-$name with binfmt_misc"
    update-binfmts --import "qemu-$name" >/dev/null 2>&1 || true
    update-binfmts --enable "qemu-$name" >/dev/null 2>&1 || true
    registered "$name" || die "qemu-$name is not registered with the F flag in $BINFMT; fix: run update-binfmts --enable qemu-$name as root (Debian's qemu-user-static registers it so), or docker run --privileged --rm tonistiigi/binfmt --install $name"
  done
}

main "$@"
