"""make perf-gate-power's planted slowdown in a real run: a slowed training phase must FAIL the CPU training gate
of this machine's CPU kind (and a kind without floors is said so, not counted)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.harness import acceptance_gates, cpu_kind
from perf import bench_gate_power as power
from tests.integration.conftest import REPO, Built


@pytest.mark.alone
def test_a_planted_2x_training_slowdown_fails_the_cpu_training_gate(built: Built, tmp_path: Path) -> None:
    kind = cpu_kind.detect(environ={}).name
    if not power.cpu_gates(acceptance_gates.load(), "rn50", kind):
        pytest.skip(f"benchmarks/gates.yaml has no rn50 CPU floor for this CPU kind ({kind}): nothing to show here")
    runs = tmp_path / "runs.json"
    proc = subprocess.run([sys.executable, "-m", "perf.bench_gate_power", built.image, "--runs", "1",
                           "--models", "rn50", "--loads", "idle", "--isas", "native", "--variants", "slowed-train",
                           "--mode", "train", "--json", str(runs), "--no-record"],
                          cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]  # 0: no miss
    [run] = json.loads(runs.read_text())
    assert run["verdict"] == "FAIL" and run["outcome"] == "ok" and run["cpu_kind"] == kind, run
    [(status, measured)] = [v for metric, v in run["gates"].items() if metric.startswith("train.fp32.")]
    assert status == "FAIL" and measured is not None, run
    assert "miss rate 0/1 (0 %)" in proc.stdout
