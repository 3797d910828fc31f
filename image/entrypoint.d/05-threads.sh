# Default the CPU threads to those this container may use (its cpuset, capped by its CPU quota).
# Why: Paddle's math library (MKL) computes on one thread unless told otherwise. A value the user set wins.
# Given as MKL_NUM_THREADS (what MKL reads) and OMP_THREAD_LIMIT (caps OpenMP, which oneDNN uses; OpenMP's own
# default is every CPU of the cpuset), not as OMP_NUM_THREADS: Paddle prints a data-parallel warning at every
# `import paddle` when OMP_NUM_THREADS > 1 (paddle/base/__init__.py), into the user's own scripts. The banner says
# so once. OMP_NUM_THREADS set by the user is kept as given (and Paddle then prints its note).
if [ -z "${OMP_NUM_THREADS:-}" ]; then
  NGC_PADDLE_THREADS=$(/opt/venv/bin/python -S /opt/ngc-paddle/benchmarks/harness/cpus.py 2>/dev/null || echo 1)
  MKL_NUM_THREADS=${MKL_NUM_THREADS:-$NGC_PADDLE_THREADS}
  OMP_THREAD_LIMIT=${OMP_THREAD_LIMIT:-$NGC_PADDLE_THREADS}
  export NGC_PADDLE_THREADS MKL_NUM_THREADS OMP_THREAD_LIMIT NGC_PADDLE_THREADS_FROM=detected
fi
