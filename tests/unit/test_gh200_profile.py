"""The GH200 profile of benchmarks/gates.yaml: matched by the names nvidia-smi gives the Grace Hopper GPU, by no other
profile's pattern, its pattern matching no other GPU; its peaks and MFU floors those of the GH100 it shares with the
H100 SXM; no CPU floor for its Grace cores until one is measured there."""

from pathlib import Path

import pytest

from benchmarks.harness import acceptance_gates
from ngc_paddle.release.fleet import hardware_profiles

GH200_NAMES = ["NVIDIA GH200 480GB", "NVIDIA GH200 144G HBM3e"]
OTHERS = {"NVIDIA H200": "H200", "NVIDIA H200 NVL": "H200", "NVIDIA H100 80GB HBM3": "H100-SXM",
          "NVIDIA H100 PCIe": "H100-PCIe", "NVIDIA A100-SXM4-80GB": "A100-80GB", "Tesla V100-SXM2-32GB": "V100"}


@pytest.fixture(scope="module")
def table() -> dict:
    return acceptance_gates.load()


@pytest.mark.parametrize("name", GH200_NAMES)
def test_the_grace_hopper_gpu_is_gh200_and_no_other_profile(table: dict, repo: Path, name: str) -> None:
    assert acceptance_gates.detect_profile(table, [name]) == "GH200"
    patterns = hardware_profiles.gates_profiles(repo)
    # the fleet's node check reads each profile's pattern alone, not in order: an H200 or H100 profile's job on a
    # GH200 node is N/A, never taken for that profile
    for profile in ("H200", "H100-SXM", "H100-PCIe"):
        facts = {"hostname": "gh01", "gpu_names": name}
        assert hardware_profiles.mismatch(profile, patterns[profile], 1, facts), profile
    assert hardware_profiles.mismatch("GH200", patterns["GH200"], 1, {"gpu_names": name}) is None


@pytest.mark.parametrize(("name", "profile"), OTHERS.items())
def test_other_gpus_keep_their_profiles(table: dict, repo: Path, name: str, profile: str) -> None:
    assert acceptance_gates.detect_profile(table, [name]) == profile
    pattern = hardware_profiles.gates_profiles(repo)["GH200"]
    assert hardware_profiles.mismatch("GH200", pattern, 1, {"hostname": "n1", "gpu_names": name})


def test_gh200_has_the_gh100s_peaks_and_mfu_floors_and_no_cpu_floor(table: dict) -> None:
    for precision in ("fp32", "amp", "bf16", "int8"):
        assert acceptance_gates.datasheet_tflops(table, "GH200", precision) == \
            acceptance_gates.datasheet_tflops(table, "H100-SXM", precision)
    assert acceptance_gates.datasheet_tflops(table, "GH200", "amp") == 989.4  # dense, not the sparse 1,979
    for model in ("rn50", "hgnet"):
        floors = table["models"][model]["GH200"]
        assert floors == table["models"][model]["H100-SXM"] and all(g["metric"].endswith(".mfu") for g in floors)
    grace = {"cpu_kind": "neoverse-v2-sve2", "gpus": 0}
    assert "neoverse-v2-sve2" in (acceptance_gates.unfloored_cpu(table, "rn50", "cpu", grace) or "")
