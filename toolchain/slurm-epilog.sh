#!/bin/bash
# Slurm Epilog for nodes that run ngc-paddle gate jobs with Docker: remove the containers the job started.
#
# Why: `docker run` hands the container to dockerd, outside the job's processes and cgroups; when a job is
# killed (scancel, time limit, a SIGKILL) its script's trap may never run and the container would keep the
# node's GPUs. Every container a gate job starts carries the label ngc-paddle.slurm-job=<cluster>/<job id>
# (ngc_paddle/release/fleet/job.py); slurmd runs this script as root after every job on the node, and it removes
# exactly those. Install it as the Epilog (slurm.conf `Epilog=`) on nodes of partitions that run the
# `docker` container runtime; /etc/slurm/epilog-ngc-paddle.env may list the engines to sweep
# (DOCKER_HOSTS="unix:///var/run/docker.sock ..."). Always exits 0: an Epilog failure drains the node.
[ -n "${SLURM_JOB_ID:-}" ] || exit 0
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"  # slurmd gives an Epilog almost none
command -v docker >/dev/null || exit 0
DOCKER_HOSTS="unix:///var/run/docker.sock"
# shellcheck source=/dev/null
[ -r /etc/slurm/epilog-ngc-paddle.env ] && . /etc/slurm/epilog-ngc-paddle.env
label="ngc-paddle.slurm-job=${SLURM_CLUSTER_NAME:-cluster}/${SLURM_JOB_ID}"
sweep() {
  for engine in $DOCKER_HOSTS; do
    ids=$(DOCKER_HOST=$engine timeout 20 docker ps -aq --filter "label=$label" 2>/dev/null) || continue
    # shellcheck disable=SC2086
    [ -n "$ids" ] && DOCKER_HOST=$engine timeout 60 docker rm -f $ids >/dev/null 2>&1
  done
}
sweep
# A job that did not end by itself (killed, timed out, its node lost): a `docker run` whose client was killed while its
# request was on the way is created a moment later, so sweep again. A job that ended by itself stopped its own.
if [ "${SLURM_JOB_EXIT_CODE:-1}" != 0 ]; then
  sleep 2
  sweep
fi
exit 0
