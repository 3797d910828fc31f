"""make bench-gate-power's planted slowdown in a real run: the CPU training gate must FAIL on it."""

import json
import subprocess
import sys
from pathlib import Path

from tests.integration.conftest import REPO, Built


def test_the_planted_2x_slowdown_fails_the_cpu_training_gate(built: Built, tmp_path: Path) -> None:
    runs = tmp_path / "runs.json"
    proc = subprocess.run([sys.executable, "perf/bench_gate_power.py", built.image, "--runs", "1", "--models", "rn50",
                           "--loads", "idle", "--variants", "slowed", "--mode", "train", "--json", str(runs),
                           "--no-record"], cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]  # 0: no miss
    [run] = json.loads(runs.read_text())
    assert run["verdict"] == "FAIL" and run["outcome"] == "ok", run
    [(status, measured)] = [v for metric, v in run["gates"].items() if metric.startswith("train.fp32.")]
    assert status == "FAIL" and measured is not None, run
    assert "miss rate 0/1 (0 %)" in proc.stdout
