"""Another platform than the default one (linux/arm64 on x86-64): its build targets and tags, the emulation a run
under qemu detects, and the NOT PROVEN verdicts that follow from it. The default platform's build is unchanged."""

import hashlib
import importlib.util
import json
import marshal
import os
import py_compile
import re
from pathlib import Path
from types import MappingProxyType

import pytest

from benchmarks.harness import acceptance_gates, cpu_kind
from ngc_common import emulation
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.image_build.bakefile import NATIVE_PYTHON, bake_definition
from ngc_paddle.layers import FOREIGN_PIP_DOCKERFILE
from ngc_paddle.manifest import load_manifest
from ngc_paddle.scan.source.inventory import record_hash

XEON = ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n"
        "flags\t\t: fpu sse4_1 sse4_2 avx avx2 fma\n")
GRACE = ("processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes sha2 crc32 atomics sve sve2 svebf16\n"
         "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n")
GRAVITON2 = GRACE.replace("sve sve2 svebf16", "").replace("0xd4f", "0xd0c")


def release(repo: Path) -> ResolvedRelease:
    return ResolvedRelease(repo.resolve(), load_manifest(repo / "releases" / "26.12.yaml"), MappingProxyType({}))


# ---- emulation ---------------------------------------------------------------------------------------------------

def test_an_arm64_program_on_an_x86_cpu_is_emulated() -> None:
    found = emulation.detect(XEON, "aarch64")
    assert found.emulated and found.host == "x86_64"
    assert found.reason().startswith("emulated: aarch64 programs run under qemu-user on a x86_64 CPU")


def test_a_native_run_is_not_emulated() -> None:
    assert not emulation.detect(GRACE, "aarch64").emulated
    assert not emulation.detect(XEON, "x86_64").emulated
    assert emulation.detect(XEON, "x86_64").reason() is None
    assert not emulation.detect("", "aarch64").emulated  # nothing to go by: only positive evidence counts


def test_an_x86_program_on_an_arm_cpu_is_emulated() -> None:
    assert emulation.detect(GRACE, "x86_64").host == "aarch64"


def test_pid_1_under_qemu_is_read_as_the_program_it_runs() -> None:
    seen = b"/usr/libexec/qemu-binfmt/aarch64-binfmt-P\0/usr/bin/tini\0/usr/bin/tini\0-g\0--\0validate\0".split(b"\0")
    assert emulation.guest_argv(seen)[:2] == [b"/usr/bin/tini", b"-g"]
    flagged = [b"/usr/bin/qemu-aarch64-static", b"/usr/bin/tini", b"-g"]  # the F flag without P: no argv[0] kept
    assert emulation.guest_argv(flagged) == [b"/usr/bin/tini", b"-g"]
    native = [b"/usr/bin/tini", b"-g", b"--"]
    assert emulation.guest_argv(native) == native


def test_a_hangs_time_budget_is_longer_under_emulation() -> None:
    assert emulation.budget(240, emulated=False) == 240
    assert emulation.budget(240, emulated=True) == 240 * emulation.SLOWDOWN > 240


# ---- the CPU kind of an arm64 host -------------------------------------------------------------------------------

def test_neoverse_cores_and_their_widest_vector_unit_are_recognised() -> None:
    assert cpu_kind.detect(GRACE, {}, "aarch64").name == "neoverse-v2-sve2"
    assert cpu_kind.detect(GRAVITON2, {}, "aarch64").name == "neoverse-n1-neon"
    ampere_one = GRAVITON2.replace("0x41", "0xc0").replace("0xd0c", "0xac3")
    assert cpu_kind.detect(ampere_one, {}, "aarch64").name == "ampere-neon"


def test_an_emulated_run_has_no_cpu_kind_of_its_own() -> None:
    assert cpu_kind.detect(XEON, {}, "aarch64").name == "emulated-aarch64"


# ---- benchmark gates under emulation -----------------------------------------------------------------------------

def _table() -> dict:
    floor = {"name": "eff", "metric": "train.fp32.efficiency_paddle", "min": 0.5, "source": "s",
             "when": {"cpu_kind": "amd-avx2"}}
    other_kind = {**floor, "when": {"cpu_kind": "intel-avx512"}}
    relative = [{"name": "loss", "metric": "train.summary.loss_finite", "min": 1},
                {"name": "batching", "metric": "infer.summary.bs8_over_bs1", "min": 0.5}]
    return {"models": {"m": {"cpu": [floor, other_kind], "relative": relative}}}


def test_every_cpu_gate_of_an_emulated_run_is_not_proven() -> None:
    reason = emulation.detect(XEON, "aarch64").reason()
    results = {"train": {"fp32": {"efficiency_paddle": 0.9}, "summary": {"loss_finite": 1}},
               "infer": {"summary": {"bs8_over_bs1": 2.0}}}  # figures that would pass natively
    config = {"precisions": ["fp32"], "cpu_kind": "emulated-aarch64"}
    verdicts, outcome = acceptance_gates.judge(_table(), "m", "cpu", results, config, None, None, None, None, reason)
    by_gate = {v.gate: (v.status, v.reason) for v in verdicts}
    assert len(verdicts) == 3  # the floor once, not once per CPU kind
    assert by_gate["eff"] == by_gate["batching"] == ("NOT PROVEN", reason)
    assert by_gate["loss"][0] == "PASS"  # a functional gate decides under emulation too
    assert outcome.verdict == "NOT PROVEN" and outcome.reasons == [reason]
    smoke, smoked = acceptance_gates.judge(_table(), "m", "cpu", results, {**config, "smoke": True}, None, None,
                                           None, None, reason)
    assert smoked.verdict == "SMOKE" and smoke[0].status == "NOT PROVEN"
    natively = acceptance_gates.judge(_table(), "m", "cpu", results, {**config, "cpu_kind": "amd-avx2"}, None, None,
                                      None, None)
    assert natively[1].verdict == "PASS"


# ---- validation under emulation ----------------------------------------------------------------------------------

def test_an_emulated_validation_is_not_proven_though_every_check_passed() -> None:
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "validation"))
    from ngc_report import verdict
    checks = [{"id": "func.paddle-run-check", "status": "passed", "message": "ok"}]
    summary = {"counts": {"passed": 1, "failed": 0, "error": 0, "skipped": 0}, "checks": checks, "gpu_flavor": False}
    assert verdict(summary) == ("PASS", [])
    result, reasons = verdict({**summary, "emulated": emulation.detect(XEON, "aarch64").reason()})
    assert result == "NOT PROVEN" and reasons[0].startswith("emulated: aarch64")


# ---- the build ---------------------------------------------------------------------------------------------------

def test_the_arm64_flavor_has_tags_of_its_own(repo: Path) -> None:
    rel = release(repo)
    arm, amd = rel.flavor("cpu", "linux/arm64"), rel.flavor("cpu")
    image = rel.manifest.image
    assert arm.tags == (f"{image}:26.12-cpu-arm64",) and arm.build_name == "cpu-arm64" and arm.foreign
    assert amd.tags == (f"{image}:26.12-cpu", f"{image}:26.12") and amd.build_name == "cpu" and not amd.foreign
    assert set(arm.layer_tags.values()).isdisjoint(amd.layer_tags.values())
    assert arm.layer_tags["os"] == f"{image}-layers:26.12-cpu-arm64-os"


def test_arm64_targets_build_for_arm64_and_install_wheels_on_the_build_platform(repo: Path) -> None:
    rel = release(repo)
    arm = rel.flavor("cpu", "linux/arm64")
    targets = bake_definition(rel, foreign=arm)["target"]
    for layer in ("os", "dali", "paddle", "suite"):
        assert targets[f"{layer}-cpu-arm64"]["platforms"] == ["linux/arm64"]
    paddle = targets["paddle-cpu-arm64"]
    assert paddle["dockerfile"] == str(FOREIGN_PIP_DOCKERFILE)
    assert paddle["contexts"] == {"ngc-layer-below": "target:dali-cpu-arm64", NATIVE_PYTHON: "target:os-cpu"}
    assert paddle["args"]["PIP_PLATFORMS"].split()[0] == "manylinux_2_36_aarch64"
    assert "manylinux2014_aarch64" in paddle["args"]["PIP_PLATFORMS"].split()
    spec = json.loads(paddle["args"]["LAYER_SPEC"])
    assert {p["name"]: p["version"] for p in spec["packages"]}["paddlepaddle"] == "3.2.2"  # the arm64 pin
    assert targets["os-cpu-arm64"]["args"]["BASE_IMAGE"] == "ngc-paddle-base:bookworm-arm64"
    assert "amd64" not in targets["os-cpu-arm64"]["args"]["APT_PACKAGES"]
    assert targets["suite-cpu-arm64"]["dockerfile"] == "Dockerfile"


def test_the_default_platform_layers_mount_nothing_of_the_foreign_build(repo: Path) -> None:
    """The amd64 layers' inputs (and BuildKit's cache of them) stay as they were: nothing of the arm64 build lives in
    a folder they mount."""
    mounted = {m for layer in ("dali", "paddle") for m in
               re.findall(r"source=([\w/.]+)", (repo / "layers" / layer / "Dockerfile").read_text())}
    assert "layers/lib" in mounted and not any(str(FOREIGN_PIP_DOCKERFILE).startswith(m) for m in mounted)


def test_the_default_platform_targets_are_unchanged_by_an_arm64_build(repo: Path) -> None:
    rel = release(repo)
    plain = bake_definition(rel)
    with_arm = bake_definition(rel, foreign=rel.flavor("cpu", "linux/arm64"))
    assert {k: v for k, v in with_arm["target"].items() if not k.endswith("-arm64")} == plain["target"]
    assert all("platforms" not in t for t in plain["target"].values())
    assert "PIP_PLATFORMS" not in plain["target"]["paddle-cpu"]["args"]


# ---- the installer's foreign mode --------------------------------------------------------------------------------

@pytest.fixture
def installer():
    path = Path(__file__).resolve().parents[2] / "layers" / "foreign" / "install_foreign.py"
    spec = importlib.util.spec_from_file_location("install_foreign", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_foreign_install_takes_only_the_target_platforms_wheels(installer, monkeypatch) -> None:
    monkeypatch.setenv("PIP_PLATFORMS", "manylinux_2_36_aarch64 manylinux_2_17_aarch64")
    flags = installer.foreign_flags({}, "/opt/t")
    assert flags[:2] == ["--target", "/opt/t/site-packages"]
    platforms = [flags[i + 1] for i, f in enumerate(flags) if f == "--platform"]
    assert platforms == ["manylinux_2_36_aarch64", "manylinux_2_17_aarch64", "any"]


def test_a_foreign_install_without_platforms_is_one_line(installer, monkeypatch, capsys) -> None:
    monkeypatch.delenv("PIP_PLATFORMS", raising=False)
    monkeypatch.setenv("LAYER_SPEC", json.dumps({"layer": "paddle", "release": "26.12", "flavor": "cpu"}))
    with pytest.raises(SystemExit):
        installer.foreign_flags(json.loads(os.environ["LAYER_SPEC"]), "/opt/t")
    line = capsys.readouterr().out.strip()
    assert line.startswith("NGC-PADDLE-ERROR layer paddle: installing for another platform needs the PIP_PLATFORMS "
                           "build argument; fix: build another platform's layer through make image PLATFORMS=")


def test_files_installed_outside_site_packages_move_to_the_venv_and_their_records_name_them_there(
        installer, tmp_path: Path) -> None:
    """The arm64 image's scan found /opt/venv/bin/pip and the rest, then sympy's man page under site-packages/share,
    owned by no package: their RECORDs named them where pip --target's temporary install had them."""
    site = tmp_path / "site-packages"
    (site / "bin").mkdir(parents=True)
    (site / "bin" / "pip").write_text("#!/opt/venv/bin/python\n")
    (site / "share" / "man" / "man1").mkdir(parents=True)
    (site / "share" / "man" / "man1" / "isympy.1").write_text(".TH isympy\n")
    (site / "share" / "keep").mkdir()
    (site / "share" / "keep" / "mine.txt").write_text("a package's own file in a folder named share")
    (site / "pip-26.3.dist-info").mkdir()
    record = site / "pip-26.3.dist-info" / "RECORD"
    record.write_text("../../bin/pip,sha256=abc,23\npip/__init__.py,sha256=def,1\n../../bin/gone,sha256=x,1\n")
    (site / "sympy-1.14.0.dist-info").mkdir()
    sympy = site / "sympy-1.14.0.dist-info" / "RECORD"
    sympy.write_text("../../share/man/man1/isympy.1,sha256=m,12\nshare/keep/mine.txt,sha256=k,44\n")
    installer.move_data_files(str(tmp_path))
    assert (tmp_path / "bin" / "pip").read_text() == "#!/opt/venv/bin/python\n" and not (site / "bin").exists()
    assert (tmp_path / "share" / "man" / "man1" / "isympy.1").read_text() == ".TH isympy\n"
    assert not (site / "share" / "man").exists() and (site / "share" / "keep" / "mine.txt").is_file()
    assert record.read_text().splitlines() == ["../../../bin/pip,sha256=abc,23", "pip/__init__.py,sha256=def,1",
                                               "../../bin/gone,sha256=x,1"]
    assert sympy.read_text().splitlines() == ["../../../share/man/man1/isympy.1,sha256=m,12",
                                              "share/keep/mine.txt,sha256=k,44"]


def _pip_target_install(root: Path, temp_name: str) -> Path:
    """A site-packages as pip --target leaves it: the .pyc compiled in its temporary install, named there."""
    site = root / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "mod.py").write_text("def f():\n    raise ValueError('here')\n")
    pyc = importlib.util.cache_from_source("pkg/mod.py")
    py_compile.compile(str(site / "pkg" / "mod.py"), cfile=str(site / pyc), dfile=f"/tmp/{temp_name}/pkg/mod.py",
                       doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    (site / "pkg-1.0.dist-info").mkdir()
    (site / "pkg-1.0.dist-info" / "RECORD").write_bytes(
        f"pkg/mod.py,sha256=src,40\r\n{pyc},sha256=old,1\r\n../../bin/tool,sha256=t,5\r\n"
        "pkg-1.0.dist-info/RECORD,,\r\n".encode())
    return site


def test_a_foreign_installs_bytecode_names_the_venvs_source_and_two_installs_write_the_same_bytes(
        installer, tmp_path: Path) -> None:
    """pip --target compiled each .pyc in /tmp/pip-target-XXXX, and the .pyc kept that path: the arm64 layers
    differed from build to build, and a traceback in the image named a path it lacks."""
    pyc = importlib.util.cache_from_source("pkg/mod.py")
    sites = [_pip_target_install(tmp_path / name, name) for name in ("pip-target-a1", "pip-target-b2")]
    assert (sites[0] / pyc).read_bytes() != (sites[1] / pyc).read_bytes()
    for site in sites:
        installer.recompile_bytecode(str(site.parent), "/opt/venv/lib/python3.11/site-packages")
    data = (sites[0] / pyc).read_bytes()
    assert data == (sites[1] / pyc).read_bytes()
    assert int.from_bytes(data[4:8], "little") == 0b11  # hash-based and checked, as pip writes with SOURCE_DATE_EPOCH
    code = marshal.loads(data[16:])
    assert code.co_filename == "/opt/venv/lib/python3.11/site-packages/pkg/mod.py"
    digest = record_hash(hashlib.sha256(data).digest())  # as the scan's integrity check reads RECORDs
    assert (sites[0] / "pkg-1.0.dist-info" / "RECORD").read_bytes() == (
        f"pkg/mod.py,sha256=src,40\r\n{pyc},sha256={digest},{len(data)}\r\n../../bin/tool,sha256=t,5\r\n"
        "pkg-1.0.dist-info/RECORD,,\r\n").encode()
