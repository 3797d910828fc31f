# The body of a gate job (ngc_paddle/release/fleet/payload.py puts the job's variables and the container runtime's
# functions above it): record the node's facts, get the image by digest, run the validation and each benchmark
# with the profile's options, and leave everything in the job's folder, which the release reads back.
#
# Folder ($NGC_OUT, seen by the node and by the release's host): inputs/ (baselines), attempt-N/ per start of
# the job (a Slurm requeue starts it again: SLURM_RESTART_COUNT): pid, facts.txt, steps.tsv (step, exit code,
# seconds), validation/, bench/<command>/<run>/, outcome (one line: done | no-gpu: WHY | start-failed: WHY |
# interrupted: SIGNAL). Exit: 0 when the gates ran (their verdicts are in the folder, not in this code) or the
# node has no GPU for a GPU profile; 75 when the image could not be started (the release counts the job NOT RUN
# and requeues it once); 143/130 when stopped by SIGTERM/SIGINT (scancel, a time limit, Ctrl-C), after stopping
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

mkdir -p "$NGC_DIR/validation" "$NGC_DIR/bench" || { echo "error: cannot write $NGC_DIR" >&2; exit 75; }
echo $$ > "$NGC_DIR/pid"
: > "$NGC_DIR/steps.tsv"

ngc_outcome() { printf '%s\n' "$*" > "$NGC_DIR/outcome.tmp" && mv "$NGC_DIR/outcome.tmp" "$NGC_DIR/outcome"; }

ngc_on_signal() {
  trap '' TERM INT
  echo "ngc-paddle gate job $NGC_JOB_ID: $1, stopping" >&2
  ngc_stop
  ngc_outcome "interrupted: $1"
  exit "$2"
}
trap 'ngc_on_signal SIGTERM 143' TERM
trap 'ngc_on_signal SIGINT 130' INT

ngc_facts() {
  echo "hostname=$(hostname -s 2>/dev/null || hostname)"
  echo "slurm_job=${SLURM_JOB_ID:+$NGC_JOB_ID}"
  echo "slurm_node=${SLURMD_NODENAME:-}"
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

ngc_facts > "$NGC_DIR/facts.txt"
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
ngc_step validate 1 bash -c 'validate "$@"; rc=$?; chown -R "$NGC_OWNER" "$0" 2>/dev/null; exit $rc' \
  "$out/validation" --output "$out/validation" "${NGC_VALIDATE_ARGS[@]}"
for i in "${!NGC_BENCH_NAMES[@]}"; do
  command=${NGC_BENCH_NAMES[$i]}
  declare -n bench_args="NGC_BENCH_ARGS_$i"
  baseline=()
  [ -f "$NGC_OUT/inputs/baseline-$command.json" ] && baseline=(--baseline "/workspace/out/inputs/baseline-$command.json")
  ngc_step "$command" 0 "$command" --output "$out/bench/$command" "${baseline[@]}" "${bench_args[@]}"
  unset -n bench_args
done
ngc_stop
ngc_outcome done
exit 0
