# Any uid works: a private HOME when the given one is not writable (see /opt/ngc-paddle/lib/user-env.sh).
# shellcheck source=/dev/null
. /opt/ngc-paddle/lib/user-env.sh
