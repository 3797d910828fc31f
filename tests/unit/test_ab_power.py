"""perf/bench_ab_power.py: what each variant must show per metric, how a sequential A/B stops and records the round
of its first FAIL, and how misses, false fails and undecided metrics are counted."""

import argparse
import math
import random
import re

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
                                                              "slowed-1.2": "1.2", "slowed-1.1": "1.1",
                                                              "slowed-1.05": "1.05"}
    assert power.expected("slowed-1.05", TRAIN.key) == power.expected("slowed-1.05", INFER.key) == "FAIL"


@pytest.mark.parametrize(("variant", "metric", "status", "want"), [
    ("slowed-train", TRAIN, "FAIL", "ok"), ("slowed-train", TRAIN, "PASS", "miss"),
    ("slowed-train", TRAIN, "NOT PROVEN", "miss"),  # not caught by the cap: the regression went through undecided
    ("slowed-train", INFER, "PASS", "ok"), ("slowed-train", INFER, "FAIL", "false fail"),
    ("healthy", INFER, "NOT PROVEN", "undecided"), ("healthy", TRAIN, "FAIL", "false fail"),
    ("slowed-1.05", TRAIN, "NOT PROVEN", "unresolved"), ("slowed-1.1", INFER, "PASS", "unresolved"),  # its resolution
    ("slowed-1.1", TRAIN, "FAIL", "ok")])
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
    watch = power.Watch(5.0, "slowed-train", say=lines.append)
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


def test_an_unslowed_metric_that_cannot_pass_is_left_undecided_after_pass_rounds() -> None:
    noisy = _pairs(1.0, 0.5, 12, 0.2, 3)  # inference halved; training as shipped but noisy (20 % per round)
    watch = power.Watch(5.0, "slowed-infer", pass_rounds=8, say=lambda _line: None)
    stopped_at = next(n for n in range(1, 13) if watch.judge({m: p[:n] for m, p in noisy.items()}))
    assert watch.last[INFER.key].status == "FAIL" and watch.first_fail[INFER.key] == 5
    assert stopped_at == 8 and watch.last[TRAIN.key].status == "NOT PROVEN" and not watch.decided
    assert power.outcome("slowed-infer", TRAIN.key, "NOT PROVEN") == "undecided"


def _ended(runs: list[dict], rounds: int, stopped: str, ratio: tuple[float, float, float]) -> list[dict]:
    """The runs as run_variant ends them: rounds, how they stopped, each metric's ratio and its 95 % interval."""
    for r in runs:
        r.update(rounds=rounds, stopped=stopped, round_seconds=40.0, problems=[])
        for m in r["metrics"].values():
            m.update(ratio=ratio[0], low=ratio[1], high=ratio[2])
    return runs


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
    assert train_idle == {"runs": 3, "miss": 0, "false fail": 0, "undecided": 0, "unresolved": [],
                          "rounds to FAIL": {"slowed-train": [5], "slowed-1.2": [9]}}
    assert counted[("k", "busy", "train fp32 img/s")]["miss"] == 1  # busy apart: not hidden in idle's total
    infer_idle = counted[("k", "idle", "infer paddle-inference onednn fp32 bs8 latency p50")]
    assert infer_idle["miss"] == 0 and infer_idle["undecided"] == 1 and infer_idle["runs"] == 3
    assert power.exit_code(runs) == ExitCode.FAIL  # the busy miss
    assert power.exit_code([runs[0], runs[3]]) == ExitCode.NOT_PROVEN  # only undecided
    assert power.exit_code([runs[0]]) == ExitCode.PASS and power.exit_code([]) == ExitCode.FAIL
    options = argparse.Namespace(max_rounds=30, pass_rounds=10, warmup_rounds=1, model="rn50", runs=1, threads=1,
                                 threshold_pct=5.0)
    text = power.markdown(_ended(runs, 5, "decided at round 5", (0.5, 0.45, 0.55)), options, [600.0])
    assert "- k idle train fp32 img/s: 0 miss(es), 0 false fail(s), 0 undecided in 3 run(s); FAILed at round: " \
           "slowed-train 5; slowed-1.2 9" in text
    assert "--infer-iters 100 --threads 1`" in text
    assert "One repetition of everything: 10.0 min (24 rounds in all, 40 s per round" in text
    fine = [run("slowed-1.1", "idle", ("FAIL", 14), "FAIL"), run("slowed-1.05", "idle", ("NOT PROVEN", None), "PASS")]
    assert power.exit_code([runs[0], *fine]) == ExitCode.NOT_PROVEN  # not resolved by the cap: never a PASS
    text = power.markdown(_ended(fine, 30, "cap: 30 rounds", (0.95, 0.9, 1.0)), options, [600.0])
    assert "train fp32 img/s: 0 miss(es), 0 false fail(s), 0 undecided in 2 run(s); FAILed at round: slowed-1.1 14; " \
           "NOT PROVEN at the cap of 30 rounds: slowed-1.05 (1x)" in text
    assert "1.1 and 1.05 on both phases; the last two probe how fine the A/B sees against its 5 % threshold" in text


def test_bad_input_is_one_line_and_exit_2(capsys) -> None:
    assert power.main(["img", "--variants", "slowed-3x", "--no-record"]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: slowed-3x: not a load")
    assert power.main(["img", "--max-rounds", "4", "--no-record"]) == ExitCode.BAD_INPUT
    assert "max rounds < 5 (a FAIL needs that many)" in capsys.readouterr().err


def test_the_release_round_loop_stops_once_every_metric_is_decided(tmp_path, monkeypatch) -> None:
    """The whole path with a fake docker (tests/unit/test_ab_payload.py's): the job script's rounds, read back after
    each run, judged; the job is cancelled at the round that decides, the finished rounds are kept."""
    from ngc_paddle.release.ab import compare, plan, rounds
    from tests.unit.test_ab_payload import CANDIDATE, FAKE, REFERENCE

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "fake-docker").write_text(FAKE)
    (bin_dir / "docker").write_text(f'#!/bin/bash\nsleep 0.1\nexec python3 {bin_dir / "fake-docker"} "$@"\n')
    (bin_dir / "docker").chmod(0o755)
    for name, value in {"PATH": f"{bin_dir}:/usr/bin:/bin", "FAKE_LOG": str(tmp_path / "calls.log"),
                        "FAKE_IPS_CANDIDATE": "10", "FAKE_IPS_REFERENCE": "10"}.items():
        monkeypatch.setenv(name, value)
    spec = plan.compare_job(CANDIDATE, REFERENCE, tmp_path / "job", ("bench-rn50",), 20, True, 0, False, warmup=0,
                            candidate_env=("NGC_PADDLE_BENCH_PLANTED_SLOWDOWN=2",))
    lines: list[str] = []
    watch = power.Watch(5.0, "slowed-1.2", say=lines.append)
    shown: list[str] = []
    attempt = compare.run_job(spec, shown.append, poll_s=0.02, stop_when=watch)
    assert watch.decided and {v.status for v in watch.last.values()} == {"FAIL"}, lines
    assert set(watch.first_fail.values()) <= {5, 6}  # a FAIL needs 5 rounds (a round may end between two looks)
    found = rounds.read(attempt / "bench-ab")
    assert found.outcome == "interrupted: SIGTERM" and len(found.measured) < 20  # stopped early, the rounds kept
    assert len(found.pairs()[next(m for m in found.pairs() if m.key.endswith("train.fp32.ips"))]) >= 5
    # every run that ended was shown once, as it ended: its round of the total, image, step, time and exit
    rows = (attempt / "bench-ab" / "rounds.tsv").read_text().splitlines()
    assert 10 <= len(shown) <= len(rows)  # a run may end between the last look and the cancel
    for line, row in zip(shown, rows[:len(shown)], strict=True):
        number, side, step = row.split("\t")[:3]
        assert re.fullmatch(rf"    round {number.removeprefix('round-')}/20 {side:<9} {step}: [0-9]+\.[0-9] s "
                            r"\(exit 0\), [0-9]+\.[0-9] min in", line), (line, row)
