"""Platforms in the manifest: which platforms each flavor builds, a component's pin on one platform with its reason,
and what `manifest check`, `manifest show`, the notes and the support matrix make of them (the committed 26.12 and
copies of it with one thing wrong)."""

import copy
import json
from pathlib import Path

import pytest

from ngc_paddle import cli
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.lock.lock_file import lock_path
from ngc_paddle.manifest.loader import load_manifest
from ngc_paddle.platforms import DEFAULT_PLATFORM, PLATFORMS, host_platform, platform_named
from ngc_paddle.release.stages.notes import notes_text, support_matrix

REPO = Path(__file__).resolve().parents[2]
ARM = "linux/arm64"


def test_the_cpu_flavor_builds_both_platforms_and_pins_paddle_for_arm64() -> None:
    manifest = load_manifest(REPO / "releases" / "26.12.yaml")
    cpu = manifest.flavors["cpu"]
    assert cpu.platforms == ["linux/amd64", ARM]
    assert cpu.platform_versions("paddle") == {"linux/amd64": "3.3.1", ARM: "3.2.2"}
    assert cpu.platform_versions("paddle2onnx") == {"linux/amd64": "2.1.0", ARM: "1.3.1"}
    assert cpu.platform_versions("onnxruntime") == {"linux/amd64": "1.23.2", ARM: "1.23.2"}
    arm = cpu.on(ARM)
    assert arm.components["paddle"].requirement == "paddlepaddle==3.2.2"
    assert all(not comp.on_platform for comp in arm.components.values())
    for gpu in ("gpu", "gpu-cu118"):  # amd64 only, and the manifest says why
        assert manifest.flavors[gpu].platforms == ["linux/amd64"]
        assert "sbsa" in manifest.flavors[gpu].platforms_pending[ARM]


def test_a_manifest_without_platforms_builds_the_default_one() -> None:
    old = load_manifest(REPO / "releases" / "23.01.yaml")
    assert all(flavor.platforms == [DEFAULT_PLATFORM] for flavor in old.flavors.values())


def _cpu_paddle(data: dict) -> dict:
    return data["flavors"]["cpu"]["components"]["paddle"]


def _no_reason(data: dict) -> None:
    del _cpu_paddle(data)["on_platform"][ARM]["why"]


def _blank_reason(data: dict) -> None:
    _cpu_paddle(data)["on_platform"][ARM]["why"] = "  "


def _unknown_platform(data: dict) -> None:
    data["flavors"]["cpu"]["platforms"] = ["linux/amd64", "linux/riscv64"]


def _unknown_pin_platform(data: dict) -> None:
    _cpu_paddle(data)["on_platform"]["linux/s390x"] = {"version": "3.2.2", "why": "x"}


def _pin_on_a_platform_not_built(data: dict) -> None:
    data["flavors"]["cpu"]["platforms"] = ["linux/amd64"]


def _pin_on_the_first_platform(data: dict) -> None:
    _cpu_paddle(data)["on_platform"]["linux/amd64"] = {"version": "3.2.2", "why": "x"}


def _pin_without_change(data: dict) -> None:
    _cpu_paddle(data)["on_platform"][ARM]["version"] = "3.3.1"


def _pin_not_a_version(data: dict) -> None:
    _cpu_paddle(data)["on_platform"][ARM]["version"] = "3.2.2; rm -rf"


def _built_and_pending(data: dict) -> None:
    data["flavors"]["cpu"]["platforms_pending"] = {ARM: "no reason to be both"}


def _twice(data: dict) -> None:
    data["flavors"]["cpu"]["platforms"] = ["linux/amd64", ARM, ARM]


def _default_not_first(data: dict) -> None:
    data["flavors"]["cpu"]["platforms"] = [ARM, "linux/amd64"]


REFUSED = {  # what is wrong -> (the field named, words of the message, words of the fix)
    "no reason": (_no_reason, "flavors.cpu.components.paddle.on_platform.linux/arm64", "without a reason", "add why:"),
    "blank reason": (_blank_reason, "on_platform.linux/arm64", "without a reason", "add why:"),
    "unknown platform": (_unknown_platform, "flavors.cpu.platforms", "'linux/riscv64' is not a known platform",
                         "use linux/amd64, linux/arm64"),
    "unknown pin platform": (_unknown_pin_platform, "on_platform.linux/s390x", "not a known platform",
                             "use linux/amd64, linux/arm64"),
    "not built": (_pin_on_a_platform_not_built, "on_platform.linux/arm64", "flavor cpu does not build linux/arm64",
                  "add linux/arm64 to flavors.cpu.platforms or drop the pin"),
    "first platform": (_pin_on_the_first_platform, "on_platform.linux/amd64", "first platform",
                       "set version: 3.2.2 or drop the pin"),
    "same version": (_pin_without_change, "on_platform.linux/arm64", "already gives", "drop the pin"),
    "not a version": (_pin_not_a_version, "on_platform.linux/arm64", "not a PEP 440 version",
                      "write a version of the component's kind"),
    "built and pending": (_built_and_pending, "flavors.cpu.platforms_pending", "built and pending at once",
                          "drop it"),
    "twice": (_twice, "flavors.cpu.platforms", "lists linux/arm64 twice", "keep one"),
    "default not first": (_default_not_first, "flavors.cpu.platforms", "lists linux/amd64 after linux/arm64",
                          "list linux/amd64 first"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_manifest_check_refuses_a_bad_platform_entry_in_one_line(case: str, current_manifest_data: dict,
                                                                 write_manifest, tmp_path: Path, capsys) -> None:
    change, field, what, fix = REFUSED[case]
    data = copy.deepcopy(current_manifest_data)
    change(data)
    path = write_manifest(data)
    with pytest.raises(ManifestError) as err:
        load_manifest(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path)), message
    assert field in message and what in message, message
    assert fix in message.split("; fix: ", 1)[1], message
    assert cli.main(["--root", str(tmp_path), "manifest", "check", "26.12"]) == 2
    assert capsys.readouterr().err.strip() == f"error: {message}"


def test_manifest_show_prints_each_platforms_image_manifest(capsys) -> None:
    assert cli.main(["--root", str(REPO), "manifest", "show", "26.12", "--flavor", "cpu"]) == 0
    out = capsys.readouterr()
    first = json.loads(out.out)
    assert first["components"]["paddle"]["version"] == "3.3.1"  # as the amd64 image carries it, unchanged
    assert "note: linux/arm64: paddle 3.2.2 (not 3.3.1 as on linux/amd64): PyPI has no aarch64 wheel" in out.err
    assert cli.main(["--root", str(REPO), "manifest", "show", "26.12", "--flavor", "cpu", "--platform", ARM]) == 0
    arm = json.loads(capsys.readouterr().out)
    assert arm["components"]["paddle"]["version"] == "3.2.2"
    assert arm["components"]["paddle2onnx"]["version"] == "1.3.1"
    assert {k: v for k, v in arm["components"].items() if k not in ("paddle", "paddle2onnx")} == \
        {k: v for k, v in first["components"].items() if k not in ("paddle", "paddle2onnx")}


def test_a_platform_the_flavor_does_not_build_is_one_line(capsys) -> None:
    assert cli.main(["--root", str(REPO), "manifest", "show", "26.12", "--flavor", "gpu", "--platform", ARM]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: release 26.12: flavor gpu is not built for linux/arm64 (NVIDIA's sbsa")
    assert err.endswith("fix: use one of its platforms (linux/amd64) or add it to flavors.gpu.platforms")


def test_the_resolved_flavor_of_a_platform_has_its_versions_and_its_lock_path() -> None:
    release = ResolvedRelease.load(REPO, "26.12")
    amd, arm = release.flavor("cpu"), release.flavor("cpu", ARM)
    assert amd is release.flavor("cpu", "linux/amd64") and arm is release.flavor("cpu", ARM)  # resolved once each
    assert (amd.platform, arm.platform) == ("linux/amd64", ARM)
    assert amd.lock_file == REPO / "releases" / "26.12-cpu.lock.json"  # where it always was
    assert arm.lock_file == REPO / "releases" / "26.12-cpu.arm64.lock.json"
    assert arm.spec.components["paddle"].version == "3.2.2" and amd.spec.components["paddle"].version == "3.3.1"
    # the engine holds one platform per tag here: arm64 is tagged apart (the release assembles the index)
    assert arm.tags == (amd.tags[0] + "-arm64",)


def test_notes_and_support_matrix_show_the_versions_that_differ() -> None:
    release = ResolvedRelease.load(REPO, "26.12")
    text = notes_text(release, {}, None)
    assert "| PaddlePaddle | paddlepaddle | 3.3.1 (linux/arm64: 3.2.2) |" in text
    assert "| paddle2onnx | paddle2onnx | 2.1.0 (linux/arm64: 1.3.1) |" in text
    assert "| onnxruntime | onnxruntime | 1.23.2 |" in text
    assert "Platforms: linux/amd64, linux/arm64." in text
    assert "Platforms: linux/amd64. Not built for linux/arm64 yet: NVIDIA's sbsa" in text
    assert "On linux/arm64: paddle2onnx 1.3.1 (not 2.1.0 as on linux/amd64): paddle2onnx 2.1.0 needs onnxoptimizer" \
        in text
    matrix = support_matrix([release.manifest, load_manifest(REPO / "releases" / "23.01.yaml")])
    assert "| 3.3.1 (linux/arm64: 3.2.2) | linux/amd64, linux/arm64 |" in matrix
    assert "| 2.4.1 | linux/amd64 |" in matrix  # 23.01's gpu: the default platform
    old = support_matrix([load_manifest(REPO / "releases" / "23.01.yaml")])
    assert "platforms" not in old  # a matrix of default-platform releases alone is as it was


def test_platform_names_per_tool() -> None:
    arm = platform_named(ARM)
    assert (arm.debian_arch, arm.machine, arm.qualifier) == ("arm64", "aarch64", "arm64")
    assert PLATFORMS[DEFAULT_PLATFORM].qualifier == ""
    with pytest.raises(ValueError, match="'linux/riscv64' is not a known platform"):
        platform_named("linux/riscv64")
    assert host_platform() is not None
    assert lock_path(Path("r"), "26.12", "cpu", ARM) == Path("r/26.12-cpu.arm64.lock.json")
