"""A job's bench-ab folder (written by the round loop in payload.sh) read back: both images' facts, every round's
figures per image, the steps with their exit codes and times.

Why: the round loop runs on a node with bash alone, so everything it measured is files; this reader turns them into
the samples the verdict judges (a result.json that cannot be read is a missing figure of that round, named in
`problems`, never a crash and never a figure made up). The reference is usually another release's image, whose
result.json may carry fields this release's schema does not know (or lack new ones): only its `results` are read,
and each figure the A/B compares is checked to be a positive number (ngc_paddle.release.ab.metrics).
Round 00 is the warm-up (discarded); rounds 01.. count.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from ngc_common import bench_result, bounded_read
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.ab import metrics
from ngc_paddle.release.ab.metrics import Metric

SIDES = ("candidate", "reference")
RAN = {0, 1, 3}  # PASS, FAIL, NOT PROVEN: the run measured (its own absolute verdict is not the A/B's)
ROUND_RE = re.compile(r"round-(\d{2,3})")
FACT_RE = re.compile(r"(candidate|reference)_(image|digest|id|size)|candidate_env")


@dataclass
class Step:
    round: int
    side: str
    name: str
    rc: int
    start: int  # epoch seconds
    ms: int

    @property
    def seconds(self) -> float:
        return self.ms / 1000


@dataclass
class Rounds:
    """What one A/B left: `samples[round][side][metric]`, the steps in the order they ran, the outcome line."""

    outcome: str
    facts: dict[str, str] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    samples: dict[int, dict[str, dict[Metric, float]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def measured(self) -> list[int]:
        return sorted(r for r in self.samples if r >= 1)

    def pairs(self) -> dict[Metric, list[tuple[float, float]]]:
        """(candidate, reference) per metric, one per measured round that has both; then the image size once."""
        found: dict[Metric, list[tuple[float, float]]] = {}
        for r in self.measured:
            mine, theirs = self.samples[r].get("candidate", {}), self.samples[r].get("reference", {})
            for metric in mine.keys() & theirs.keys():
                found.setdefault(metric, []).append((mine[metric], theirs[metric]))
        sizes = [self.facts.get(f"{side}_size", "") for side in SIDES]
        if all(s.isdigit() and int(s) > 0 for s in sizes):
            metric = next(iter(metrics.image_size(0)))
            found[metric] = [(float(sizes[0]), float(sizes[1]))]
        return dict(sorted(found.items(), key=lambda kv: kv[0].key))

    def missing(self) -> list[str]:
        """Metrics only one image produced in some measured round (named, never gated)."""
        gaps = set()
        for r in self.measured:
            mine, theirs = self.samples[r].get("candidate", {}), self.samples[r].get("reference", {})
            gaps |= {f"{m.label} ({'reference' if m in mine else 'candidate'} has none in round {r:02d})"
                     for m in mine.keys() ^ theirs.keys()}
        return sorted(gaps)


def _text(path: Path, limit: int = 256 * 1024) -> str:
    return bounded_read.read_text(path, NgcPaddleError, max_bytes=limit) if path.is_file() else ""


def read(folder: Path) -> Rounds:
    """The bench-ab folder of one attempt of a job."""
    outcome = (_text(folder / "outcome", 4096).strip().splitlines() or [""])[0]
    found = Rounds(outcome or "no outcome written (the A/B did not finish)")
    for line in _text(folder / "facts.txt", 64 * 1024).splitlines():
        key, sep, value = line.partition("=")
        if sep and FACT_RE.fullmatch(key):
            found.facts[key] = "".join(c for c in value.strip() if c.isprintable())[:300]
    for line in _text(folder / "rounds.tsv").splitlines():
        parts = line.split("\t")
        round_ = ROUND_RE.fullmatch(parts[0]) if parts else None
        if len(parts) == 6 and round_ and parts[1] in SIDES and all(p.lstrip("-").isdigit() for p in parts[3:]):
            found.steps.append(Step(int(round_.group(1)), parts[1], parts[2], *map(int, parts[3:])))
    for step in found.steps:
        side = found.samples.setdefault(step.round, {}).setdefault(step.side, {})
        if step.rc not in RAN:
            found.problems.append(f"round {step.round:02d} {step.side} {step.name}: exit {step.rc}, no figures")
            continue
        if step.name == "validate":
            side.update(metrics.validation_time(max(step.seconds, 0.001)))
            continue
        side.update(_bench(folder / f"round-{step.round:02d}" / step.side / step.name, step, found.problems))
    return found


def _bench(where: Path, step: Step, problems: list[str]) -> dict[Metric, float]:
    results = sorted(where.glob("*/result.json")) or sorted(where.glob("task-*/*/result.json"))  # tasks: rank 0's
    if not results:
        problems.append(f"round {step.round:02d} {step.side} {step.name}: no result.json in {where.name}")
        return {}
    try:  # another release's image may write other fields: only `results` is read (metrics checks each figure)
        data = bench_result.read_results(results[-1], NgcPaddleError)
    except NgcPaddleError as exc:
        problems.append(f"round {step.round:02d} {step.side} {step.name}: {exc}")
        return {}
    return metrics.of_result(step.name, data)
