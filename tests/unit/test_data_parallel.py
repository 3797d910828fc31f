"""Data-parallel runs without a launcher: the options, the launcher's command, the summary and its schema."""

import json
import math
from pathlib import Path

import pytest

from benchmarks.harness import data_parallel, launch
from benchmarks.harness.run_config import Hardware, requested, resolve
from benchmarks.rn50.spec import SPEC as RN50
from ngc_common import bench_result
from ngc_common.errors import InputError
from tests.unit.fuzz_support import bench_result as a_result

CPU = Hardware(gpus_available=0, threads=4, threads_from="test")
GPUS = Hardware(gpus_available=2, threads=16, threads_from="test")


def rank(i: int, ips: float) -> dict:
    return {"rank": i, "node": "n", "node_rank": 0, "shard": [i, 2], "ips": ips, "steps": 2, "lr_peak": 0.004,
            "data_checksum": float(i), "param_checksums": [1.0, 2.0]}


def test_procs_splits_the_cpu_threads_and_the_launcher_runs_the_models_script_on_each() -> None:
    config = resolve(requested(RN50, ["--procs", "2"]), RN50, CPU)
    assert config.procs == 2 and launch.per_rank_threads(config) == 2
    cmd = launch.launcher_command(config, RN50, ["--procs", "2"])
    assert cmd[1:3] == ["-m", "paddle.distributed.launch"] and "--max_restart" in cmd
    assert cmd[cmd.index("--nproc_per_node") + 1] == "2" and cmd[-2:] == ["--threads", "2"]
    assert cmd[cmd.index("--procs") - 1].endswith("benchmarks/rn50/__main__.py")  # a script: -m means legacy mode


def test_gpus_keep_one_process_each_and_refuse_procs() -> None:
    config = resolve(requested(RN50, ["--gpus", "2"]), RN50, GPUS)
    cmd = launch.launcher_command(config, RN50, [])
    assert cmd[cmd.index("--devices") + 1] == "0,1" and "--nproc_per_node" not in cmd and "--threads" not in cmd
    with pytest.raises(InputError, match=r"--procs 2 is for CPU runs.*fix: use --gpus N"):
        resolve(requested(RN50, ["--gpus", "2", "--procs", "2"]), RN50, GPUS)


def test_more_processes_than_threads_is_refused_before_anything_starts() -> None:
    config = resolve(requested(RN50, ["--procs", "8"]), RN50, CPU)
    with pytest.raises(InputError, match=r"--procs 8 with 4 CPU thread.*fix: lower --procs"):
        launch.relaunch_distributed(config, RN50)


def test_the_summary_sums_the_ranks_and_scales_against_the_reference() -> None:
    dp = data_parallel.summary([rank(0, 3.0), rank(1, 5.0)], 5.0)
    assert dp["ips"] == 8.0 and dp["procs"] == 2 and math.isclose(dp["scaling_efficiency"], 0.8)
    assert "scaling_efficiency" not in data_parallel.summary([rank(0, 3.0)], None)  # no reference: no figure


def test_a_result_with_data_parallel_figures_reads_and_a_renamed_one_is_refused(tmp_path: Path) -> None:
    result = a_result()
    result["results"]["data_parallel"] = {"fp32": data_parallel.summary([rank(0, 3.0), rank(1, 5.0)], 5.0)}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    assert bench_result.read_baseline(path, "rn50")["results"]["data_parallel"]["fp32"]["ips"] == 8.0
    result["results"]["data_parallel"]["fp32"]["ranks"][1]["img_per_s"] = 1.0
    path.write_text(json.dumps(result))
    with pytest.raises(InputError, match=r"data_parallel\.fp32\.ranks\.1\.img_per_s: is not a rank's figure"):
        bench_result.read_baseline(path, "rn50")


def test_the_reference_a_rank_reads_is_only_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(launch.REFERENCE_ENV, json.dumps({"fp32": 4.5, "bf16": "fast"}))
    assert launch.reference() == {"fp32": 4.5}
    monkeypatch.setenv(launch.REFERENCE_ENV, "{not json")
    assert launch.reference() == {}
