#!/bin/bash
# NGC-style entrypoint: run the start-up parts in entrypoint.d in order, then the given command.
# The parts: user environment, threads, banner, GPU/driver checks, shared memory; a shell when no command is given.
# Set NGC_PADDLE_QUIET=1 to silence the start-up messages (they go to stderr).
set -e
for part in /opt/ngc-paddle/entrypoint.d/*.sh; do
  # shellcheck source=/dev/null
  . "$part"
done
[ $# -gt 0 ] || set -- /bin/bash
exec "$@"
