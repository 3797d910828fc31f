"""The gpu-cu118 flavor (builds from PyPI alone) on this host, which has no GPU: its commands start, and
its benchmarks say NOT PROVEN with exit 3 and the reason, never PASS and never a traceback."""

from pathlib import Path

import pytest

from tests.integration.test_bench_rn50 import bench

COMMANDS = ("bench-rn50", "bench-hgnet")


@pytest.mark.parametrize("command", COMMANDS)
def test_benchmark_of_a_gpu_flavor_without_a_gpu_is_not_proven(built_cu118: str, tmp_path: Path,
                                                              command: str) -> None:
    proc, result = bench(built_cu118, tmp_path, command=command)
    assert proc.returncode == 3, proc.stdout[-1500:] + proc.stderr[-1500:]
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr[-2000:]
    assert result["verdict"] == "NOT PROVEN" and not result["passed"]
    assert "is a GPU image, but no GPU is visible" in result["verdict_reasons"][0]
    assert proc.stdout.rstrip().splitlines()[-1].startswith("== verdict: NOT PROVEN: the gpu-cu118 flavor")
    markdown = next((tmp_path / "out").glob("*/result.md")).read_text()
    assert "**Verdict: NOT PROVEN**" in markdown


@pytest.mark.parametrize("command", COMMANDS)
def test_shipped_commands_start_in_the_gpu_flavor(built_cu118: str, tmp_path: Path, command: str) -> None:
    proc, result = bench(built_cu118, tmp_path, "--smoke", command=command)
    assert proc.returncode == 0 and result["verdict"] == "SMOKE", proc.stderr[-2000:]
    assert result["environment"]["flavor"] == "gpu-cu118" and result["config"]["device"] == "cpu"


def test_its_cpu_path_on_request_is_still_not_proven(built_cu118: str, tmp_path: Path) -> None:
    proc, result = bench(built_cu118, tmp_path, "--gpus", "0", "--mode", "infer", "--batch-sizes", "1",
                         "--infer-iters", "2")
    assert proc.returncode == 3 and result["verdict"] == "NOT PROVEN", proc.stdout[-1500:]
    assert result["results"]["infer"]["paddle-inference"]["fp32"]["bs1"]["ips"] > 0
    bad, _ = bench(built_cu118, tmp_path / "bad", "--gpus", "1")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --gpus 1 asked for, but 0 CUDA GPU(s)")
