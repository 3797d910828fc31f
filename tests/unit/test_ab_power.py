"""perf/bench_ab_power.py: what each variant must show per metric, how a sequential A/B stops and records the round
of its first FAIL, and how misses, false fails and undecided metrics are counted."""

import argparse
import math
import random

import pytest

from ngc_common.exit_codes import ExitCode
from ngc_paddle.release.ab.metrics import IMAGE_SIZE, Metric
from perf import bench_ab_power as power

TRAIN = Metric("bench-rn50:train.fp32.ips", "bench-rn50 train fp32 img/s", "img/s", "higher")
INFER = Metric("bench-rn50:infer.paddle-inference.fp32.bs8.latency_ms.p50",
               "bench-rn50 infer paddle-inference onednn fp32 bs8 latency p50", "ms", "lower")
SIZE = Metric(IMAGE_SIZE, "image size", "bytes", "lower")


def test_each_variant_slows_its_phases_only() -> None:
    assert power.phase(TRAIN.key) == "train" and power.phase(INFER.key) == "infer"
    assert power.phase("validate.seconds") == "validate"
    assert power.expected("slowed-train", TRAIN.key) == "FAIL" and power.expected("slowed-train", INFER.key) == "PASS"
    assert power.expected("slowed-1.2", INFER.key) == "FAIL" and power.expected("healthy", TRAIN.key) == "PASS"
    assert {v: p for v, p in power.VARIANTS.items() if p} == {"slowed-train": "train=2", "slowed-infer": "infer=2",
                                                              "slowed-1.2": "1.2"}


@pytest.mark.parametrize(("variant", "metric", "status", "want"), [
    ("slowed-train", TRAIN, "FAIL", "ok"), ("slowed-train", TRAIN, "PASS", "miss"),
    ("slowed-train", TRAIN, "NOT PROVEN", "miss"),  # not caught by the cap: the regression went through undecided
    ("slowed-train", INFER, "PASS", "ok"), ("slowed-train", INFER, "FAIL", "false fail"),
    ("healthy", INFER, "NOT PROVEN", "undecided"), ("healthy", TRAIN, "FAIL", "false fail")])
def test_outcome_of_one_metric(variant: str, metric: Metric, status: str, want: str) -> None:
    assert power.outcome(variant, metric.key, status) == want


def _pairs(ratio_train: float, ratio_infer: float, n: int, noise: float, seed: int) -> dict:
    rng = random.Random(seed)
    out: dict = {TRAIN: [], INFER: [], SIZE: [(3.0, 3.0)]}
    for _ in range(n):
        base = 10 * math.exp(rng.gauss(0, 0.3))  # the host drifts: both sides alike
        out[TRAIN].append((base * ratio_train * math.exp(rng.gauss(0, noise)), base))
        out[INFER].append((base / ratio_infer * math.exp(rng.gauss(0, noise)), base))  # a time: slower is larger
    return out


def test_a_sequential_ab_stops_when_every_metric_is_decided_and_keeps_the_first_fail() -> None:
    lines: list[str] = []
    watch = power.Watch(5.0, lines.append)
    full = _pairs(0.5, 1.0, 8, 0.01, 1)  # training halved, inference as shipped
    stopped_at = None
    for n in range(1, 9):
        if watch.judge({m: p[:n] if m != SIZE else p for m, p in full.items()}):
            stopped_at = n
            break
    assert stopped_at == 5, lines  # a FAIL needs 5 rounds; the inference metric PASSed before
    assert watch.first_fail == {TRAIN.key: 5} and watch.last[INFER.key].status == "PASS"
    assert IMAGE_SIZE not in watch.last  # judged nowhere (INFO)
    assert lines[0].startswith("      after round 01: ") and len(lines) == 5
    assert watch.judge({m: p[:5] for m, p in full.items()}) and len(lines) == 5  # a round is judged once


def test_counting_per_metric_kind_and_load_and_the_exit_code() -> None:
    def run(variant: str, load: str, train: tuple[str, int | None], infer: str) -> dict:
        metrics = {TRAIN.key: {"label": TRAIN.label, "status": train[0], "first_fail": train[1],
                               "expected": power.expected(variant, TRAIN.key),
                               "outcome": power.outcome(variant, TRAIN.key, train[0])},
                   INFER.key: {"label": INFER.label, "status": infer, "first_fail": None,
                               "expected": power.expected(variant, INFER.key),
                               "outcome": power.outcome(variant, INFER.key, infer)}}
        return {"kind": "k", "load": load, "variant": variant, "metrics": metrics}

    runs = [run("slowed-train", "idle", ("FAIL", 5), "PASS"), run("slowed-train", "busy", ("NOT PROVEN", None), "PASS"),
            run("slowed-1.2", "idle", ("FAIL", 9), "FAIL"), run("healthy", "idle", ("PASS", None), "NOT PROVEN")]
    counted = power.per_metric(runs)
    train_idle = counted[("k", "idle", "train fp32 img/s")]
    assert train_idle == {"runs": 3, "miss": 0, "false fail": 0, "undecided": 0,
                          "rounds to FAIL": {"slowed-train": [5], "slowed-1.2": [9]}}
    assert counted[("k", "busy", "train fp32 img/s")]["miss"] == 1  # busy apart: not hidden in idle's total
    infer_idle = counted[("k", "idle", "infer paddle-inference onednn fp32 bs8 latency p50")]
    assert infer_idle["miss"] == 0 and infer_idle["undecided"] == 1 and infer_idle["runs"] == 3
    assert power.exit_code(runs) == ExitCode.FAIL  # the busy miss
    assert power.exit_code([runs[0], runs[3]]) == ExitCode.NOT_PROVEN  # only undecided
    assert power.exit_code([runs[0]]) == ExitCode.PASS and power.exit_code([]) == ExitCode.FAIL
    options = argparse.Namespace(max_rounds=30, warmup_rounds=1, model="rn50", runs=1)
    for r in runs:
        r.update(rounds=5, stopped="decided at round 5", round_seconds=40.0, problems=[])
        for m in r["metrics"].values():
            m.update(ratio=0.5, low=0.45, high=0.55)
    text = power.markdown(runs, options, [600.0])
    assert "- k idle train fp32 img/s: 0 miss(es), 0 false fail(s), 0 undecided in 3 run(s); FAILed at round: " \
           "slowed-train 5; slowed-1.2 9" in text
    assert "One repetition of everything: 10.0 min (24 rounds in all, 40 s per round" in text


def test_bad_input_is_one_line_and_exit_2(capsys) -> None:
    assert power.main(["img", "--variants", "slowed-3x", "--no-record"]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: slowed-3x: not a load")
    assert power.main(["img", "--max-rounds", "4", "--no-record"]) == ExitCode.BAD_INPUT
    assert "max rounds < 5 (a FAIL needs that many)" in capsys.readouterr().err
