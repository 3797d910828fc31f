# Warn when /dev/shm is Docker's 64 MB default: DataLoader workers and NCCL need more.
_ngc_shm_kb=$(df -k /dev/shm 2>/dev/null | awk 'NR==2 {print $2}')
if [ "${_ngc_shm_kb:-0}" = 65536 ] && [ "${NGC_PADDLE_QUIET:-0}" != 1 ]; then
  cat >&2 <<'MSG'
NOTE: The SHMEM allocation limit is set to the default of 64MB.  This may be
   insufficient for PaddlePaddle.  The following flags are recommended:
   docker run --gpus all --ipc=host --ulimit memlock=-1 --ulimit stack=67108864 ...
MSG
fi
unset _ngc_shm_kb
