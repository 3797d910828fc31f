#!/bin/bash
# NGC-style entrypoint: run the start-up parts in entrypoint.d in order (banner, GPU/driver check,
# shared-memory check), then the given command; a shell when none is given.
# Set NGC_PADDLE_QUIET=1 to silence the start-up messages (they go to stderr).
set -e
for part in /opt/ngc-paddle/entrypoint.d/*.sh; do
  # shellcheck source=/dev/null
  . "$part"
done
[ $# -gt 0 ] || set -- /bin/bash
exec "$@"
