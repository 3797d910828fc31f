# Default OMP_NUM_THREADS to the CPUs this container may use (its cpuset, capped by its CPU quota).
# Why: Paddle (OpenMP) computes on one thread unless told otherwise. A value the user set wins.
if [ -z "${OMP_NUM_THREADS:-}" ]; then
  OMP_NUM_THREADS=$(/opt/venv/bin/python -S /opt/ngc-paddle/benchmarks/harness/cpus.py 2>/dev/null || echo 1)
  export OMP_NUM_THREADS NGC_PADDLE_THREADS_FROM=detected
fi
