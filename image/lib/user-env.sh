# Sourced by the entrypoint and by every shipped command: make the image work under any uid.
# `docker run --user UID:GID` with a uid that has no account leaves HOME=/ (not writable), where
# Paddle (~/.cache/paddle), matplotlib (~/.config/matplotlib) and pip want to write. Such a user
# gets a private HOME under /tmp instead; a writable HOME (paddle's /home/paddle, root's /root) is kept.
if [ -z "${HOME:-}" ] || [ "${HOME}" = / ] || [ ! -d "${HOME}" ] || [ ! -w "${HOME}" ]; then
  _ngc_home="/tmp/home-$(id -u)"
  if ! mkdir -p -m 700 "${_ngc_home}" 2>/dev/null || [ ! -O "${_ngc_home}" ] || [ ! -w "${_ngc_home}" ]; then
    _ngc_home=$(mktemp -d /tmp/home-XXXXXX)  # another uid holds the usual name: take a fresh one
  fi
  export HOME="${_ngc_home}"
  unset _ngc_home
fi

# ngc_writable_output DEFAULT ARGS...: exit 2 with one line when the command's --output folder (or
# DEFAULT) cannot be written by this uid, instead of a traceback after minutes of work. The usual
# cause: a bind-mounted folder that Docker created as root:root 755 while the image runs as paddle.
ngc_writable_output() {
  local out="$1" prev="" arg
  shift
  for arg in "$@"; do
    case "${prev}" in --output) out="${arg}" ;; esac
    case "${arg}" in --output=*) out="${arg#--output=}" ;; esac
    prev="${arg}"
  done
  case "${out}" in /*) ;; *) out="${PWD}/${out}" ;; esac
  local probe="${out}"
  while [ ! -e "${probe}" ] && [ "${probe}" != / ]; do probe=$(dirname "${probe}"); done
  if [ ! -d "${probe}" ] || [ ! -w "${probe}" ] || [ ! -x "${probe}" ]; then
    echo "error: ${out}: output folder: not writable by uid $(id -u) (${probe} is owned by" \
         "$(stat -c %u:%g "${probe}" 2>/dev/null || echo '?'), mode $(stat -c %a "${probe}" 2>/dev/null || echo '?'));" \
         "fix: run the container as the folder's owner (docker run --user \"\$(id -u):\$(id -g)\" ...)" \
         "or make the folder writable" >&2
    exit 2
  fi
}
