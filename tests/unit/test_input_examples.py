"""One example per class of bad input that the readers used to crash on, hang on, or accept silently.

Each ends in one line on stderr starting with `error:` and exit 2 through the CLI, or a
one-line error of the project's type naming the file (issue 11).
"""

import dataclasses
import importlib.util
import json
import os
import re
import tempfile
from datetime import date
from pathlib import Path

import pytest
import yaml

from benchmarks.harness import acceptance_gates as bench_gates
from benchmarks.harness import bench_cli as bench_cli
from benchmarks.rn50.spec import SPEC as RN50_SPEC
from ngc_common import bench_result as result_schema
from ngc_paddle import cli
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import ManifestError, NgcPaddleError
from ngc_paddle.manifest import load_manifest
from ngc_paddle.release.stages import bench as bench_stage
from ngc_paddle.scan import gate, policy
from ngc_paddle.scan.findings import Finding, dedupe
from ngc_paddle.scan.vulnerabilities.scanners import ReportError, load_osv, read_grype, read_trivy
from tests.unit.fuzz_support import assert_one_line, bench_result, time_bound

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
MANIFEST_TEXT = (REPO / "releases" / "26.12.yaml").read_text()
PADDLE_PIN = "package: paddlepaddle, version: 3.3.1"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    with time_bound(10):
        code = cli.main(list(argv))
    err = capsys.readouterr().err
    return code, err


def assert_cli_error(code: int, err: str) -> str:
    assert code == 2, (code, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "; fix: " in lines[0], err
    return lines[0]


# ---- scan gate inputs through the CLI -------------------------------------------------------------

def test_malformed_trivy_report_exits_2_not_1(tmp_path: Path, capsys) -> None:
    report = json.loads((DATA / "reports" / "trivy.json").read_text())
    del report["Results"][0]["Vulnerabilities"][0]["VulnerabilityID"]
    path = tmp_path / "trivy.json"
    path.write_text(json.dumps(report))
    code, err = run_cli(capsys, "scan", "--policy", str(REPO / "security/policy.yaml"), "--trivy-report", str(path),
                        "--output", str(tmp_path / "out"), "ngc-paddle:26.12-cpu")
    line = assert_cli_error(code, err)
    assert f"{path}: Results.0.Vulnerabilities.0.VulnerabilityID: required key is missing" in line
    assert not (tmp_path / "out").exists()


def test_fifo_given_as_a_report_does_not_hang(tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    with time_bound(60):  # a blocking open() of the FIFO would hang here for ever
        code, err = run_cli(capsys, "scan", "--policy", str(REPO / "security/policy.yaml"), "--grype-report",
                            str(fifo), "ngc-paddle:26.12-cpu")
    assert "is a FIFO, not a regular file" in assert_cli_error(code, err)


@pytest.mark.parametrize("given, needle", [
    ("/dev/null", "is a device"), (".", "is a directory"), ("x" * 300 + ".json", "the path is too long"),
])
def test_files_that_are_not_regular_files(capsys, given: str, needle: str) -> None:
    code, err = run_cli(capsys, "scan", "--policy", str(REPO / "security/policy.yaml"), "--trivy-report", given,
                        "ngc-paddle:26.12-cpu")
    assert needle in assert_cli_error(code, err)


def test_impossible_today_is_bad_input(capsys) -> None:
    code, err = run_cli(capsys, "scan", "--today", "2026-02-30", "ngc-paddle:26.12-cpu")
    assert "--today '2026-02-30'" in assert_cli_error(code, err)


def test_image_name_with_a_shell_command_is_refused(capsys) -> None:
    code, err = run_cli(capsys, "scan", "--policy", str(REPO / "security/policy.yaml"), "x; rm -rf /")
    assert "not an image reference" in assert_cli_error(code, err)


@pytest.mark.parametrize("text, field", [
    ("block_on: [secrets, private-key]\n", "block_on.0"),  # a typo used to make secrets informational
    ("block_on: secret\n", "block_on"),  # a string used to be read as its letters
    ("block_on: 5\n", "block_on"),
    ('count_unfixed: "false"\n', "count_unfixed"),  # used to be read as true
    ("allowlist: {id: x}\n", "allowlist"),
    ("allowlist:\n  - {id: X, package: p, justification: j, expires: 2027-13-01}\n", "(file)"),
    ('allowlist:\n  - {id: X, package: p, justification: j, expires: "2027-02-30"}\n', "allowlist.0.expires"),
    ("severity_threshold: HIGH\nseverity_threshold: LOW\n", "(file)"),
])
def test_bad_policy_exits_2_naming_the_field(tmp_path: Path, capsys, text: str, field: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    code, err = run_cli(capsys, "scan", "--policy", str(path), "ngc-paddle:26.12-cpu")
    assert assert_cli_error(code, err).startswith(f"error: {path}: {field}: ")


def test_block_on_secret_blocks_a_critical_secret(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("block_on: [secret]\n")
    secret = Finding("secret", "aws-access-key-id", "CRITICAL", "key", package="/root/.aws/credentials")
    assert policy.decide(policy.load(path), [secret], date(2026, 12, 2)).blocked


@pytest.mark.parametrize("tool, edit, field", [
    ("trivy", lambda r: r.update(Results="abc"), "Results"),
    ("trivy", lambda r: r["Results"][0]["Vulnerabilities"][0].update(Severity=4),
     "Results.0.Vulnerabilities.0.Severity"),
    ("grype", lambda r: r["matches"][1]["vulnerability"]["fix"].update(versions="1.26.5"),
     "matches.1.vulnerability.fix.versions"),
    ("grype", lambda r: r["matches"][0].update(artifact=None), "matches.0.artifact"),
])
def test_mistyped_report_fields(tmp_path: Path, tool: str, edit, field: str) -> None:
    report = json.loads((DATA / "reports" / f"{tool}.json").read_text())
    edit(report)
    path = tmp_path / f"{tool}.json"
    path.write_text(json.dumps(report))
    with pytest.raises(ReportError) as info:
        (read_trivy if tool == "trivy" else read_grype)(path)
    assert_one_line(str(info.value), path)
    assert str(info.value).startswith(f"{path}: {field}: ")


@pytest.mark.parametrize("text, needle", [
    ('{"matches": [], "x": NaN}', "NaN is not a JSON number"),
    ("[" * 100 + "]" * 100, "nests deeper than"),
    ('{"matches": [], "matches": []}', "duplicate key 'matches'"),
])
def test_report_syntax_bounds(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "grype.json"
    path.write_text(text)
    with pytest.raises(ReportError, match=re.escape(needle)):
        read_grype(path)


@pytest.mark.parametrize("edit, needle", [
    (lambda a: a.update(affected=None), "0.affected: Input should be a valid list"),
    (lambda a: a["database_specific"].update(severity=9), "0.database_specific.severity"),  # was UNKNOWN: a pass
    (lambda a: a["affected"][0]["ranges"][0]["events"][1].update(fixed="not a version"), "is not a PyPI version"),
])
def test_bad_osv_records(tmp_path: Path, edit, needle: str) -> None:
    advisory = json.loads((DATA / "osv" / "GHSA-q2q7-5pp4-w6pg.json").read_text())
    edit(advisory)
    (tmp_path / "a.json").write_text(json.dumps(advisory))
    with pytest.raises(ReportError, match=re.escape(needle)):
        load_osv(tmp_path)


# ---- manifests ------------------------------------------------------------------------------------

def manifest_error(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "releases" / "26.12.yaml"
    path.parent.mkdir(exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert_one_line(str(info.value), path)
    return str(info.value).removeprefix(f"{path}: ")


def edited(old: str, new: str) -> str:
    assert old in MANIFEST_TEXT
    return MANIFEST_TEXT.replace(old, new, 1)


@pytest.mark.parametrize("text, needle", [
    (edited("schema_version: 1", "schema_version: 1.0"), "schema_version: schema_version must be the integer 1"),
    (edited("schema_version: 1", "schema_version: true"), "schema_version: schema_version must be the integer 1"),
    (edited("dependency_source", "dependency_sources") if "dependency_source" in MANIFEST_TEXT
     else MANIFEST_TEXT + "dependency_sources: pypi\n", "dependency_sources: unknown key"),
    (edited("version: 3.3.1, source: pypi", 'version: "3.3.1\\n", source: pypi'), "is not a PEP 440 version"),
    (edited("version: 3.3.1, source: pypi", 'version: "\uff13.3.1", source: pypi'), "is not a PEP 440 version"),
    (edited('version: "3.11"', 'version: "3.11\\n"'), "is not a Debian-style version"),
    (edited("suite: bookworm", 'suite: "bookworm\\ndeb http://evil.example/ bookworm main"'),
     "sources.debian.suite: "),
    (edited("extra_packages: [python3-venv", "extra_packages: [-o, APT::Get::AllowUnauthenticated=true, python3-venv"),
     "extra_packages.0: '-o' is not a Debian package name"),
    (edited(PADDLE_PIN, 'package: "paddlepaddle --extra-index-url http://x", version: 3.3.1'),
     "flavors.cpu.components.paddle.package: "),
    (edited(PADDLE_PIN, 'package: "paddlepaddle[x]", version: 3.3.1'), "paddle.package: 'paddlepaddle[x]'"),
    (edited("url: https://pypi.org/simple", 'url: "https://pypi.org/simple\\n--trusted-host x"'), "sources.pypi.url: "),
    (edited("url: https://pypi.org/simple", "url: 'https://'"), "sources.pypi.url: "),
    (edited("image: ngc-paddle", "image: 'ngc-paddle; rm -rf /'"), "image: 'ngc-paddle; rm -rf /' is not an image"),
    (edited('image: "debian:bookworm-slim"', 'image: "debian:bookworm-slim; rm -rf /"'), ".os.image: "),
    (edited("version: 3.3.1, source: pypi, license", "version: 3.3.1, source: pypi, cuda: -1, license"),
     "flavors.cpu.components.paddle.cuda: "),
    (edited("version: 3.3.1, source: pypi, license", "version: 3.3.1, source: pypi, cuda: 12, license"),
     "flavors.cpu: components ['paddle'] set 'cuda:' in a flavor without CUDA"),
    (edited("cuda: 12\n", "cuda: true\n"), "flavors.gpu.components.paddle.cuda: "),
    (edited("  cpu:\n    description", "  " + "c" * 300 + ":\n    description"), "flavors."),
    (edited("description: CPU-only image", "description: CPU-only image" + "x" * 5000), "longer than 2000"),
    (edited("default_flavor: cpu\n", "default_flavor: cpu\ndefault_flavor: gpu\n"), "duplicate key 'default_flavor'"),
    (edited("  pypi:\n", "  pypi:\n    kind: pip-index\n    url: https://evil.example/simple\n  pypi:\n"),
     "duplicate key 'pypi'"),
    ("a: &a [*a]\n", "(file): holds a value that contains itself"),
    ("x: " + "[" * 200 + "]" * 200 + "\n", "nests deeper than"),
    (MANIFEST_TEXT.encode("utf-16"), "(file): is not UTF-8 text"),
    (MANIFEST_TEXT.replace("Debian", "D\u00e9bian").encode("latin-1"), "(file): is not UTF-8 text"),
    (__import__("gzip").compress(MANIFEST_TEXT.encode()), "(file): is not UTF-8 text"),
    ("x: " + "y" * (2 * 1024 * 1024) + "\n", "more than the limit"),
])
def test_bad_manifests(tmp_path: Path, text: str | bytes, needle: str) -> None:
    assert needle in manifest_error(tmp_path, text)


def test_manifest_check_prints_one_line_per_bad_manifest(tmp_path: Path, capsys) -> None:
    (tmp_path / "releases").mkdir()
    (tmp_path / "releases" / "26.12.yaml").write_bytes(b"\xff\xfe")
    code, err = run_cli(capsys, "--root", str(tmp_path), "manifest", "check")
    assert "is not UTF-8 text (byte 0" in assert_cli_error(code, err)


def test_source_override_with_an_option_is_refused(capsys) -> None:
    code, err = run_cli(capsys, "--root", str(REPO), "bake-file", "26.12", "--source",
                        "pypi=https://mirror.example/simple\n--trusted-host evil")
    assert "--source pypi: url: " in assert_cli_error(code, err)


# ---- no writes on failure, no writes through symlinks ---------------------------------------------

def _repo_copy(tmp_path: Path) -> Path:
    (tmp_path / "releases").mkdir(parents=True)
    (tmp_path / "releases" / "26.12.yaml").write_text(MANIFEST_TEXT)
    return tmp_path


def test_bake_file_writes_nothing_when_it_fails(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _repo_copy(tmp_path)
    assert run_cli(capsys, "--root", str(root), "bake-file", "26.12")[0] == 0
    before = {p: p.read_text() for p in (root / "build").rglob("*.json")}
    for p in before:
        p.write_text("previous\n")
    from ngc_paddle.image_build import bakefile

    def fail(*_a, **_k):
        raise NgcPaddleError("late failure; fix: nothing")

    monkeypatch.setattr(bakefile, "bake_definition", fail)
    assert run_cli(capsys, "--root", str(root), "bake-file", "26.12")[0] == 2
    assert {p: p.read_text() for p in before} == dict.fromkeys(before, "previous\n")
    assert not [p for p in (root / "build").rglob("*") if p.name.startswith(".")], "temporary files left behind"


def test_bake_file_replaces_a_symlink_instead_of_writing_through_it(tmp_path: Path, capsys) -> None:
    root = _repo_copy(tmp_path / "repo")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (root / "build" / "bake").mkdir(parents=True)
    links = [root / "build" / "bake" / "26.12.json", root / "docker-bake.override.json"]
    for link in links:
        link.symlink_to(victim)
    assert run_cli(capsys, "--root", str(root), "bake-file", "26.12")[0] == 0
    assert victim.read_text() == "keep me\n"
    for link in links:
        assert not link.is_symlink() and "suite-cpu" in json.loads(link.read_text())["target"]


def test_bake_file_refuses_a_symlinked_output_folder(tmp_path: Path, capsys) -> None:
    root = _repo_copy(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "build").mkdir()
    (root / "build" / "bake").symlink_to(elsewhere)
    code, err = run_cli(capsys, "--root", str(root), "bake-file", "26.12")
    assert "is a symlink" in assert_cli_error(code, err)
    assert not list(elsewhere.iterdir())


def test_scan_that_fails_late_keeps_the_previous_outputs(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for name in ("sbom.cdx.json", "scan.json", "scan.md"):
        (out / name).write_text("previous\n")

    class NoLayers:
        def __init__(self) -> None:
            self.layers: list = []
            self.config: dict = {}
            self.labels: dict = {}
            self.user, self.reference, self.path = "1000", None, Path("/nonexistent")

    def trivy_fails(*_a, **_k):
        raise NgcPaddleError("trivy failed: late; fix: nothing")

    monkeypatch.setattr(gate.layer_source, "open_image", lambda image, work, say: (NoLayers(), "docker save"))
    monkeypatch.setattr(gate.layer_checks, "scan_config", lambda image, layers: [])
    monkeypatch.setattr(gate.scanners, "run_trivy", trivy_fails)
    with pytest.raises(NgcPaddleError, match="trivy failed"):
        gate.run("ngc-paddle:26.12-cpu", out, REPO / "security/policy.yaml", None, [], root=tmp_path,
                 say=lambda line: None)
    assert sorted(p.name for p in out.iterdir()) == ["sbom.cdx.json", "scan.json", "scan.md"]
    assert all((out / n).read_text() == "previous\n" for n in ("sbom.cdx.json", "scan.json", "scan.md"))


# ---- linear work ----------------------------------------------------------------------------------

def test_dedupe_of_50k_findings_merges_each_pair() -> None:
    """Its speed is measured by perf/scan/bench_dedupe.py (5k against 50k side by side), not here."""
    findings = [Finding("vulnerability", f"CVE-{i % 25_000}", "HIGH", "t", package=f"p{i % 25_000}", installed="1",
                        aliases=[f"GHSA-{i}"]) for i in range(50_000)]
    merged = dedupe(findings)
    assert len(merged) == 25_000 and merged[0].aliases == ["GHSA-0", "GHSA-25000"]


def test_dedupe_merges_through_aliases_like_before() -> None:
    a = Finding("vulnerability", "GHSA-1", "HIGH", "t", package="u", installed="1", aliases=["CVE-1"])
    b = Finding("vulnerability", "CVE-1", "CRITICAL", "t", package="u", installed="1")
    c = Finding("vulnerability", "CVE-1", "LOW", "t", package="other", installed="1")
    merged = dedupe([a, b, c])
    assert [(f.id, f.package, f.severity) for f in merged] == [("GHSA-1", "u", "CRITICAL"), ("CVE-1", "other", "LOW")]


def test_yaml_fixture_is_still_plain() -> None:
    assert yaml.safe_load(MANIFEST_TEXT)["release"] == "26.12"


# ---- the benchmarks' gates file and --baseline (checked before Paddle loads) ----------------------

GATES_TEXT = (REPO / "benchmarks" / "gates.yaml").read_text()
RN50 = RN50_SPEC  # the real one: its options and recipe


def run_bench(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> tuple[int, str]:
    with time_bound(30):
        code = bench_cli.main(RN50, [*argv, "--output", str(tmp_path / "out")])
    return code, capsys.readouterr().err


CPU_WHEN = "when: {cpu_kind: intel-avx512, image_size: 128, batch_size: 16"  # the first CPU floor


def gates_edited(tmp_path: Path, old: str, new: str) -> str:
    assert old in GATES_TEXT
    path = tmp_path / "gates.yaml"
    path.write_text(GATES_TEXT.replace(old, new, 1))
    return str(path)


@pytest.mark.parametrize("old, new, needle", [
    ("min: 0.29", 'min: "fast"', "models.rn50.cpu.0.min: Input should be a valid number, not 'fast'"),
    ("min: 0.29", "min: .nan", "models.rn50.cpu.0.min: "),
    ("min: 0.29", "min: true", "models.rn50.cpu.0.min: Input should be a valid number, not True"),
    ("min: 0.29", "max: 0.5, min: 0.29", "models.rn50.cpu.0: a gate needs exactly one of min: or max:"),
    (CPU_WHEN, CPU_WHEN.replace("image_size: 128", 'image_size: "128"'),
     "models.rn50.cpu.0.when.image_size: Input should be a valid integer"),
    (CPU_WHEN, CPU_WHEN.replace("image_size:", "image_sizes:"),
     "when.image_sizes: unknown key"),
    ("    A30:\n", "    A30x:\n", "models.rn50.A30x: no profile of that name"),
    ("max_regression_pct: 5", "max_regression_pct: 5\nmax_regression_pct: 50", "(file): not valid YAML"),
    ('match: "GH200"', 'match: "GH200("', "profiles.0.match: 'GH200(' is not a regular expression"),
    # found by the long fuzz run: an explicit null where a key may only be left out crashed the gate evaluation
    ("when: {infer_image_size: 224}, source: \"DLE 17364", "when: null, source: \"DLE 17364",
     "models.rn50.A100-80GB.3.when: Input should be a valid dictionary"),
    ("min: 0.29", "min: null, max: 1", "models.rn50.cpu.0.min: Input should be a valid number, not None"),
    (CPU_WHEN, CPU_WHEN.replace("image_size: 128", "image_size: null"), "when.image_size: "),
    (CPU_WHEN, CPU_WHEN.replace("cpu_kind: intel-avx512, ", ""), "models.rn50.cpu.0.when: a CPU floor holds for the "
     "CPU kind it was measured on"),
    ("peak_tflops: {fp32: 67, tf32", "peak_tflops: {fp32: null, tf32", "profiles.0.peak_tflops.fp32: "),
])
def test_bad_gates_file_exits_2_before_the_run(tmp_path: Path, capsys, old: str, new: str, needle: str) -> None:
    path = gates_edited(tmp_path, old, new)
    code, err = run_bench(capsys, tmp_path, "--gates", path)
    assert needle in assert_cli_error(code, err).removeprefix(f"error: {path}: ")
    assert not (tmp_path / "out").exists()


def baseline_file(tmp_path: Path, data: object) -> str:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data))
    return str(path)


def _result(edit=None, model: str = "rn50") -> dict:
    data = bench_result(model)
    if edit:
        edit(data)
    return data


@pytest.mark.parametrize("data, needle", [
    ([1, 2], "(top level): a result.json is a mapping, not a list"),
    ({"results": {}}, ": required key is missing"),
    (_result(model="hgnet"), "model: a result of bench-'hgnet', not of bench-rn50"),
    (_result(lambda d: d.update(verdict="SMOKE")), "config.smoke: a --smoke run"),
    (_result(lambda d: d["results"]["infer"]["paddle-inference"]["fp32"]["bs1"].update(ips="fast")),
     "results.infer.paddle-inference.fp32.bs1.ips: a measurement must be a number, not 'fast'"),
    (_result(lambda d: d["results"]["train"]["fp32"]["latency_ms"].update(p99=True)), "latency_ms.p99: a measurement"),
    (_result(lambda d: d["environment"].update(hardware=7)), "environment.hardware: Input should be a valid string"),
    (_result(lambda d: d.update(validation="x")), "validation: unknown key"),
    (_result(lambda d: d.update(passed=False)), "passed: is False but the verdict is PASS"),
])
def test_bad_baseline_exits_2_before_the_run(tmp_path: Path, capsys, data: object, needle: str) -> None:
    path = baseline_file(tmp_path, data)
    code, err = run_bench(capsys, tmp_path, "--baseline", path)
    assert needle in assert_cli_error(code, err), err
    assert not (tmp_path / "out").exists()


def test_overflowing_number_in_a_baseline_is_refused(tmp_path: Path, capsys) -> None:
    data = bench_result("rn50")
    data["results"]["peak"]["float32"]["peak_flops"] = 12345.5
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data).replace("12345.5", "1e400"))  # JSON's grammar allows it; it parses as inf
    code, err = run_bench(capsys, tmp_path, "--baseline", str(path))
    assert "results.peak.float32.peak_flops: inf is not a finite number" in assert_cli_error(code, err)


def test_a_baseline_with_an_efficiency_above_one_is_refused(tmp_path: Path, capsys) -> None:
    data = bench_result("rn50")
    data["results"]["train"]["fp32"]["efficiency"] = 3.9  # what a peak that the workload beats used to give
    code, err = run_bench(capsys, tmp_path, "--baseline", baseline_file(tmp_path, data))
    assert "results.train.fp32.efficiency: an efficiency of 3.9 is above 1.0: a probe failure" in \
        assert_cli_error(code, err)


def test_truncated_baseline_is_one_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(bench_result("rn50"))[:500])
    code, err = run_bench(capsys, tmp_path, "--baseline", str(path))
    assert "(file): not valid JSON" in assert_cli_error(code, err)


def test_the_schema_reads_what_the_writer_writes(tmp_path: Path) -> None:
    """report.write's result.json passes the one strict schema, every gate verdict field included."""
    path = tmp_path / "result.json"
    path.write_text(json.dumps(bench_result("rn50")))
    result = result_schema.read(path, "unused")
    assert result.model == "rn50" and result.gates
    assert {f.name for f in dataclasses.fields(bench_gates.Verdict)} == set(result_schema.GateVerdict.model_fields)


# ---- the release pipeline's state.json and stored results ------------------------------------------

def release_root(tmp_path: Path, state: object) -> Path:
    root = _repo_copy(tmp_path)
    path = root / "build" / "release" / "26.12" / "state.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(state))
    return path


@pytest.mark.parametrize("state, needle", [
    ({"cpu": {"build": 5}}, "cpu.build: Input should be a valid dictionary"),
    ({"cpu": 5}, "cpu: Input should be a valid dictionary"),
    ({"cpu": {"build": {"key": "", "status": "done", "detail": "", "finished": "2026-12-01T00:00:00+00:00"}}},
     "cpu.build.status: Input should be 'passed', 'failed', 'not proven', 'accepted unproven', 'unsigned' or "
     "'not run', not 'done'"),
    ({"cpu": {"build": {"key": "", "status": "passed", "detail": "", "finished": "yesterday"}}},
     "cpu.build.finished: 'yesterday' is not an ISO 8601 time"),
    ([], "(top level): Input should be a valid dictionary"),
])
def test_bad_release_state_exits_2_naming_the_fix(tmp_path: Path, capsys, state: object, needle: str) -> None:
    path = release_root(tmp_path, state)
    code, err = run_cli(capsys, "--root", str(tmp_path), "release", "26.12")
    line = assert_cli_error(code, err)
    assert line.startswith(f"error: {path}: {needle}"), line
    assert line.endswith(f"fix: delete {path} to start over (every stage then reruns)"), line


def test_undecodable_release_state(tmp_path: Path, capsys) -> None:
    path = release_root(tmp_path, {})
    path.write_bytes(b"\x1f\x8b\x08\x00")
    code, err = run_cli(capsys, "--root", str(tmp_path), "release", "26.12")
    assert assert_cli_error(code, err).endswith(f"is not UTF-8 text (byte 1: b'\\x8b'); fix: delete {path} to start "
                                                "over (every stage then reruns)")


def test_a_stored_result_that_is_no_result_stops_the_release(tmp_path: Path) -> None:
    root = _repo_copy(tmp_path)
    (root / "releases" / "26.11.yaml").write_text(MANIFEST_TEXT.replace('release: "26.12"', 'release: "26.11"'))
    run = root / "build" / "release" / "26.11" / "cpu" / "bench" / "bench-rn50" / "rn50-20261101T000000Z"
    run.mkdir(parents=True)
    (run / "result.json").write_text(json.dumps(bench_result("rn50")))
    release = ResolvedRelease.load(root, "26.12")
    assert release.previous_release.release == "26.11"
    assert bench_stage.previous_bench_results(release, "cpu", ("bench-rn50",)) == {
        "bench-rn50": run / "result.json"}
    (run / "result.json").write_text(json.dumps({"verdict": 1}))
    with pytest.raises(NgcPaddleError) as info:
        bench_stage.previous_bench_results(release, "cpu", ("bench-rn50",))
    assert_one_line(str(info.value), run / "result.json")
    assert f"fix: delete {run} (the previous release's run of it then gives no baseline)" in str(info.value)


# ---- a bug is exit 4, never 1 ---------------------------------------------------------------------

def test_an_internal_error_exits_4_with_the_traceback_in_a_file(capsys, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cli, "cmd_manifest_check", lambda args: {}["boom"])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, err = run_cli(capsys, "manifest", "check")
    assert code == 4, (code, err)
    lines = err.splitlines()
    match = re.fullmatch(r"error: internal error: KeyError: 'boom'; fix: report this with the traceback in (\S+)",
                         lines[0])
    assert len(lines) == 1 and match, err
    saved = Path(match.group(1))
    assert saved.parent == tmp_path and "Traceback" in saved.read_text() and "KeyError: 'boom'" in saved.read_text()


def test_an_internal_error_in_a_benchmark_exits_4_not_1(capsys, monkeypatch, tmp_path: Path) -> None:
    def broken(path: Path) -> dict:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(bench_gates, "load", broken)
    (tmp_path / "out").mkdir()
    code, err = run_bench(capsys, tmp_path)
    assert code == 4, (code, err)
    assert err.startswith("error: internal error: ZeroDivisionError: division by zero; fix: report this with the "
                          f"traceback in {tmp_path / 'out'}/bench-rn50-internal-error-") and err.count("\n") == 1
    assert "in broken" in next((tmp_path / "out").glob("bench-rn50-internal-error-*.txt")).read_text()


def test_interrupt_is_130_not_an_internal_error(capsys, monkeypatch) -> None:
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_manifest_check", interrupted)
    code, err = run_cli(capsys, "manifest", "check")
    assert code == 130 and "internal error" not in err


def test_a_crash_of_the_validation_runner_exits_4_not_1(monkeypatch, capsys) -> None:
    spec = importlib.util.spec_from_file_location("validation_run", REPO / "validation" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def broken() -> int:
        raise RuntimeError("a bug in the runner")

    monkeypatch.setattr(module, "main", broken)
    assert module.entry() == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: internal error: RuntimeError: a bug in the runner; fix: ")
