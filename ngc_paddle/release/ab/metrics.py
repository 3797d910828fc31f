"""Which figures of a round the A/B gate compares, and which way is better.

Why: the gate compares like with like, so every figure is named by what produced it: training img/s per precision
(a data-parallel run's: its ranks' img/s summed, results.data_parallel, as both images ran the same processes),
inference img/s and median latency per engine and batch (result.json's `engine`, e.g. "paddle-inference onednn
fp32"), the validation suite's wall time and the image's size. Throughput is better higher; latency, time and size
are better lower. A figure only one side produced (an engine the reference lacks) is compared nowhere: it is listed
as missing, never gated against nothing.
"""

from dataclasses import dataclass
from typing import Any, Literal

Direction = Literal["higher", "lower"]
VALIDATION = "validate.seconds"
IMAGE_SIZE = "image.size_bytes"


@dataclass(frozen=True)
class Metric:
    key: str  # bench-rn50:train.fp32.ips, bench-rn50:infer.paddle-inference.fp32.bs8.latency_ms.p50, validate.seconds
    label: str  # for people: "bench-rn50 train fp32 img/s"
    unit: str
    direction: Direction


def of_result(command: str, data: dict[str, Any]) -> dict[Metric, float]:
    """The compared figures of one benchmark run (a result.json read as a mapping)."""
    found: dict[Metric, float] = {}
    results = data.get("results", {})
    ranks = results.get("data_parallel", {})
    for precision, train in sorted(results.get("train", {}).items()):
        summed = ranks.get(precision) if isinstance(ranks, dict) else None
        if isinstance(summed, dict) and _number(summed.get("ips")):  # several processes: every rank's img/s, summed
            found[Metric(f"{command}:train.{precision}.ips", f"{command} train {precision} img/s "
                         f"(summed over {summed.get('procs', '?')} ranks)", "img/s", "higher")] = float(summed["ips"])
        elif isinstance(train, dict) and _number(train.get("ips")):
            found[Metric(f"{command}:train.{precision}.ips", f"{command} train {precision} img/s", "img/s",
                         "higher")] = float(train["ips"])
    for backend, by_precision in sorted(results.get("infer", {}).items()):
        if not isinstance(by_precision, dict):
            continue
        for precision, by_batch in sorted(by_precision.items()):
            if not isinstance(by_batch, dict):
                continue
            for batch, figures in sorted(by_batch.items(), key=lambda kv: _batch_order(kv[0])):
                if not (batch.startswith("bs") and isinstance(figures, dict)):
                    continue
                engine = figures.get("engine") or f"{backend} {precision}"
                base = f"{command}:infer.{backend}.{precision}.{batch}"
                if _number(figures.get("ips")):
                    found[Metric(f"{base}.ips", f"{command} infer {engine} {batch} img/s", "img/s",
                                 "higher")] = float(figures["ips"])
                p50 = (figures.get("latency_ms") or {}).get("p50")
                if _number(p50) and p50 > 0:
                    found[Metric(f"{base}.latency_ms.p50", f"{command} infer {engine} {batch} latency p50", "ms",
                                 "lower")] = float(p50)
    return found


def validation_time(seconds: float) -> dict[Metric, float]:
    return {Metric(VALIDATION, "validation suite wall time", "s", "lower"): float(seconds)}


def image_size(size: int) -> dict[Metric, float]:
    return {Metric(IMAGE_SIZE, "image size", "bytes", "lower"): float(size)}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _batch_order(batch: str) -> int:
    return int(batch[2:]) if batch[2:].isdigit() else 1 << 30
