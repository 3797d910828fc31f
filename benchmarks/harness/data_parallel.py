"""What a data-parallel run reports: each rank's own figures, gathered on rank 0, their sum and the scaling.

Why: a rank's figures prove what the run did, not rank 0's view of it: each rank records its own
throughput, the shard it read (a checksum of its first batch) and a checksum of the model's trainable
parameters after every step (BatchNorm's running statistics are Paddle parameters too, but each rank keeps
its own), so a test (and a reader) can see two ranks train on different data and hold equal
parameters, the gradient all-reduce working. Rank 0 gathers them with Paddle's all_gather_object and
writes results.data_parallel.<precision> (schema: ngc_common.bench_result.DATA_PARALLEL_KEYS).
"""

import os
import socket
from typing import Any


def checksum(tensors: Any) -> float:
    """One number over the tensors' values (float64 sum of float32 sums), equal where the tensors are equal."""
    return float(sum(float(t.astype("float32").sum()) for t in tensors))


def own_figures(rank: int, world: int, result: dict, data_checksum: float, param_checksums: list[float]) -> dict:
    """This rank's figures: its node (host name and node rank: the launcher's local rank and ranks per node), its own
    img/s (its batch over its step time: the timing's global figure / world)."""
    local, per_node = int(os.environ.get("PADDLE_LOCAL_RANK", 0)), int(os.environ.get("PADDLE_LOCAL_SIZE", 1))
    return {"rank": rank, "node": socket.gethostname(), "node_rank": (rank - local) // max(1, per_node),
            "shard": [rank, world], "ips": result["ips"] / world,
            "steps": result["steps"], "lr_peak": result["lr_peak"], "data_checksum": data_checksum,
            "param_checksums": param_checksums}


def gather(figures: dict) -> list[dict]:
    """Every rank's figures, in rank order, on every rank (a collective: every rank calls it)."""
    import paddle.distributed as dist

    found: list[dict] = []
    dist.all_gather_object(found, figures)
    return sorted(found, key=lambda f: f["rank"])


def summary(ranks: list[dict], reference_ips: float | None) -> dict:
    """results.data_parallel.<precision>: the ranks, the sum of their img/s, and the scaling efficiency: the sum over
    the one-process reference's img/s times the ranks (DLE's ratio per GPU count; None without a reference)."""
    total = sum(r["ips"] for r in ranks)
    nodes = sorted({f"{r['node']}#{r.get('node_rank', 0)}" for r in ranks})  # host#node rank: nodes may share a host
    out = {"procs": len(ranks), "nodes": nodes, "ranks": ranks, "ips": total}
    if reference_ips:  # absent: the reference wrote no figure (the console and result.md say "not measured")
        out.update(reference_ips=reference_ips, scaling_efficiency=total / (len(ranks) * reference_ips))
    return out
