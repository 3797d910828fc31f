"""The last inputs a mutation run got through: each one now ends in one line naming it (exit 2), or does
the right thing (a quoted version is bumped as the diff says)."""

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

from ngc_common import bench_result
from ngc_common.errors import InputError
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.lock.check import mismatch
from ngc_paddle.lock.lock_file import read_lock
from ngc_paddle.lock.subject import ManifestFlavor
from ngc_paddle.manifest import load_manifest
from ngc_paddle.release.fleet import fleet_schema
from ngc_paddle.release.new import create
from tests.unit.fuzz_support import bench_result as result_fixture
from tests.unit.test_input_crashes import REPO, run


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "releases", tmp_path / "releases")
    return tmp_path


# ---- fleet files: an SSH port is 1-65535 --------------------------------------------------------------------

def _fleet(tmp_path: Path, place: dict) -> fleet_schema.Fleet:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump({"profiles": {"cpu": place}}))
    return fleet_schema.load(path, REPO)


@pytest.mark.parametrize("host", ["gpu01:99999", "ops@gpu01:0", "gpu01:65536", "gpu01:00022"])
def test_an_ssh_port_outside_1_to_65535_is_refused(tmp_path: Path, host: str) -> None:
    with pytest.raises(fleet_schema.FleetError) as caught:
        _fleet(tmp_path, {"ssh": {"hosts": [host]}})
    line = str(caught.value)
    assert "profiles.cpu.ssh.hosts.0" in line and "PORT 1-65535" in line and "\n" not in line, line


def test_ports_1_and_65535_are_taken_and_a_docker_host_port_is_bounded_too(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, {"ssh": {"hosts": ["gpu01:1", "ops@gpu02:65535", "gpu03"]}})
    assert fleet.profiles["cpu"].ssh.hosts == ["gpu01:1", "ops@gpu02:65535", "gpu03"]
    with pytest.raises(fleet_schema.FleetError, match=r"docker_host.*PORT 1-65535"):
        _fleet(tmp_path, {"ssh": {"hosts": ["gpu01"], "docker_host": "tcp://gpu01:70000"}})


# ---- locks: a component's layer and each Debian package once --------------------------------------------------

def _edited_lock(tree: Path, edit) -> Path:
    path = tree / "releases" / "26.12-cpu.lock.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2))
    return path


def test_a_component_locked_in_another_layer_than_the_manifest_says_is_refused(tree: Path) -> None:
    def move(data: dict) -> None:
        entry = next(e for e in data["pip"] if e.get("component") == "paddle")
        entry["layer"] = "suite"  # a layer of the flavor, but not the one the manifest puts Paddle in

    path = _edited_lock(tree, move)
    manifest = load_manifest(tree / "releases" / "26.12.yaml")
    problem = mismatch(ManifestFlavor(manifest, "cpu"), read_lock(path))
    assert problem is not None and problem.startswith("pip.paddlepaddle.layer: ") and "'suite'" in problem
    assert f"'{manifest.flavors['cpu'].components['paddle'].layer}'" in problem
    code, err = run("--root", str(tree), "manifest", "check", "26.12")
    assert code == 2 and "pip.paddlepaddle.layer" in err and "fix: run 'ngc-paddle lock" in err


@pytest.mark.parametrize("field", ["debian", "base"])
def test_a_lock_listing_one_debian_package_twice_is_refused(tree: Path, field: str) -> None:
    def twice(data: dict) -> None:
        entries = data["debian"] if field == "debian" else data["base"]["packages"]
        entries.append({**entries[0], "version": entries[0]["version"] + "+other1"})

    path = _edited_lock(tree, twice)
    with pytest.raises(ManifestError) as caught:
        read_lock(path)
    line = str(caught.value)
    assert "twice" in line and "+other1" in line and "\n" not in line and "fix: " in line, line


# ---- release new: the version as the loader reads it, whatever the quoting ------------------------------------

def test_release_new_bumps_quoted_versions_and_takes_a_single_quoted_release(tree: Path) -> None:
    path = tree / "releases" / "26.12.yaml"
    text = path.read_text()
    text = text.replace('release: "26.12"', "release: '26.12'")
    text = text.replace("package: pytest, version: 9.0.3,", 'package: pytest, version: "9.0.3",')
    text = text.replace("package: PyYAML, version: 6.0.4,", "package: 'PyYAML', version: '6.0.4',")
    assert "release: '26.12'" in text and '"9.0.3"' in text and "'6.0.4'" in text
    path.write_text(text)
    assert load_manifest(path).release == "26.12"  # what manifest check accepts, release new takes
    lookup = {"pytest": "9.1.0", "PyYAML": "7.0", "paddlepaddle": "3.4.0"}
    new_path, diff, proposals = create("27.01", "26.12", tree, lookup=lambda p, i, py: lookup.get(p),
                                       say=lambda _l: None)
    new = load_manifest(new_path)
    suite = new.flavors["cpu"].components
    assert new.release == "27.01" and "release: '27.01'" in new_path.read_text()
    assert suite["pytest"].version == "9.1.0" and suite["pyyaml"].version == "7.0"  # "7.0" stays a string
    assert suite["paddle"].version == "3.4.0"
    assert 'package: pytest, version: "9.1.0",' in diff and "version: '7.0'" in diff
    reported = {p.package: p.new for p in proposals if p.new != p.old}
    assert reported == {"pytest": "9.1.0", "PyYAML": "7.0", "paddlepaddle": "3.4.0"}


def test_release_new_that_cannot_write_a_bump_says_so_instead_of_reporting_it(tree: Path) -> None:
    path = tree / "releases" / "26.12.yaml"
    text = path.read_text().replace("package: pytest, version: 9.0.3,", "package: pytest, version: !!str 9.0.3,")
    path.write_text(text)
    with pytest.raises(ManifestError, match=r"components \(pytest\): could not move version 9.0.3 to 9.1.0"):
        create("27.01", "26.12", tree, lookup=lambda p, i, py: {"pytest": "9.1.0"}.get(p), say=lambda _l: None)
    assert not (tree / "releases" / "27.01.yaml").exists()


def test_release_new_from_itself_is_refused(tree: Path) -> None:
    code, err = run("--root", str(tree), "release", "new", "26.12", "--from", "26.12", "--dry-run")
    assert code == 2 and "cannot start from itself" in err and err.count("\n") == 1


# ---- empty strings where a name is needed -------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "named"), [
    (["manifest", "show", "26.12", "--flavor", ""], "--flavor"),
    (["manifest", "show", ""], "RELEASE"),
    (["scan", "ngc-paddle:26.12-cpu", "--today", ""], "--today"),
    (["build", "--flavor", ""], "--flavor"),
    (["release", "new", "27.01", "--from", " "], "--from"),
    (["lock", "26.12", "--flavor", "cpu", "--flavor", ""], "--flavor"),
])
def test_an_empty_argument_is_refused_naming_it(tree: Path, argv: list[str], named: str) -> None:
    code, err = run("--root", str(tree), *argv)
    assert code == 2 and err.startswith(f"error: {named}: (argument): is empty; fix: ") and err.count("\n") == 1, err


# ---- manifest check on nothing ------------------------------------------------------------------------------

@pytest.mark.parametrize("make_folder", [True, False])
def test_manifest_check_with_no_manifests_is_an_error(tmp_path: Path, make_folder: bool) -> None:
    if make_folder:
        (tmp_path / "releases").mkdir()
    code, err = run("--root", str(tmp_path), "manifest", "check")
    assert code == 2 and "holds no release manifest" in err and err.count("\n") == 1, err


# ---- the baseline reader: no deep nesting, no renamed keys ----------------------------------------------------

GOOD = result_fixture("rn50")


def _baseline(tmp_path: Path, edit) -> Path:
    data = copy.deepcopy(GOOD)
    edit(data["results"])
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))
    return path


def _nest(results: dict) -> None:
    node = results["train"]["fp32"]
    for _ in range(40):
        node["deeper"] = {}
        node = node["deeper"]


def _rename(parent_path: tuple[str, ...], old: str, new: str):
    def edit(results: dict) -> None:
        parent = results
        for key in parent_path:
            parent = parent[key]
        parent[new] = parent.pop(old)
    return edit


@pytest.mark.parametrize(("edit", "field", "what"), [
    (_nest, "results", "nests deeper than 8 levels"),
    (_rename(("train", "fp32"), "ips", "ipz"), "results.train.fp32", "has no 'ips'"),
    (_rename(("train",), "fp32", "fp23"), "results.train.fp23", "not a training precision"),
    (_rename(("infer", "paddle-inference", "fp32"), "bs1", "bsone"), "results.infer.paddle-inference.fp32.bsone",
     "not a batch size"),
    (_rename(("infer", "paddle-inference"), "fp32", "fp-32"), "results.infer.paddle-inference.fp-32",
     "not an inference precision"),
    (_rename(("infer", "paddle-inference", "fp32", "bs8"), "ips", "IPS"), "results.infer.paddle-inference.fp32.bs8",
     "has no 'ips'"),
    # issue 30: where the harness knows every name, any other is a renamed figure the gate would skip silently
    (_rename(("train", "fp32"), "efficiency", "eff"), "results.train.fp32.eff", "is not a figure"),
    (_rename(("infer", "paddle-inference", "fp32", "bs1"), "efficiency_paddle", "efficiency-paddle"),
     "results.infer.paddle-inference.fp32.bs1.efficiency-paddle", "is not a figure"),
    (_rename(("train", "fp32"), "latency_ms", "latency"), "results.train.fp32.latency", "is not a figure"),
    (_rename(("infer", "paddle-inference", "fp32", "bs8", "latency_ms"), "p99", "p999"),
     "results.infer.paddle-inference.fp32.bs8.latency_ms.p999", "is not a latency figure"),
    (lambda r: r["train"]["fp32"]["latency_ms"].pop("mean"), "results.train.fp32.latency_ms", "must map each"),
    (_rename(("peak",), "float32", "fp32"), "results.peak.fp32", "is not a dtype whose peak"),
    (_rename(("peak", "float32"), "peak_flops", "peak"), "results.peak.float32.peak_flops", "is missing"),
    (_rename(("infer",), "paddle-inference", "paddle_inference"), "results.infer.paddle_inference",
     "is not an inference back end"),
])
def test_the_baseline_reader_refuses_deep_nesting_and_renamed_keys(tmp_path: Path, edit, field: str,
                                                                   what: str) -> None:
    bench_result.read_baseline(_baseline(tmp_path, lambda r: None), "rn50")  # the fixture itself is a baseline
    with pytest.raises(InputError) as caught:
        bench_result.read_baseline(_baseline(tmp_path, edit), "rn50")
    line = str(caught.value)
    assert f": {field}: " in line and what in line and "\n" not in line and "fix: " in line, line


def _set(parent_path: tuple[str, ...], key: str, value):
    def edit(results: dict) -> None:
        parent = results
        for part in parent_path:
            parent = parent[part]
        parent[key] = value
    return edit


@pytest.mark.parametrize(("edit", "field", "what"), [
    (_set(("train", "fp32"), "efficiency", 1.0000001), "results.train.fp32.efficiency", "is above 1.0"),
    (_set(("train", "fp32"), "efficiency_paddle", 2.0), "results.train.fp32.efficiency_paddle", "is above 1.0"),
    (_set(("train", "fp32"), "ips", True), "results.train.fp32.ips", "a measurement must be a number, not True"),
    (_set(("train", "fp32"), "ips", "fast"), "results.train.fp32.ips", "a measurement must be a number"),
    (_set(("train", "fp32"), "loss_last", float("inf")), "results.train.fp32.loss_last", "is not a finite number"),
    (_set(("train", "fp32"), "x" * 65, 1), "results.train.fp32", "is not a word"),
    (_set(("infer", "paddle-inference", "fp32", "bs1"), "engine", "tvm"),
     "results.infer.paddle-inference.fp32.bs1.engine", "names no engine this suite runs"),
])
def test_a_result_whose_figures_are_out_of_range_is_refused(tmp_path: Path, edit, field: str, what: str) -> None:
    """The ranges a result.json's figures must keep: an efficiency of at most 1.0, numbers (not booleans or text)
    where a measurement is, finite values, keys of 1-64 word characters, an engine the suite runs."""
    data = copy.deepcopy(GOOD)
    edit(data["results"])
    with pytest.raises(InputError) as caught:
        bench_result.parse(tmp_path / "result.json", data)
    assert f": {field}: " in str(caught.value) and what in str(caught.value), str(caught.value)
    assert str(caught.value).startswith(f"{tmp_path / 'result.json'}: ")
    assert str(caught.value).endswith(f"; fix: {bench_result.FIX}")


def test_a_result_that_is_not_a_mapping_is_refused_and_an_efficiency_is_named_by_its_last_part(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        bench_result.parse(tmp_path / "result.json", [1])
    assert str(caught.value).startswith(f"{tmp_path / 'result.json'}: (top level): a result.json is a mapping, not a "
                                        "list; fix: ")
    assert bench_result.is_efficiency("efficiency") and bench_result.is_efficiency("train.fp32.efficiency_paddle")
    assert not bench_result.is_efficiency("train.efficiency.ips")


def test_a_result_at_the_edges_of_its_ranges_is_taken(tmp_path: Path) -> None:
    """Exactly 1.0 efficiency, a 64-character key, an engine named as the suite names it, a bs999999 batch and
    8 levels of nesting are all a result may hold; `passed` must agree with the verdict."""
    data = copy.deepcopy(GOOD)
    figures = data["results"]["train"]["fp32"]
    figures.update(efficiency=1.0, efficiency_paddle=1.0)
    figures["x" * 64] = 1
    data["results"]["infer"]["paddle-inference"]["fp32"]["bs1"]["engine"] = "paddle-inference onednn fp32"
    assert bench_result.parse(tmp_path / "result.json", data).verdict == data["verdict"]
    assert bench_result._shape_problem({"train": {"summary": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}}}) is None
    deeper = {"train": {"summary": {"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}}}}
    assert bench_result._shape_problem(deeper) == ("results", "nests deeper than 8 levels (a result nests 6)")
    assert bench_result.BATCH_RE.fullmatch("bs999999") and not bench_result.BATCH_RE.fullmatch("bs1000000")
    data["passed"] = not data["passed"]
    with pytest.raises(InputError, match=r": passed: is (True|False) but the verdict is "):
        bench_result.parse(tmp_path / "result.json", data)


def test_the_shape_check_knows_each_efficiency_by_its_peak_and_what_a_run_may_leave_out(tmp_path: Path) -> None:
    """An efficiency is missing only where its own peak is reported and no failure says why; a run without
    training, a precision whose back end did not run, and nesting in lists are judged as the harness writes them."""
    def problem(edit) -> tuple[str, str] | None:
        data = copy.deepcopy(GOOD)
        edit(data["results"])
        return bench_result._shape_problem(data["results"])

    fp32 = ("train", "fp32")
    assert problem(lambda r: r["train"]["fp32"].pop("efficiency")) == (
        "results.train.fp32.efficiency", "is missing beside peak_tflops (renamed?): the figure the regression gate "
                                         "compares")
    assert problem(lambda r: r["train"]["fp32"].pop("efficiency_paddle"))[0] == "results.train.fp32.efficiency_paddle"
    assert "beside paddle_peak_tflops" in problem(lambda r: r["train"]["fp32"].pop("efficiency_paddle"))[1]
    failed = _set(fp32, "efficiency_failure", "probe failure: ...")
    assert problem(lambda r: (r["train"]["fp32"].pop("efficiency"), failed(r))) is None
    assert problem(lambda r: [r["train"]["fp32"].pop(k) for k in ("efficiency", "peak_tflops")]) is None
    assert problem(lambda r: r.pop("train")) is None
    assert problem(_set(("infer", "paddle-inference"), "int8", {"status": "not available", "reason": "no"})) is None
    assert problem(_set(("train",), "summary", {"a": [[[[[[1]]]]]]})) == (
        "results", "nests deeper than 8 levels (a result nests 6)")
    backend = problem(lambda r: r["infer"].update(tvm={}))
    assert backend == ("results.infer.tvm",
                       "'tvm' is not an inference back end (paddle-inference, paddle-trt, tensorrt, onnxruntime)")


def test_the_result_reader_walks_lists_and_bounds_engine_names(tmp_path: Path) -> None:
    """A measurement inside a list is checked too; an engine name may be 200 characters, not 201; a precision whose
    back end did not run does not end the walk over the back end's others."""
    def problem(edit) -> tuple[str, str] | None:
        data = copy.deepcopy(GOOD)
        edit(data["results"])
        return bench_result._measurement_problem(data["results"]) or bench_result._shape_problem(data["results"])

    assert problem(_set(("train", "summary"), "runs", [{"ips": "fast"}])) == (
        "results.train.summary.runs.0.ips", "a measurement must be a number, not 'fast'")
    engine = "paddle-inference onednn fp32 "
    bs1 = ("infer", "paddle-inference", "fp32", "bs1")
    assert problem(_set(bs1, "engine", engine.ljust(200, "x"))) is None
    assert problem(_set(bs1, "engine", engine.ljust(201, "x")))[0] == "results.infer.paddle-inference.fp32.bs1.engine"

    def not_run_then_renamed(results: dict) -> None:
        backend = results["infer"]["paddle-inference"]
        results["infer"]["paddle-inference"] = {"int8": {"status": "not available", "reason": "no"}, **backend}
        backend["fp32"]["bsone"] = backend["fp32"].pop("bs1")

    assert problem(not_run_then_renamed)[0] == "results.infer.paddle-inference.fp32.bsone"


def test_a_baseline_of_another_benchmark_an_interrupted_or_a_smoke_run_or_too_big_is_refused(tmp_path: Path) -> None:
    def refused(edit) -> str:
        data = copy.deepcopy(GOOD)
        edit(data)
        path = tmp_path / "result.json"
        path.write_text(json.dumps(data))
        with pytest.raises(InputError) as caught:
            bench_result.read_baseline(path, "rn50")
        assert str(caught.value).startswith(f"{path}: ")
        assert str(caught.value).endswith(f"; fix: {bench_result.FIX}") or "more than the limit" in str(caught.value)
        return str(caught.value)

    assert ": results.train.fp32: has no 'ips'" in refused(_rename_in_results(("train", "fp32"), "ips", "ipz"))

    assert "their figures are not comparable" in refused(lambda d: d["config"].update(benchmark="hgnet"))
    assert ": model: a result of bench-'hgnet', not of bench-rn50: their figures are not comparable" in refused(
        lambda d: d.update(model="hgnet"))
    assert ": verdict: an interrupted run (stopped by a signal): its figures are partial, no baseline" in refused(
        lambda d: d.update(verdict="INTERRUPTED", passed=False))
    assert ": config.smoke: a --smoke run (one tiny step): its figures are no baseline" in refused(
        lambda d: d.update(verdict="SMOKE"))
    assert "more than the limit of 4194304" in refused(
        lambda d: d["results"]["train"].update(summary={"pad": "x" * 4 * 1024 * 1024}))


def _rename_in_results(parent_path: tuple[str, ...], old: str, new: str):
    rename = _rename(parent_path, old, new)
    return lambda data: rename(data["results"])


def test_the_release_result_reader_has_the_baselines_4_mib_bound(tmp_path: Path) -> None:
    data = copy.deepcopy(GOOD)
    data["results"]["train"]["summary"] = {"pad": "x" * 4 * 1024 * 1024}
    (tmp_path / "result.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"more than the limit of 4194304; fix: rerun it"):
        bench_result.read(tmp_path / "result.json", "rerun it")


def test_a_baseline_the_reader_cannot_read_says_the_callers_fix_and_raises_its_error(tmp_path: Path) -> None:
    """The release picks the previous release's stored run as the baseline: its fix, and its error type, replace the
    benchmark's own (--baseline), whether the file cannot be read or is not a result."""
    class StoredRunError(InputError):
        pass

    missing = tmp_path / "gone.json"
    with pytest.raises(InputError) as own:
        bench_result.read_baseline(missing, "rn50")
    assert str(own.value).startswith(f"{missing}: ") and "fix: " in str(own.value)
    assert not str(own.value).endswith(bench_result.FIX)  # the reader's own fix: check the path
    with pytest.raises(StoredRunError) as release:
        bench_result.read_baseline(missing, "rn50", "run the release of 26.11 again", StoredRunError)
    assert str(release.value) == f"{str(own.value).rsplit('; fix: ', 1)[0]}; fix: run the release of 26.11 again"
    bad = tmp_path / "result.json"
    bad.write_text(json.dumps({**GOOD, "verdict": "MAYBE"}))
    with pytest.raises(StoredRunError) as shape:
        bench_result.read_baseline(bad, "rn50", "run the release of 26.11 again", StoredRunError)
    assert str(shape.value).endswith("; fix: run the release of 26.11 again")
