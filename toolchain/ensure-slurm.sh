#!/usr/bin/env bash
# Make sure a one-node Slurm cluster answers on this host: munge, slurmctld and slurmd from Debian's packages.
#
# Why: the release's gates fan out to Slurm (ngc_paddle/release/fleet/); its tests need a real scheduler, not a fake
# one, and nothing installed by hand survives on a fresh build host. Where `sinfo` already shows this cluster's
# node ready with this configuration, nothing is done. Otherwise, as root on Debian: install slurmctld, slurmd,
# slurm-client and munge (Debian 12: Slurm 22.05, munge 0.5.15), write /etc/slurm/slurm.conf for one node on
# 127.0.0.1 and start the daemons directly (no systemd here: setsid, in the background, logs under /var/log).
# Idempotent; a changed configuration restarts the daemons.
#
# The cluster: node NODE (this host's short name, CPUs=2), partitions `cpu` (default) and `gpu` (both on
# the node), and `empty` (no node at all: a profile sent there is NOT PROVEN). A `gpu` gres without GPUs lets
# `--gres=gpu:N` schedule here: Slurm 22.05 drops a file-less GPU gres (`Removing file-less GPU gpu:(null) from
# final GRES list`, the node then INVAL), so gres.conf names placeholder character devices under
# /var/lib/ngc-paddle/slurm-gpus/ that are the null device (1:3), outside /dev where no tool looks for GPUs. Plugins that work inside
# this VM: proctrack/pgid (cgroups are not ours to manage here; linuxproc loses a process whose parent died, e.g. the
# `docker run` client of a job script killed with SIGKILL, which then goes on to start its container after the
# Epilog ran; pgid kills the job's whole process group), task/none, no accounting database (the fleet reads job states with
# `scontrol show job`; sacct needs slurmdbd, which a real site has). Completed jobs stay visible for an hour
# (MinJobAge). The Epilog (toolchain/slurm-epilog.sh, installed as /etc/slurm/epilog-ngc-paddle.sh) removes
# the containers a job started when the job ends in any way, SIGKILL included; it is given the Docker
# engines to sweep in /etc/slurm/epilog-ngc-paddle.env (the default socket, and DOCKER_HOST when set here).
set -euo pipefail

log() { printf '[slurm] %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

CONF_DIR=/etc/slurm
NODE=$(hostname -s)
CPUS=${SLURM_NODE_CPUS:-2}
GPUS=${SLURM_NODE_GPUS:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
EPILOG=$CONF_DIR/epilog-ngc-paddle.sh
EPILOG_ENV=$CONF_DIR/epilog-ngc-paddle.env
LOG_DIR=/var/log/slurm

desired_conf() {
  cat <<EOF
# Written by ngc-paddle toolchain/ensure-slurm.sh: a one-node test cluster on 127.0.0.1.
ClusterName=ngc-paddle
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=cred_expire=10
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
ReturnToService=2
MinJobAge=3600
KillWait=10
SlurmdTimeout=60
InactiveLimit=0
Epilog=$EPILOG
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=4096 Gres=gpu:$GPUS State=UNKNOWN
PartitionName=cpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$NODE MaxTime=INFINITE State=UP
PartitionName=empty MaxTime=INFINITE State=UP
EOF
}

GPU_FILES=/var/lib/ngc-paddle/slurm-gpus
desired_gres() {
  printf '# No GPU here: placeholders (the null device) so that GPU requests are scheduled.\nNodeName=%s Name=gpu File=%s/gpu[0-%s]\n' \
    "$NODE" "$GPU_FILES" "$((GPUS - 1))"
}

placeholder_gpus() {
  mkdir -p "$GPU_FILES"
  for i in $(seq 0 $((GPUS - 1))); do
    [ -c "$GPU_FILES/gpu$i" ] || { rm -f "$GPU_FILES/gpu$i"; mknod "$GPU_FILES/gpu$i" c 1 3; }
  done
}

running() {  # PIDFILE NAME
  [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null && grep -q "$2" "/proc/$(cat "$1")/cmdline" 2>/dev/null
}

node_ready() {
  local state
  state=$(sinfo -h -n "$NODE" -p cpu -o %t 2>/dev/null | head -n1) || return 1
  case "$state" in idle|mix|alloc|comp) return 0 ;; *) return 1 ;; esac
}

docker_hosts() {  # the engines the Epilog sweeps: what it had, the default one, and this caller's
  { [ -s "$EPILOG_ENV" ] && sed -n 's/^DOCKER_HOSTS="\(.*\)"$/\1/p' "$EPILOG_ENV" | tr ' ' '\n'
    echo unix:///var/run/docker.sock
    [ -n "${DOCKER_HOST:-}" ] && echo "$DOCKER_HOST"
  } | grep -v '^$' | sort -u | tr '\n' ' ' | sed 's/ $//'
}

same_file() { [ -f "$2" ] && cmp -s "$1" "$2"; }

# Already answering with this configuration: done.
if command -v sinfo >/dev/null && [ -f "$CONF_DIR/slurm.conf" ] && diff -q <(desired_conf) "$CONF_DIR/slurm.conf" >/dev/null \
   && running /run/slurmctld.pid slurmctld && running /run/slurmd.pid slurmd && node_ready \
   && same_file "$HERE/slurm-epilog.sh" "$EPILOG" && [ "$(docker_hosts)" = "$(sed -n 's/^DOCKER_HOSTS="\(.*\)"$/\1/p' "$EPILOG_ENV" 2>/dev/null)" ]; then
  exit 0
fi

[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
  || die "no Slurm cluster answers here; fix: run this as root on Debian, or point the fleet file at your cluster"

missing=()
for pair in slurmctld:slurmctld slurmd:slurmd slurm-client:sbatch munge:munged; do
  command -v "${pair#*:}" >/dev/null || missing+=("${pair%%:*}")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  # The packages' scripts try to start services through an init system; there is none here, and policy-rc.d
  # (where present) refuses. We start the daemons below.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } \
    || die "cannot install ${missing[*]} from the Debian archive; fix: check the machine's Debian mirror"
fi

mkdir -p "$CONF_DIR" "$LOG_DIR" /var/spool/slurmctld /var/spool/slurmd /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
chmod 0755 /run/munge

# munge: a key (the package makes one; a cluster of one node needs no copy elsewhere), then the daemon.
if [ ! -s /etc/munge/munge.key ]; then
  log "making a munge key"
  mungekey --create --keyfile /etc/munge/munge.key 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 status=none
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
fi
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  log "starting munged"
  setsid runuser -u munge -- /usr/sbin/munged >>/var/log/munge/munged.out 2>&1 < /dev/null &
  for _ in $(seq 1 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.2; done
  munge -n | unmunge >/dev/null 2>&1 || die "munged does not answer; fix: see /var/log/munge/munged.log"
fi

placeholder_gpus
# Configuration: a change restarts both daemons.
changed=0
tmp=$(mktemp)
desired_conf > "$tmp"; same_file "$tmp" "$CONF_DIR/slurm.conf" || { install -m 0644 "$tmp" "$CONF_DIR/slurm.conf"; changed=1; }
desired_gres > "$tmp"; same_file "$tmp" "$CONF_DIR/gres.conf" || { install -m 0644 "$tmp" "$CONF_DIR/gres.conf"; changed=1; }
rm -f "$tmp"
same_file "$HERE/slurm-epilog.sh" "$EPILOG" || install -m 0755 "$HERE/slurm-epilog.sh" "$EPILOG"
printf 'DOCKER_HOSTS="%s"\n' "$(docker_hosts)" > "$EPILOG_ENV.tmp" && mv "$EPILOG_ENV.tmp" "$EPILOG_ENV"

stop() {  # PIDFILE NAME
  if running "$1" "$2"; then
    log "stopping $2 (configuration changed)"
    kill "$(cat "$1")"
    for _ in $(seq 1 50); do running "$1" "$2" || break; sleep 0.2; done
  fi
}
if [ "$changed" = 1 ]; then
  stop /run/slurmd.pid slurmd
  stop /run/slurmctld.pid slurmctld
fi

if ! running /run/slurmctld.pid slurmctld; then
  log "starting slurmctld (log $LOG_DIR/slurmctld.log)"
  setsid /usr/sbin/slurmctld -D >>"$LOG_DIR/slurmctld.out" 2>&1 < /dev/null &
  for _ in $(seq 1 100); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
  scontrol ping 2>/dev/null | grep -q UP || die "slurmctld does not answer; fix: see $LOG_DIR/slurmctld.log"
fi
if ! running /run/slurmd.pid slurmd; then
  log "starting slurmd (log $LOG_DIR/slurmd.log)"
  setsid /usr/sbin/slurmd -D >>"$LOG_DIR/slurmd.out" 2>&1 < /dev/null &
fi
for _ in $(seq 1 150); do node_ready && break; sleep 0.2; done
if ! node_ready; then  # e.g. down after an earlier slurmd stop: ReturnToService does not cover a reason set by hand
  scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do node_ready && break; sleep 0.2; done
fi
node_ready || die "node $NODE is $(sinfo -h -n "$NODE" -o '%t (%E)' | head -n1); fix: see $LOG_DIR/slurmd.log"
log "cluster ngc-paddle ready: node $NODE ($CPUS CPUs, gres gpu:$GPUS placeholders), partitions cpu, gpu, empty"
