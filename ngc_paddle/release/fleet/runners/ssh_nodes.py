"""Where the nodes of an SSH job of several nodes keep their files: a folder, a script and a log per node, and every
node's runs gathered into node 0's folder once they are back, as one Slurm step leaves them.

Why: each host runs the job script as one node of the launch and writes its own folder (node 0's is the job's
folder, the others' sit beside it with `-nodeN`, so two nodes on one host never share one); the results are rank
0's, as on Slurm, wherever the launcher placed rank 0, and every node records its own task's end, which the verdict
needs from all of them (ngc_paddle.release.fleet.task_results). Docs: docs/fleets.md, "Several nodes and tasks".
"""

import hashlib
import shutil
from pathlib import Path

NODES_DIR = "nodes"  # the job's folder here: nodes/N/ holds what node N (above 0) left
PORT_SEEDS = 1_000_000


def folder(base: Path, rank: int) -> Path:
    """Node `rank`'s folder on its host: the job's own for node 0."""
    return base if rank == 0 else base.with_name(f"{base.name}-node{rank}")


def script_name(rank: int) -> str:
    return "job.sh" if rank == 0 else f"job-node{rank}.sh"


def log_name(attempt: int, rank: int) -> str:
    return f"job-{attempt}.out" if rank == 0 else f"job-{attempt}-node{rank}.out"


def port_seed(base: Path, attempt: int) -> int:
    """The number the master's port starts from (what the Slurm job id is on a cluster): one per job and attempt."""
    return int(hashlib.sha256(f"{base}#{attempt}".encode()).hexdigest(), 16) % PORT_SEEDS


def host_name(host: str) -> str:
    """A profile's host ([USER@]HOST[:PORT]) as the network names it: without its user and SSH port."""
    return host.split("@")[-1].split(":")[0]


def merge_nodes(local: Path, attempt: int, count: int) -> None:
    """Lay nodes 1..'s runs into rank 0's attempt folder as one Slurm step leaves them in its shared folder: each
    node's task folders (bench/COMMAND/task-K/, the A/B's ROUND/SIDE/COMMAND/task-K/: the launcher gives rank 0 to
    whichever node joins first, so its report may be on any of them) beside node 0's, and its tasks' lines
    (bench/COMMAND/tasks.tsv, the A/B's ROUND/SIDE/COMMAND.tasks.tsv) appended to node 0's files."""
    into = local / f"attempt-{attempt}"
    for rank in range(1, count):
        theirs = local / NODES_DIR / str(rank) / f"attempt-{attempt}"
        for path in sorted([*theirs.glob("bench/*/task-*"), *theirs.glob("bench-ab/*/*/*/task-*")]):
            if path.is_dir():
                shutil.copytree(path, into / path.relative_to(theirs), dirs_exist_ok=True)
        for path in sorted([*theirs.glob("bench/*/tasks.tsv"), *theirs.glob("bench-ab/*/*/*.tasks.tsv")]):
            target = into / path.relative_to(theirs)
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("a") as out:
                out.write(path.read_text())
