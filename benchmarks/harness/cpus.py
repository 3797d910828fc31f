"""How many CPU threads this container should compute with: the cores it may run on, capped by its quota.

Why: Paddle's CPU kernels run on one OpenMP thread unless told otherwise, and `os.cpu_count()`
counts the host's cores, not the container's. Docker limits a container two ways: a cpuset
(`--cpuset-cpus`, seen by sched_getaffinity) and a CFS quota (`--cpus 1.5`, seen in the cgroup's
cpu.max or cpu.cfs_quota_us). We take the smaller of the two, with the quota rounded down and at
least one thread (as Go's automaxprocs does), so threads never outnumber the CPU time we may use.

Standard library only: the entrypoint runs it with `python -S` before anything else is imported.
`python cpus.py` prints the thread count; `python cpus.py --explain` prints how it was found.
"""

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class CpuBudget:
    affinity: int  # CPUs in the cpuset
    quota: float | None  # CPUs' worth of time per period from the CFS quota; None when unlimited

    @property
    def threads(self) -> int:
        if self.quota is None:
            return self.affinity
        return max(1, min(self.affinity, math.floor(self.quota)))

    def explain(self) -> str:
        quota = "no CPU quota" if self.quota is None else f"CPU quota {self.quota:g}"
        return f"{self.threads} threads ({self.affinity} CPUs in the cpuset, {quota})"


def cfs_quota(root: Path = CGROUP) -> float | None:
    """CPUs' worth of quota (cgroup v2 cpu.max, else v1 cpu.cfs_quota_us / cfs_period_us); None if unlimited."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    for folder in (root / "cpu", root / "cpu,cpuacct"):
        try:
            quota_us = int((folder / "cpu.cfs_quota_us").read_text())
            period_us = int((folder / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
        return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
    return None


def affinity() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def budget(root: Path = CGROUP) -> CpuBudget:
    return CpuBudget(affinity(), cfs_quota(root))


# The CPU threads the entrypoint found (image/entrypoint.d/05-threads.sh), given to MKL (MKL_NUM_THREADS) and OpenMP
# (OMP_THREAD_LIMIT) rather than as OMP_NUM_THREADS, which Paddle answers at every import with a warning.
STARTED_WITH = "NGC_PADDLE_THREADS"


def threads_to_use(requested: int | None = None, environ: dict[str, str] | None = None) -> tuple[int, str]:
    """(threads, where the figure came from): --threads, else the user's OMP_NUM_THREADS, else the budget."""
    env = os.environ if environ is None else environ
    if requested:
        return requested, "--threads"
    given = env.get("OMP_NUM_THREADS", "")
    if given.isdigit() and int(given) > 0:
        detected = env.get("NGC_PADDLE_THREADS_FROM") == "detected"
        return int(given), "detected at start-up" if detected else "OMP_NUM_THREADS"
    started = env.get(STARTED_WITH, "")  # the entrypoint's figure (image/entrypoint.d/05-threads.sh)
    if started.isdigit() and int(started) > 0 and env.get("NGC_PADDLE_THREADS_FROM") == "detected":
        return int(started), "detected at start-up"
    return budget().threads, "detected"


if __name__ == "__main__":
    print(budget().explain() if "--explain" in sys.argv else budget().threads)
