"""How a gate job starts the image on its node: docker, pyxis (srun --container-image), enroot or apptainer.

Each takes the image of the profile's platform from the release's index where it can be told (docker pull/run
--platform, enroot import --arch, apptainer pull --arch); pyxis imports for the node's own architecture.

The long form: docs/design-notes.md, section `ngc_paddle/release/fleet/containers.py`.
"""

import shlex

from ngc_paddle.engine import CONTAINER_HOSTNAME, GPU_FLAGS

ENTRYPOINT = "/opt/ngc-paddle/entrypoint.sh"
LABEL = "ngc-paddle.slurm-job"

# Flags every docker run of a job gets: no network (a resolvable hostname for Paddle's launcher), quiet banner.
_DOCKER = f"""
NGC_GPU_FLAGS=({shlex.join(GPU_FLAGS[2:])})
ngc_prepare() {{
  if [ "${{NGC_PULL:-1}}" = 1 ] || ! docker image inspect "$NGC_IMAGE" >/dev/null 2>&1; then
    docker pull --quiet --platform "$NGC_PLATFORM" "$NGC_IMAGE" >/dev/null || return 1
  fi
  NGC_RUNTIME_VERSION="docker $(docker version -f '{{{{.Server.Version}}}}' 2>/dev/null)"
  NGC_IMAGE_ID=$(docker image inspect --format '{{{{.Id}}}}' "$NGC_IMAGE" 2>/dev/null)
  NGC_IMAGE_SIZE=$(docker image inspect --format '{{{{.Size}}}}' "$NGC_IMAGE" 2>/dev/null || :)
}}
ngc_flags() {{  # ngc_flags ROOT: a step's docker run flags into NGC_FLAGS (GPUs, CPUs, user, the candidate's env)
  NGC_FLAGS=()
  if [ "$NGC_GPUS" -gt 0 ]; then
    local devices=${{SLURM_JOB_GPUS:-${{CUDA_VISIBLE_DEVICES:-}}}}
    if [ -n "$devices" ]; then NGC_FLAGS+=(--gpus "\\"device=$devices\\""); else NGC_FLAGS+=(--gpus all); fi
    NGC_FLAGS+=("${{NGC_GPU_FLAGS[@]}}")
  fi
  [ -n "${{SLURM_CPUS_PER_TASK:-}}" ] && NGC_FLAGS+=(--cpus "$SLURM_CPUS_PER_TASK")
  if [ "$1" = 1 ]; then NGC_FLAGS+=(--user 0:0); else NGC_FLAGS+=(--user "$NGC_OWNER"); fi
  local env
  for env in ${{NGC_RUN_ENV[@]+"${{NGC_RUN_ENV[@]}}"}}; do NGC_FLAGS+=(-e "$env"); done
}}
ngc_run() {{
  local root=$1 step=$2
  shift 2
  ngc_flags "$root"
  NGC_CONTAINER="ngc-gates-$NGC_TAG-$step"
  docker rm -f "$NGC_CONTAINER" >/dev/null 2>&1
  docker run --rm --name "$NGC_CONTAINER" --platform "$NGC_PLATFORM" --label "{LABEL}=$NGC_LABEL" "${{NGC_FLAGS[@]}}" \\
    --network none \\
    --hostname {CONTAINER_HOSTNAME} --add-host {CONTAINER_HOSTNAME}:127.0.0.1 -e NGC_PADDLE_QUIET=1 \\
    -e NGC_OWNER="$NGC_OWNER" -v "$NGC_OUT:/workspace/out" "$NGC_IMAGE" "$@" &
  NGC_CHILD=$!
  wait "$NGC_CHILD"
}}
# ngc_task STEP TASK STEP_ID RECORD DOCKER_RUN_ARGS...: one task's container, STEP-taskTASK (`@TASK@` in the arguments
# becomes TASK); it appends "task, host, exit code, STEP_ID" to RECORD as it ends. Exported: srun's tasks run it too.
ngc_task() {{
  local name="$1-task$2" task=$2 step_id=$3 record=$4 rc
  shift 4
  docker rm -f "$name" >/dev/null 2>&1
  docker run --rm --name "$name" "${{@//@TASK@/$task}}"
  rc=$?
  printf "%s\\t%s\\t%s\\t%s\\n" "$task" "$(hostname -s)" "$rc" "$step_id" >> "$record"
  return $rc
}}
export -f ngc_task
# ngc_run_tasks STEP RECORD COMMAND...: one container per task of the job (ngc_task), on the host network (the tasks
# reach the master and each other): on Slurm all started by one srun (one Slurm step), a task's number its
# SLURM_PROCID; over SSH (NGC_NODE_RANK set) this host's one task of the launch (the runner starts the other nodes).
ngc_run_tasks() {{
  local step=$1 record=$2 srun_flags=() args
  shift 2
  ngc_flags 0
  NGC_CONTAINER="ngc-gates-$NGC_TAG-$step"
  args=(--platform "$NGC_PLATFORM" --label "{LABEL}=$NGC_LABEL" "${{NGC_FLAGS[@]}}" --network host -e NGC_PADDLE_QUIET=1
        -e NGC_OWNER="$NGC_OWNER" -v "$NGC_OUT:/workspace/out" "$NGC_IMAGE" "$@")
  if [ -n "${{NGC_NODE_RANK:-}}" ]; then
    ngc_task "$NGC_CONTAINER" "$NGC_NODE_RANK" "ssh node $NGC_NODE_RANK" "$record" "${{args[@]}}" &
  else
    [ -n "${{SLURM_CPUS_PER_TASK:-}}" ] && srun_flags+=(--cpus-per-task="$SLURM_CPUS_PER_TASK")
    srun --nodes="$NGC_NODES" --ntasks-per-node="$NGC_TASKS_PER_NODE" \\
      --ntasks="$(( NGC_NODES * NGC_TASKS_PER_NODE ))" "${{srun_flags[@]}}" --kill-on-bad-exit=0 --export=ALL \\
      bash -c 'ngc_task "$1" "$SLURM_PROCID" "$SLURM_JOB_ID.$SLURM_STEP_ID" "${{@:2}}"' ngc-task "$NGC_CONTAINER" \\
      "$record" "${{args[@]}}" &
  fi
  NGC_CHILD=$!
  wait "$NGC_CHILD"
}}
ngc_stop() {{
  [ -n "${{NGC_CONTAINER:-}}" ] && docker rm -f "$NGC_CONTAINER" >/dev/null 2>&1
  if [ -n "${{NGC_CONTAINER:-}}" ] && [ "$(( NGC_NODES * NGC_TASKS_PER_NODE ))" -gt 1 ]; then  # this node's tasks;
    local i  # srun passes the signal to the other nodes' tasks, whose docker run stops its container
    for (( i = 0; i < NGC_NODES * NGC_TASKS_PER_NODE; i++ )); do
      docker rm -f "$NGC_CONTAINER-task$i" >/dev/null 2>&1
    done
    [ -n "${{NGC_CHILD:-}}" ] && kill -TERM "$NGC_CHILD" 2>/dev/null
  fi
  return 0
}}
"""

# pyxis takes no platform: it imports the image with enroot for the node's own architecture, which the job checked
# (uname -m) against the profile's platform before this runs.
_PYXIS = f"""
ngc_prepare() {{
  command -v srun >/dev/null || {{ echo "srun not found: pyxis runs inside a Slurm job" >&2; return 1; }}
  NGC_RUNTIME_VERSION="pyxis ($(srun --version 2>/dev/null))"
  [ "$NGC_ALLOW_HTTP" = 1 ] && export ENROOT_ALLOW_HTTP=yes
  NGC_IMAGE_ID=$NGC_IMAGE
}}
ngc_run() {{
  local root=$1 step=$2 flags=()
  shift 2
  [ "$root" = 1 ] && flags+=(--container-remap-root)
  [ -n "$NGC_GRES" ] && flags+=(--gres="$NGC_GRES")
  srun --ntasks=1 --container-image="$NGC_ENROOT_URI" --container-name="ngc-gates-$NGC_TAG" \\
    --container-mounts="$NGC_OUT:/workspace/out" --container-workdir=/workspace --no-container-mount-home \\
    "${{flags[@]}}" --export=ALL,NGC_PADDLE_QUIET=1,NGC_OWNER="$NGC_OWNER" {ENTRYPOINT} "$@" &
  NGC_CHILD=$!
  wait "$NGC_CHILD"
}}
ngc_stop() {{
  [ -n "${{NGC_CHILD:-}}" ] && kill -TERM "$NGC_CHILD" 2>/dev/null
  return 0
}}
"""

_ENROOT = f"""
ngc_prepare() {{
  [ "$NGC_ALLOW_HTTP" = 1 ] && export ENROOT_ALLOW_HTTP=yes
  NGC_SQSH="${{TMPDIR:-/tmp}}/ngc-gates-$NGC_TAG.sqsh"
  rm -f "$NGC_SQSH"
  enroot import --arch "$NGC_ARCH" --output "$NGC_SQSH" "docker://$NGC_ENROOT_URI" || return 1
  enroot create --force --name "ngc-gates-$NGC_TAG" "$NGC_SQSH" || return 1
  NGC_RUNTIME_VERSION="enroot $(enroot version 2>/dev/null)"
  NGC_IMAGE_ID=$NGC_IMAGE
  NGC_IMAGE_SIZE=$(stat -c %s "$NGC_SQSH" 2>/dev/null || :)
}}
ngc_run() {{
  local root=$1 step=$2 flags=(--rw --mount "$NGC_OUT:/workspace/out" --env NGC_PADDLE_QUIET=1 --env NGC_OWNER)
  shift 2
  [ "$root" = 1 ] && flags+=(--root)
  if [ "$NGC_GPUS" -gt 0 ]; then
    export NVIDIA_VISIBLE_DEVICES=${{SLURM_JOB_GPUS:-${{CUDA_VISIBLE_DEVICES:-all}}}}
    flags+=(--env NVIDIA_VISIBLE_DEVICES)
  fi
  enroot start "${{flags[@]}}" "ngc-gates-$NGC_TAG" {ENTRYPOINT} "$@" &
  NGC_CHILD=$!
  wait "$NGC_CHILD"
}}
ngc_stop() {{
  [ -n "${{NGC_CHILD:-}}" ] && kill -TERM "$NGC_CHILD" 2>/dev/null
  enroot remove --force "ngc-gates-$NGC_TAG" >/dev/null 2>&1
  rm -f "${{NGC_SQSH:-}}"
  return 0
}}
"""

_APPTAINER = f"""
ngc_prepare() {{
  local flags=()
  [ "$NGC_ALLOW_HTTP" = 1 ] && flags+=(--no-https)
  NGC_SIF="${{TMPDIR:-/tmp}}/ngc-gates-$NGC_TAG.sif"
  rm -f "$NGC_SIF"
  apptainer pull --arch "$NGC_ARCH" "${{flags[@]}}" "$NGC_SIF" "docker://$NGC_IMAGE" || return 1
  NGC_RUNTIME_VERSION=$(apptainer --version 2>/dev/null)
  NGC_IMAGE_ID=$NGC_IMAGE
  NGC_IMAGE_SIZE=$(stat -c %s "$NGC_SIF" 2>/dev/null || :)
}}
ngc_run() {{
  local root=$1 step=$2 flags=(--cleanenv --no-home --writable-tmpfs --bind "$NGC_OUT:/workspace/out" --pwd /workspace)
  shift 2
  export APPTAINERENV_NGC_PADDLE_QUIET=1 APPTAINERENV_NGC_OWNER="$NGC_OWNER"
  if [ "$NGC_GPUS" -gt 0 ]; then
    flags+=(--nv)
    [ -n "${{CUDA_VISIBLE_DEVICES:-}}" ] && export APPTAINERENV_CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES
  fi
  apptainer exec "${{flags[@]}}" "$NGC_SIF" {ENTRYPOINT} "$@" &
  NGC_CHILD=$!
  wait "$NGC_CHILD"
}}
ngc_stop() {{
  [ -n "${{NGC_CHILD:-}}" ] && kill -TERM "$NGC_CHILD" 2>/dev/null
  rm -f "${{NGC_SIF:-}}"
  return 0
}}
"""

RUNTIMES = {"docker": _DOCKER, "pyxis": _PYXIS, "enroot": _ENROOT, "apptainer": _APPTAINER}


def functions(runtime: str) -> str:
    """The bash functions ngc_prepare, ngc_run and ngc_stop of `runtime` (a name the fleet schema allowed)."""
    return RUNTIMES[runtime]


def enroot_uri(image: str) -> str:
    """REGISTRY/REPO@sha256:HEX as enroot's and pyxis's URI, REGISTRY#REPO:sha256:HEX (see the module's docstring)."""
    name, _, digest = image.partition("@")
    registry, _, repo = name.partition("/")
    return f"{registry}#{repo}:{digest}"
