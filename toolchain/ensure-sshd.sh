#!/usr/bin/env bash
# Make sure OpenSSH's server and client are installed (Debian 12: openssh-server 9.2), for the fan-out's SSH runner.
#
# Why: the SSH runner's integration test starts an sshd of its own on 127.0.0.1 (its own port, host key and
# authorized key, made by the test; a key loaded into an ssh-agent it starts), so this host needs the binaries
# only: nothing is started here, no system sshd is configured or enabled. Idempotent.
set -euo pipefail
log() { printf '[sshd] %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null && command -v ssh-agent >/dev/null && command -v ssh-keygen >/dev/null \
  && exit 0
[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
  || die "OpenSSH's server is not installed; fix: install openssh-server and openssh-client"
log "installing openssh-server openssh-client"
# The package's scripts try to start the service through an init system; there is none here. The test starts its own.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null 2>&1 \
  || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null \
       && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null; } \
  || die "cannot install openssh-server from the Debian archive; fix: check the machine's Debian mirror"
