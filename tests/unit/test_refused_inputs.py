"""Inputs that used to end in a traceback or pass without a word: each is now one line (exit 2) naming the thing
and the fix, or the right result. No engine: engine calls are faked where a command would reach them."""

import contextlib
import io
import json
import subprocess
import types
from pathlib import Path

import pytest

from ngc_paddle import cli, engine
from ngc_paddle.release import state_file
from ngc_paddle.release.ab import compare
from ngc_paddle.release.fleet.runners import local

REPO = Path(__file__).resolve().parents[2]
IMAGE_ID = "sha256:" + "ab" * 32


def run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["--root", str(REPO), *argv])
    return code, err.getvalue()


def one_line(code: int, err: str) -> str:
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and "; fix: " in err, (code, err)
    return err


@pytest.fixture(autouse=True)
def no_engine(monkeypatch) -> None:
    """Nothing here may reach docker, a job or a registry, even with a fix taken out to see its test fail."""
    def reached(*args, **kwargs):
        raise AssertionError(f"the engine was reached: {args[:1]}")

    stub = types.SimpleNamespace(**{**vars(subprocess), "run": reached, "Popen": reached})
    monkeypatch.setattr(engine, "subprocess", stub)
    monkeypatch.setattr(local, "subprocess", stub)
    monkeypatch.setattr(state_file.State, "record", reached)


@pytest.fixture
def images_here(monkeypatch) -> None:
    """Every image is on this host (no pull, no run: a test reaching a job would fail loudly)."""
    monkeypatch.setattr(compare.engine, "image_id", lambda ref: IMAGE_ID)
    monkeypatch.setattr(compare, "run_job", lambda *a, **k: pytest.fail("the A/B ran"))


@pytest.mark.parametrize("under", [False, True])
def test_bench_compare_output_that_is_a_file_or_under_one(tmp_path: Path, images_here, under: bool) -> None:
    (tmp_path / "taken").write_text("keep")
    output = tmp_path / "taken" / "deeper" if under else tmp_path / "taken"
    err = one_line(*run("bench-compare", "ngc-paddle:26.12-cpu", "--reference", f"r/x@{IMAGE_ID}",
                        "--output", str(output)))
    assert ("lies under" if under else "is a file, not a folder") in err
    assert (tmp_path / "taken").read_text() == "keep"


def test_a_round_whose_figure_overflows_to_infinity_is_a_missing_figure_not_a_crash(tmp_path: Path) -> None:
    from ngc_paddle.release.ab import ab_report

    ab = tmp_path / "bench-ab"
    ab.mkdir()
    (ab / "outcome").write_text("done\n")
    lines = []
    for r in range(0, 6):
        for side in ("candidate", "reference"):
            out = ab / f"round-{r:02d}" / side / "bench-rn50" / "rn50-1"
            out.mkdir(parents=True)
            ips = "1e400" if (r, side) == (3, "candidate") else "10.5"  # JSON's grammar allows it; it parses as inf
            (out / "result.json").write_text(json.dumps({"results": {"train": {"fp32": {"ips": 10.5}}}})
                                             .replace("10.5", ips))
            lines.append(f"round-{r:02d}\t{side}\tbench-rn50\t0\t{1000 + r}\t900")
    (ab / "rounds.tsv").write_text("\n".join(lines) + "\n")
    summary = ab_report.analyze(ab, 5.0)
    assert summary["rounds"] == 5
    assert any("round 03 candidate bench-rn50" in r and "results.train.fp32.ips: inf is not a finite number" in r
               for r in summary["reasons"]), summary["reasons"]


DIGEST = "sha256:" + "0a" * 32


@pytest.mark.parametrize("command", [["gates", "26.12"], ["release", "26.12"],
                                     ["bench-compare", "ngc-paddle:26.12-cpu", "--reference", f"r/x@{DIGEST}"]])
@pytest.mark.parametrize("value", ["reg istry:5000", "127.0.0.1:5000\nx", "https://registry.example", "reg:5000:1"])
def test_a_registry_docker_would_refuse_is_one_line(images_here, command: list[str], value: str) -> None:
    err = one_line(*run(*command, "--registry", value))
    assert err.startswith(f"error: --registry {value!r}"[:30]) and "is not a registry HOST[:PORT][/PATH]" in err


def test_a_registry_with_a_path_is_still_one(monkeypatch) -> None:
    ran = []
    monkeypatch.setattr(engine.subprocess, "run", lambda cmd, env, **k: ran.append(env["REGISTRY_PORT"]) or
                        subprocess.CompletedProcess(cmd, 0, "", ""))
    engine.ensure_registry("127.0.0.1:5001/team")
    assert ran == ["5001"]


@pytest.mark.parametrize(("reference", "needle"), [
    ("r:5000/ngc-paddle@sha256:0a0a", "is not sha256: followed by exactly 64 lower-case hex digits"),
    ("r:5000/ngc-paddle@sha256:", "is not sha256: followed by exactly 64"),
    ("r:5000/ngc-paddle@", "digest '' is not sha256: followed by exactly 64"),
    ("cpu=", "'' names no digest"),
    ("r:5000/ngc-paddle@sha256:" + "0A" * 32, "is not sha256: followed by exactly 64"),
    ("r:5000/ngc-paddle@sha256:" + "0" * 65, "is not sha256: followed by exactly 64"),
    (f"@{DIGEST}", "'' is not a repository"),
    (f"r:5000/@{DIGEST}", "'r:5000/' is not a repository"),
    (f" r:5000/ngc-paddle@{DIGEST}", "is not a repository"),
    (f"r:5000/ngc paddle@{DIGEST}", "is not a repository"),
    (f"r:5000/{'a' * 5000}@{DIGEST}", "characters: no image reference is that long"),
    (f"r:5000/{'a' * 300}@{DIGEST}", "more than 255"),
    ("r:5000/ngc-paddle:26.12-cpu", "names no digest"),
    (f"=r:5000/ngc-paddle@{DIGEST}", "names no flavor"),
])
@pytest.mark.parametrize("command", ["gates", "release"])
def test_a_reference_is_parsed_with_the_oci_grammar(command: str, reference: str, needle: str) -> None:
    err = one_line(*run(command, "26.12", "--reference", reference))
    assert "--reference " in err and needle in err and "fix: --reference [FLAVOR=]REGISTRY/REPO@sha256:" in err


@pytest.mark.parametrize("command", ["gates", "release"])
def test_a_reference_for_a_flavor_the_release_lacks_is_one_line(command: str) -> None:
    err = one_line(*run(command, "26.12", "--reference", f"cpux=r:5000/ngc-paddle@{DIGEST}"))
    assert "'cpux' is not a flavor of release 26.12 (cpu, gpu" in err


def test_good_references_are_kept_per_flavor() -> None:
    refs = cli._references([f"r:5000/ngc-paddle@{DIGEST}", f"gpu=r:5000/team/ngc-paddle:26.11-gpu@{DIGEST}",
                            f"ubuntu@{DIGEST}"])
    assert refs == {"*": f"ubuntu@{DIGEST}", "gpu": f"r:5000/team/ngc-paddle:26.11-gpu@{DIGEST}"}


@pytest.mark.parametrize("rounds", ["0", "-3", "1000"])
@pytest.mark.parametrize("command", [["gates", "26.12", "--ab-rounds"], ["release", "26.12", "--ab-rounds"],
                                     ["bench-compare", "ngc-paddle:26.12-cpu", "--reference", f"r/x@{DIGEST}",
                                      "--rounds"]])
def test_rounds_out_of_range_say_how_many_can_decide(images_here, command: list[str], rounds: str) -> None:
    from ngc_paddle.release.ab import verdict

    err = one_line(*run(*command, rounds))
    assert f"{command[-1]} {rounds}: (argument): must be 1 to 999, and a FAIL needs at least " \
           f"{verdict.FAIL_MIN_ROUNDS} (the paired signed-rank test cannot reach p < 0.05 with fewer)" in err


def test_rounds_in_range_and_the_defaults_are_kept() -> None:
    from ngc_paddle.release.ab.plan import Size

    assert Size.of(None, False, False).rounds == 5 and Size.of(None, True, False).rounds == 3
    assert Size.of(2, True, False).rounds == 2 and Size.of(999, False, False).rounds == 999
    assert Size.of(1, False, False).rounds == 1  # the least: one round decides nothing alone, yet it is asked for


@pytest.mark.parametrize("command", ["gates", "release"])
@pytest.mark.parametrize("name", ["bench-resnet", "rn50", "bench-rn50 bench-hgnet", "x" * 500])
def test_bench_names_a_shipped_benchmark(command: str, name: str) -> None:
    err = one_line(*run(command, "26.12", "--bench", "bench-rn50", "--bench", name))
    assert ": (argument): is not a benchmark of the image; fix: name one of bench-rn50, bench-hgnet" in err


def test_the_shipped_benchmarks_are_taken_and_the_default_is_all() -> None:
    from ngc_paddle.release.options import BENCHMARKS, benchmarks

    assert benchmarks(None) == BENCHMARKS and benchmarks(["bench-hgnet"]) == ("bench-hgnet",)


def _fleet(tmp_path: Path, profile: dict) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(json.dumps({"profiles": {"cpu": profile}}))  # JSON is YAML
    return path


@pytest.mark.parametrize("command", ["gates", "release"])
def test_a_fleet_naming_a_flavor_the_release_lacks_is_one_line(tmp_path: Path, command: str) -> None:
    fleet = _fleet(tmp_path, {"flavors": ["cpu", "cpux"], "local": {}})
    err = one_line(*run(command, "26.12", "--fleet", str(fleet)))
    assert "profiles.cpu.flavors: 'cpux' is not a flavor of release 26.12 (cpu, gpu" in err


@pytest.mark.parametrize("shared_dir", ["/", "//", "/scratch/../etc", "/scratch/./x", "/.."])
def test_a_fleet_shared_dir_of_the_root_or_with_dots_is_refused(tmp_path: Path, shared_dir: str) -> None:
    from ngc_paddle.release.fleet import fleet_schema

    fleet = _fleet(tmp_path, {"slurm": {"partition": "cpu", "shared_dir": shared_dir}})
    with pytest.raises(fleet_schema.FleetError, match=r"profiles\.cpu\.slurm\.shared_dir: .*(root folder|'\.\.')"):
        fleet_schema.load(fleet, REPO)
    err = one_line(*run("gates", "26.12", "--fleet", str(fleet)))
    assert "shared_dir" in err


def test_a_fleet_shared_dir_below_the_root_is_kept(tmp_path: Path) -> None:
    from ngc_paddle.release.fleet import fleet_schema

    fleet = fleet_schema.load(_fleet(tmp_path, {"slurm": {"partition": "cpu", "shared_dir": "/scratch/ngc.x"}}), REPO)
    assert fleet.profiles["cpu"].slurm.shared_dir == "/scratch/ngc.x"


def _previous_run(tmp_path: Path) -> tuple[Path, Path]:
    """A release 26.12 after a 26.11 whose cpu flavor left one run of bench-rn50: (the root, the run's folder)."""
    (tmp_path / "releases").mkdir()
    text = (REPO / "releases" / "26.12.yaml").read_text()
    (tmp_path / "releases" / "26.12.yaml").write_text(text)
    (tmp_path / "releases" / "26.11.yaml").write_text(text.replace('release: "26.12"', 'release: "26.11"'))
    folder = tmp_path / "build" / "release" / "26.11" / "cpu" / "bench" / "bench-rn50" / "rn50-20261101T000000Z"
    folder.mkdir(parents=True)
    return tmp_path, folder


def _baselines(root: Path) -> dict[str, Path]:
    from ngc_paddle.flavor import ResolvedRelease
    from ngc_paddle.release.stages import bench as bench_stage

    return bench_stage.previous_bench_results(ResolvedRelease.load(root, "26.12"), "cpu", ("bench-rn50",))


@pytest.mark.parametrize(("change", "needle"), [
    (lambda d: d["results"]["train"]["fp32"].update(img_per_s=d["results"]["train"]["fp32"].pop("ips")),
     "results.train.fp32: has no 'ips'"),
    (lambda d: (d.update(model="hgnet"), d["config"].update(benchmark="hgnet")), "model: a result of bench-'hgnet'"),
    (lambda d: d["results"]["infer"]["paddle-inference"].update(fp64={}),
     "results.infer.paddle-inference.fp64: 'fp64' is not an inference precision"),
])
def test_a_stored_baseline_the_benchmark_would_refuse_is_not_used(tmp_path: Path, change, needle: str) -> None:
    from ngc_paddle.host_errors import NgcPaddleError
    from tests.unit.fuzz_support import bench_result

    root, run_folder = _previous_run(tmp_path)
    data = bench_result("rn50")
    (run_folder / "result.json").write_text(json.dumps(data))
    assert _baselines(root) == {"bench-rn50": run_folder / "result.json"}  # what --baseline takes, the release takes
    change(data)
    (run_folder / "result.json").write_text(json.dumps(data))
    with pytest.raises(NgcPaddleError) as info:
        _baselines(root)
    assert f"result.json: {needle}" in str(info.value) and f"fix: delete {run_folder}" in str(info.value)


@pytest.mark.parametrize("kind", ["dangling link", "folder"])
def test_an_unreadable_stored_result_is_no_silent_no_baseline(tmp_path: Path, kind: str) -> None:
    from ngc_paddle.host_errors import NgcPaddleError

    root, run_folder = _previous_run(tmp_path)
    if kind == "folder":
        (run_folder / "result.json").mkdir()
    else:
        (run_folder / "result.json").symlink_to(tmp_path / "gone.json")
    with pytest.raises(NgcPaddleError, match=r"result\.json: \(file\): (no such file|is a directory)") as info:
        _baselines(root)
    assert f"fix: delete {run_folder}" in str(info.value) and str(info.value).count("\n") == 0


def _declarations(tmp_path: Path, text: str | None) -> Path:
    path = tmp_path / "layers" / "declared-files.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is not None:
        path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "needle"), [
    ("layers:\n  pytorch:\n    - {path: /etc/x, why: x}\n", "'pytorch' is not a layer (os, cuda, dali"),
    ("layers:\n  os:\n    - {path: \"/etc/x\\u0007y\", why: x}\n", "holds the control character U+0007"),
    ("layers:\n  os:\n    - {path: \"/etc/x\\u202ey\", why: x}\n", "holds the control character U+202E"),
    ("layers:\n  os:\n    - {path: /etc/x, why: \"a\\u0000b\"}\n", "holds the control character U+0000"),
])
def test_declared_files_take_only_layers_and_plain_paths(tmp_path: Path, text: str, needle: str) -> None:
    from ngc_paddle.scan.checks import integrity

    path = _declarations(tmp_path, text)
    with pytest.raises(integrity.DeclarationError) as info:
        integrity.load_declarations(tmp_path)
    assert str(info.value).startswith(f"{path}: layers.") and needle in str(info.value)


@pytest.mark.parametrize("kind", ["folder", "dangling link"])
def test_declared_files_that_cannot_be_read_are_not_no_declarations(tmp_path: Path, kind: str) -> None:
    from ngc_paddle.scan.checks import integrity

    path = _declarations(tmp_path, None)
    if kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "gone.yaml")
    with pytest.raises(integrity.DeclarationError, match=r"declared-files\.yaml: \(file\): (is a directory|no such)"):
        integrity.load_declarations(tmp_path)
    path.unlink() if kind != "folder" else path.rmdir()
    assert integrity.load_declarations(tmp_path) == {}  # absent: nothing declared, as before


NUMPY = "      numpy: {layer: paddle, kind: pip, package: numpy, version: 2.4.6, source: pypi, license: BSD-3-Clause}\n"


@pytest.mark.parametrize("command", [["manifest", "show", "26.12", "--flavor", "cpu"], ["bake-file", "26.12"],
                                     ["release", "new", "27.01", "--from", "26.12", "--dry-run"],
                                     ["manifest", "check", "26.12"]])
def test_one_pip_package_at_two_versions_in_a_flavor_is_refused(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "releases").mkdir()
    text = (REPO / "releases" / "26.12.yaml").read_text()
    assert text.count(NUMPY) >= 1
    twice = NUMPY + NUMPY.replace("numpy:", "numpy-pinned:").replace("numpy,", "NumPy,").replace("2.4.6", "2.4.5")
    (tmp_path / "releases" / "26.12.yaml").write_text(text.replace(NUMPY, twice, 1))
    for lock in (REPO / "releases").glob("26.12-*.lock.json"):
        (tmp_path / "releases" / lock.name).write_bytes(lock.read_bytes())
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["--root", str(tmp_path), *command])
    assert code == 2 and "flavors.cpu: components 'numpy' (numpy==2.4.6) and 'numpy-pinned' (NumPy==2.4.5) pin the " \
        "pip package numpy at two versions; keep one entry" in err.getvalue(), err.getvalue()
    assert not (tmp_path / "releases" / "27.01.yaml").exists() and not (tmp_path / "build").exists()


DATA = REPO / "tests" / "data"


def _nulled(data: dict, where: tuple) -> dict:
    node = data
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = None
    return data


@pytest.mark.parametrize("report, where", [
    *(("trivy", w) for w in [("Results",), ("Results", 0, "Vulnerabilities"), ("Results", 2, "Secrets"),
                             ("Results", 0, "Vulnerabilities", 0, "FixedVersion"), ("CreatedAt",), ("SchemaVersion",)]),
    *(("grype", w) for w in [("matches", 0, "vulnerability", "fix"), ("matches", 0, "vulnerability", "description"),
                             ("descriptor",), ("distro",)]),
])
def test_null_in_a_scanner_report_where_a_value_belongs_is_bad_input(tmp_path: Path, report: str,
                                                                    where: tuple) -> None:
    from ngc_paddle.scan.vulnerabilities.scanners import ReportError, read_grype, read_trivy

    path = tmp_path / f"{report}.json"
    path.write_text(json.dumps(_nulled(json.loads((DATA / "reports" / f"{report}.json").read_text()), where)))
    with pytest.raises(ReportError) as info:
        {"trivy": read_trivy, "grype": read_grype}[report](path)
    assert f"{path}: {'.'.join(map(str, where))}: is null where the format requires a value" in str(info.value)


@pytest.mark.parametrize("where", [
    ("modified",), ("database_specific",), ("database_specific", "severity"), ("affected", 0, "package"),
    ("affected", 0, "ranges", 0, "events", 1, "fixed"), ("affected", 0, "ecosystem_specific"),
])
def test_null_in_an_osv_advisory_where_a_value_belongs_is_bad_input(tmp_path: Path, where: tuple) -> None:
    from ngc_paddle.scan.vulnerabilities.scanners import ReportError, load_osv

    data = json.loads((DATA / "osv" / "GHSA-q2q7-5pp4-w6pg.json").read_text())
    if where[-1] == "ecosystem_specific":
        data["affected"][0]["ecosystem_specific"] = {}
    (tmp_path / "osv").mkdir()
    path = tmp_path / "osv" / "advisory.json"
    path.write_text(json.dumps(_nulled(data, where)))
    with pytest.raises(ReportError) as info:
        load_osv(tmp_path / "osv")
    assert f"{path}: 0.{'.'.join(map(str, where))}: is null where the format requires a value" in str(info.value)


def test_absent_optional_keys_still_read_as_before(tmp_path: Path) -> None:
    from ngc_paddle.scan.vulnerabilities.scanners import read_grype, read_trivy

    trivy = json.loads((DATA / "reports" / "trivy.json").read_text())
    del trivy["Results"][0]["Vulnerabilities"][0]["FixedVersion"]
    (tmp_path / "trivy.json").write_text(json.dumps(trivy))
    assert read_trivy(tmp_path / "trivy.json")[0].fixed == ""
    grype = json.loads((DATA / "reports" / "grype.json").read_text())
    del grype["matches"][0]["vulnerability"]["fix"]
    grype["matches"][0]["relatedVulnerabilities"] = None  # grype's own way of writing none
    (tmp_path / "grype.json").write_text(json.dumps(grype))
    assert read_grype(tmp_path / "grype.json")[0].fixed == ""
