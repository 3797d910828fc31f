"""A multi-task job's benchmark (one container per Slurm task, joined as the nodes of one Paddle launch), read back:
which tasks ran where and how they ended (bench/<command>/tasks.tsv: task, host, exit code, Slurm step; a line
written by each task), and what rank 0's report
says of every rank (results.data_parallel.<precision> of the one result.json under bench/<command>/task-N/).

Why: a verdict about a data-parallel run must rest on every task having run and joined. A task that left no line,
a report that is missing or holds fewer ranks than the job had tasks, is missing data: NOT PROVEN, never PASS.
"""

from dataclasses import dataclass, field
from pathlib import Path

from ngc_common import bounded_read
from ngc_paddle.host_errors import NgcPaddleError


@dataclass
class TaskRun:
    """What the tasks of one benchmark left: `problem` says why the run cannot be believed (None: it can)."""

    tasks: list[str] = field(default_factory=list)  # "task 0 on vm exit 0 (step 57.0)"
    ranks: list[str] = field(default_factory=list)  # "rank 0 on vm#0"
    scaling: dict[str, float] = field(default_factory=dict)  # precision: the scaling efficiency
    problem: str | None = None

    def describe(self, command: str) -> str:
        scaling = ", ".join(f"{p} scaling efficiency {v:.2f}" for p, v in self.scaling.items()) or "no scaling figure"
        ranks = ", ".join(self.ranks) or "no ranks reported"
        return f"{command} on {len(self.tasks)} task(s) ({'; '.join(self.tasks)}): {ranks}; {scaling}"


def results_of(folder: Path, command: str) -> list[Path]:
    """The result.json files the tasks wrote (only the task holding rank 0 writes one)."""
    return sorted((folder / "bench" / command).glob("task-*/*/result.json"))


def read(folder: Path, command: str, tasks: int, results: dict) -> TaskRun:
    """The tasks of `command` in the attempt's `folder` and the ranks of its report's `results` (its results dict)."""
    run = TaskRun()
    path = folder / "bench" / command / "tasks.tsv"
    rows = []
    if path.is_file():
        for line in bounded_read.read_text(path, NgcPaddleError, max_bytes=64 * 1024).splitlines():
            parts = line.split("\t")
            if len(parts) == 4 and parts[0].isdigit():
                rows.append((int(parts[0]), parts[1], parts[2], parts[3]))
    run.tasks = [f"task {t} on {host} exit {rc} (step {step})" for t, host, rc, step in sorted(rows)]
    dp = results.get("data_parallel") or {}
    for precision, figures in dp.items():
        ranks = figures.get("ranks", []) if isinstance(figures, dict) else []
        run.ranks = [f"rank {r.get('rank')} on {r.get('node')}#{r.get('node_rank', 0)}" for r in ranks]
        if isinstance(figures, dict) and figures.get("scaling_efficiency") is not None:
            run.scaling[precision] = float(figures["scaling_efficiency"])
        if len(ranks) != tasks:
            run.problem = f"its report holds {len(ranks)} rank(s) of the job's {tasks} tasks"
    if sorted(row[0] for row in rows) != list(range(tasks)):
        run.problem = f"{len(rows)} of the job's {tasks} tasks recorded their end ({path.name})"
    elif not dp:
        run.problem = "its report has no data_parallel section: the tasks did not train as one group"
    return run
