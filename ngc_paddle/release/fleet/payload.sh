# The body of a gate job (ngc_paddle/release/fleet/payload.py puts the job's variables and the container runtime's
# functions above it): record the node's facts, get the image by digest, run the validation and each benchmark
# with the profile's options, and leave everything in the job's folder, which the release reads back.
#
# Folder ($NGC_OUT, seen by the node and by the release's host): inputs/ (baselines), attempt-N/ per start of
# the job (a Slurm requeue starts it again: SLURM_RESTART_COUNT): pid, facts.txt, steps.tsv (step, exit code,
# seconds), validation/, bench/<command>/<run>/, bench-ab/ (the A/B part, below), outcome (one line: done |
# no-gpu: WHY | wrong-machine: WHY | start-failed: WHY | interrupted: SIGNAL).
# The A/B part (NGC_REFERENCE_IMAGE set, NGC_AB_ROUNDS > 0; ngc_paddle.release.ab reads it): the reference image is got like
# the candidate, then both run on this node in rounds, order alternated (round-01 candidate then reference, round-02
# reference then candidate, ...), each round each image running the validation suite (NGC_AB_VALIDATE: its wall time
# is a metric) and every benchmark of NGC_AB_NAMES with its NGC_AB_ARGS_i (a job of several tasks: one container per
# task in one srun step, as its own run; <command>/task-N/ each, <command>.tasks.tsv the tasks). With NGC_AB_WARMUP=1 a round-00 runs
# first (reference, then candidate) and is discarded: the first start of each image on the node pays for the
# image's files coming into the page cache and for the runtime's first start. Inside each run the benchmark itself
# discards its warm-up steps, the first batches after each switch of image. bench-ab/: facts.txt (both images: name,
# digest, id, size), rounds.tsv (round, image, step, exit code, start epoch, milliseconds), round-NN/{candidate,reference}/
# (validation/, <command>/<run>/result.json), outcome (done | reference-failed: WHY | interrupted: SIGNAL). Exit: 0 when the gates ran (their verdicts are in the folder, not in this code) or the
# node has no GPU for a GPU profile or is another machine than the profile's platform; 75 when the image could not
# be started (the release counts the job NOT RUN and requeues it once); 143/130 when stopped by SIGTERM/SIGINT (scancel, a time limit, Ctrl-C), after stopping
# the container. Only bash, coreutils and the container runtime are needed on the node (and nvidia-smi on GPU
# nodes, which the NVIDIA driver installs).
set -u
umask 022

NGC_ATTEMPT=${NGC_ATTEMPT:-$(( ${SLURM_RESTART_COUNT:-0} + 1 ))}
NGC_DIR="$NGC_OUT/attempt-$NGC_ATTEMPT"
NGC_JOB_ID=${SLURM_ARRAY_JOB_ID:+${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}}
NGC_JOB_ID=${NGC_JOB_ID:-${SLURM_JOB_ID:-$$}}
NGC_LABEL="${SLURM_CLUSTER_NAME:-cluster}/${SLURM_JOB_ID:-local-$$}"
NGC_TAG="${NGC_JOB_ID//[^A-Za-z0-9_.-]/-}-$NGC_ATTEMPT"
NGC_OWNER="$(id -u):$(id -g)"
NGC_CONTAINER=""
NGC_CHILD=""
[ -n "${NGC_DOCKER_HOST:-}" ] && export DOCKER_HOST="$NGC_DOCKER_HOST"

# Several tasks (NGC_NODES x NGC_TASKS_PER_NODE > 1): each benchmark runs as one container per task, all in one srun
# step, joined as the nodes of one Paddle launch. The master is the first node of the job's node list at a port
# derived from the job id; when the job has one node every task is on it, and the loopback keeps the ranks there.
# The port is the first from there that no socket of this host (the batch script runs on the job's first node, the
# master) listens on: two jobs whose ids meet modulo NGC_PORTS, or a service on the port, would otherwise meet at one
# master (a launcher joining another job's rendezvous). bench/<command>/task-N/ is each task's output (rank 0's task
# holds the report), bench/<command>/tasks.tsv the tasks (task, host, exit code).
# Over SSH (NGC_NODE_RANK set) the runner starts this script on each of the profile's hosts, one node each, and
# hands every node the master (NGC_SSH_MASTER, the first host) and the hosts (NGC_SSH_NODES); it asks the first host
# for the port first: `bash job.sh --master-port` prints it and exits (or exits 75 when none is free), before the
# job's folder is touched. NGC_PORT_SEED (the runner's number for the job) stands in for the Slurm job id.
NGC_PORT_BASE=20000
NGC_PORTS=20000
NGC_PORT_TRIES=64
ngc_port_listened() {  # ngc_port_listened PORT: a TCP socket of this host listens on PORT (/proc/net/tcp*, state 0A)
  local hex
  hex=$(printf '%04X' "$1")
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -Eq "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:[0-9A-F]+ 0A "
}
ngc_master_port() {  # the job id's port, or the next one no socket here listens on; none in NGC_PORT_TRIES: exit 1
  local port=$(( NGC_PORT_BASE + NGC_PORT_SEED % NGC_PORTS )) try
  for (( try = 0; try < NGC_PORT_TRIES; try++ )); do
    ngc_port_listened "$port" || { echo "$port"; return 0; }
    port=$(( NGC_PORT_BASE + (port - NGC_PORT_BASE + 1) % NGC_PORTS ))
  done
  return 1
}
NGC_PORT_SEED=${NGC_PORT_SEED:-${SLURM_JOB_ID:-$$}}
if [ "${1:-}" = --master-port ]; then
  ngc_master_port || exit 75
  exit 0
fi

mkdir -p "$NGC_DIR/validation" "$NGC_DIR/bench" || { echo "error: cannot write $NGC_DIR" >&2; exit 75; }
echo $$ > "$NGC_DIR/pid"
: > "$NGC_DIR/steps.tsv"

ngc_outcome() { printf '%s\n' "$*" > "$NGC_DIR/outcome.tmp" && mv "$NGC_DIR/outcome.tmp" "$NGC_DIR/outcome"; }

ngc_on_signal() {
  trap '' TERM INT
  echo "ngc-paddle gate job $NGC_JOB_ID: $1, stopping" >&2
  ngc_stop
  if [ -n "${NGC_AB_DIR:-}" ] && [ ! -f "$NGC_AB_DIR/outcome" ]; then
    echo "interrupted: $1" > "$NGC_AB_DIR/outcome"
    if [ "$NGC_SIDE" = candidate ]; then ngc_side reference; else ngc_side candidate; fi
    ngc_stop
  fi
  ngc_outcome "interrupted: $1"
  exit "$2"
}
trap 'ngc_on_signal SIGTERM 143' TERM
trap 'ngc_on_signal SIGINT 130' INT

ngc_facts() {
  echo "hostname=$(hostname -s 2>/dev/null || hostname)"
  echo "slurm_job=${SLURM_JOB_ID:+$NGC_JOB_ID}"
  echo "slurm_node=${SLURMD_NODENAME:-}"
  if [ "$NGC_TASKS" -gt 1 ]; then  # a data-parallel job: its node list, tasks and master
    if [ -n "${NGC_NODE_RANK:-}" ]; then
      echo "nodes=$NGC_SSH_NODES"
      echo "node_rank=$NGC_NODE_RANK"
    else
      echo "slurm_nodes=$(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null | paste -sd, -)"
    fi
    echo "tasks=$NGC_TASKS"
    echo "master=$NGC_MASTER"
  fi
  echo "cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n1)"
  echo "cpus=$(nproc 2>/dev/null)"
  local names="" count=0 driver="" wanted=",${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}},"
  if command -v nvidia-smi >/dev/null 2>&1; then
    while IFS=, read -r index name version; do
      index=${index// /}
      [ "$wanted" = ",," ] || [[ "$wanted" == *",$index,"* ]] || continue
      names+="${names:+;}${name# }"; driver=${version# }; count=$((count + 1))
    done < <(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null)
    echo "cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n1)"
  fi
  echo "gpu_names=$names"
  echo "gpu_count=$count"
  echo "driver=$driver"
}

ngc_step() {  # ngc_step NAME ROOT COMMAND...: run one command of the image, record its exit code and seconds
  local name=$1 root=$2 start rc
  shift 2
  start=$(date +%s)
  echo "== $NGC_CELL: $name" >&2
  ngc_run "$root" "$name" "$@"
  rc=$?
  NGC_CONTAINER=""
  NGC_CHILD=""
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - start ))" >> "$NGC_DIR/steps.tsv"
}

NGC_TASKS=$(( NGC_NODES * NGC_TASKS_PER_NODE ))
NGC_MASTER=""
if [ "$NGC_TASKS" -gt 1 ] && [ -n "${NGC_NODE_RANK:-}" ]; then  # SSH: the runner chose the master and its port
  NGC_MASTER=$NGC_SSH_MASTER
elif [ "$NGC_TASKS" -gt 1 ]; then
  NGC_MASTER_HOST=$(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null | head -n1)
  [ "${SLURM_JOB_NUM_NODES:-1}" = 1 ] && NGC_MASTER_HOST=127.0.0.1
  if ! NGC_MASTER_PORT=$(ngc_master_port); then
    NGC_PORT_FIRST=$(( NGC_PORT_BASE + NGC_PORT_SEED % NGC_PORTS ))
    ngc_outcome "start-failed: no free port for the data-parallel master on $(hostname -s): $NGC_PORT_FIRST and" \
      "the $(( NGC_PORT_TRIES - 1 )) ports after it are listened on; fix: free one, or submit the job again"
    cat "$NGC_DIR/outcome" >&2
    exit 75
  fi
  NGC_MASTER="${NGC_MASTER_HOST:-127.0.0.1}:$NGC_MASTER_PORT"
fi

ngc_tasks_step() {  # ngc_tasks_step NAME COMMAND...: ngc_step's record for a step of every task
  local name=$1 start rc
  shift
  start=$(date +%s)
  echo "== $NGC_CELL: $name on $NGC_TASKS tasks (master $NGC_MASTER)" >&2
  mkdir -p "$NGC_DIR/bench/$name"
  : > "$NGC_DIR/bench/$name/tasks.tsv"
  ngc_run_tasks "$name" "$NGC_DIR/bench/$name/tasks.tsv" "$@"
  rc=$?
  NGC_CONTAINER=""
  NGC_CHILD=""
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - start ))" >> "$NGC_DIR/steps.tsv"
}

# The A/B part. NGC_SIDE is the image the runtime's functions start (NGC_IMAGE ...); ngc_side switches it, keeping
# what ngc_prepare set for each image (a runtime's files, its id and size).
NGC_SIDE=candidate
NGC_AB_DIR=""
NGC_RUN_ENV=()
declare -A NGC_SIDES=([reference:NGC_IMAGE]="$NGC_REFERENCE_IMAGE" [reference:NGC_ENROOT_URI]="$NGC_REFERENCE_URI"
                      [reference:NGC_TAG]="$NGC_TAG-ref")
NGC_SIDE_VARS=(NGC_IMAGE NGC_ENROOT_URI NGC_TAG NGC_SIF NGC_SQSH NGC_IMAGE_ID NGC_IMAGE_SIZE)

ngc_side() {  # ngc_side candidate|reference
  local var
  for var in "${NGC_SIDE_VARS[@]}"; do NGC_SIDES[$NGC_SIDE:$var]=${!var:-}; done
  NGC_SIDE=$1
  for var in "${NGC_SIDE_VARS[@]}"; do printf -v "$var" '%s' "${NGC_SIDES[$NGC_SIDE:$var]:-}"; done
  NGC_RUN_ENV=()
  [ "$NGC_SIDE" = candidate ] && NGC_RUN_ENV=(${NGC_CANDIDATE_ENV[@]+"${NGC_CANDIDATE_ENV[@]}"})
  return 0
}

ngc_ab_facts() {
  echo "${NGC_SIDE}_image=$NGC_IMAGE"
  echo "${NGC_SIDE}_digest=$([[ "$NGC_IMAGE" == *@* ]] && echo "${NGC_IMAGE##*@}")"
  echo "${NGC_SIDE}_id=${NGC_IMAGE_ID:-}"
  echo "${NGC_SIDE}_size=${NGC_IMAGE_SIZE:-}"
  [ "$NGC_SIDE" = candidate ] && [ "${#NGC_CANDIDATE_ENV[@]}" -gt 0 ] && echo "candidate_env=${NGC_CANDIDATE_ENV[*]}"
  return 0
}

ngc_ab_step() {  # ngc_ab_step ROUND NAME ROOT|tasks COMMAND...: one run of the current image in an A/B round
  local round=$1 name=$2 root=$3 start=${EPOCHREALTIME/[.,]/} rc record
  shift 3
  echo "== $NGC_CELL: A/B $round $NGC_SIDE $name" >&2
  if [ "$root" = tasks ]; then  # one container per task in one srun step, as the profile's own run (tasks.tsv)
    record="$NGC_AB_DIR/$round/$NGC_SIDE/$name.tasks.tsv"
    mkdir -p "${record%/*}" && : > "$record"
    ngc_run_tasks "ab-$round-$name" "$record" "$@"
  else
    ngc_run "$root" "ab-$round-$name" "$@"
  fi
  rc=$?
  NGC_CONTAINER=""
  NGC_CHILD=""
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$NGC_SIDE" "$name" "$rc" "$(( start / 1000000 ))" \
    "$(( (${EPOCHREALTIME/[.,]/} - start) / 1000 ))" >> "$NGC_AB_DIR/rounds.tsv"
}

ngc_ab() {
  local r round side i command order where
  NGC_AB_DIR="$NGC_DIR/bench-ab"
  mkdir -p "$NGC_AB_DIR"
  : > "$NGC_AB_DIR/rounds.tsv"
  ngc_ab_facts > "$NGC_AB_DIR/facts.txt"
  ngc_side reference
  if ! ngc_prepare > "$NGC_AB_DIR/prepare.log" 2>&1; then
    echo "reference-failed: cannot get $NGC_IMAGE: $(grep -v '^[[:space:]]*$' "$NGC_AB_DIR/prepare.log" | tail -n1 \
      | cut -c1-240)" > "$NGC_AB_DIR/outcome"
    ngc_stop
    ngc_side candidate
    return 0
  fi
  ngc_ab_facts >> "$NGC_AB_DIR/facts.txt"
  for (( r = 1 - NGC_AB_WARMUP; r <= NGC_AB_ROUNDS; r++ )); do
    round=$(printf 'round-%02d' "$r")
    if (( r % 2 )); then order=(candidate reference); else order=(reference candidate); fi
    for side in "${order[@]}"; do
      ngc_side "$side"
      where="$out/bench-ab/$round/$side"
      if [ "$NGC_AB_VALIDATE" = 1 ]; then
        ngc_ab_step "$round" validate 1 bash -c 'validate "$@"; rc=$?; chown -R "$NGC_OWNER" "$0" 2>/dev/null; exit $rc' \
          "$where/validation" --output "$where/validation" "${NGC_AB_VALIDATE_ARGS[@]}"
      fi
      for i in "${!NGC_AB_NAMES[@]}"; do
        command=${NGC_AB_NAMES[$i]}
        declare -n ab_args="NGC_AB_ARGS_$i"
        if [ "$NGC_TASKS" -gt 1 ]; then  # the same tasks as the profile's run: the rounds compare like with like
          ngc_ab_step "$round" "$command" tasks "$command" --output "$where/$command/task-@TASK@" \
            --nnodes "$NGC_TASKS" --master "$NGC_MASTER" "${ab_args[@]}"
        else
          ngc_ab_step "$round" "$command" 0 "$command" --output "$where/$command" "${ab_args[@]}"
        fi
        unset -n ab_args
      done
    done
  done
  ngc_side reference
  ngc_stop
  ngc_side candidate
  echo done > "$NGC_AB_DIR/outcome"
}

ngc_facts > "$NGC_DIR/facts.txt"
# The node's own machine before anything runs: a node of another architecture would pull the index's other entry, or
# run this platform's image under emulation (binfmt_misc), and an emulated run is no verdict. NOT RUN, not requeued.
NGC_NODE_MACHINE=$(uname -m)
echo "machine=$NGC_NODE_MACHINE" >> "$NGC_DIR/facts.txt"
if [ "$NGC_NODE_MACHINE" != "$NGC_MACHINE" ]; then
  ngc_outcome "wrong-machine: $(hostname -s) is $NGC_NODE_MACHINE, the profile's platform $NGC_PLATFORM runs on" \
    "$NGC_MACHINE; fix: send the profile to $NGC_MACHINE nodes (partition, constraint or hosts), or set its platform:"
  exit 0
fi
gpus_seen=$(sed -n 's/^gpu_count=//p' "$NGC_DIR/facts.txt")
if [ "$NGC_GPUS" -gt 0 ] && [ "${gpus_seen:-0}" -lt "$NGC_GPUS" ]; then
  ngc_outcome "no-gpu: $(hostname -s) gave the job ${gpus_seen:-0} NVIDIA GPU(s), the profile asks for $NGC_GPUS"
  exit 0
fi

if ! ngc_prepare > "$NGC_DIR/prepare.log" 2>&1; then
  ngc_outcome "start-failed: cannot get $NGC_IMAGE: $(grep -v '^[[:space:]]*$' "$NGC_DIR/prepare.log" | tail -n1 | cut -c1-240)"
  ngc_stop
  exit 75
fi
{ echo "image=$NGC_IMAGE"; echo "image_digest=${NGC_IMAGE##*@}"; echo "runtime=${NGC_RUNTIME_VERSION:-}"; } \
  >> "$NGC_DIR/facts.txt"

out="/workspace/out/attempt-$NGC_ATTEMPT"
# As root, so that the hygiene walk reads every file; the reports are then handed to the job's user.
if [ "$NGC_VALIDATE" = 1 ]; then
  ngc_step validate 1 bash -c 'validate "$@"; rc=$?; chown -R "$NGC_OWNER" "$0" 2>/dev/null; exit $rc' \
    "$out/validation" --output "$out/validation" "${NGC_VALIDATE_ARGS[@]}"
fi
for i in "${!NGC_BENCH_NAMES[@]}"; do
  command=${NGC_BENCH_NAMES[$i]}
  declare -n bench_args="NGC_BENCH_ARGS_$i"
  baseline=()
  [ -f "$NGC_OUT/inputs/baseline-$command.json" ] && baseline=(--baseline "/workspace/out/inputs/baseline-$command.json")
  if [ "$NGC_TASKS" -gt 1 ]; then
    ngc_tasks_step "$command" "$command" --output "$out/bench/$command/task-@TASK@" --nnodes "$NGC_TASKS" \
      --master "$NGC_MASTER" "${baseline[@]}" "${bench_args[@]}"
  else
    ngc_step "$command" 0 "$command" --output "$out/bench/$command" "${baseline[@]}" "${bench_args[@]}"
  fi
  unset -n bench_args
done
if [ -n "$NGC_REFERENCE_IMAGE" ] && [ "$NGC_AB_ROUNDS" -gt 0 ]; then
  ngc_ab
fi
ngc_stop
ngc_outcome done
exit 0
