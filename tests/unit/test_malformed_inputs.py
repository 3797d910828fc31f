"""Property-based: every reader of an external file, fed mutations of the project's real files.

Each example must end in a valid parse or in one clean line of the project's error type naming the
file (exit 2 through the CLI, never 1 or 4), within a time bound, and a failed run must write nothing. The
default run is short; NGC_PADDLE_FUZZ_EXAMPLES=N runs N random examples per reader.
"""

import contextlib
import io
import json
import math
import tempfile
from datetime import date
from pathlib import Path
from unittest import mock

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.harness import acceptance_gates
from benchmarks.harness import bench_cli as bench_cli_module
from benchmarks.rn50.spec import SPEC as RN50_SPEC
from ngc_common import bench_result as result_file
from ngc_common.errors import InputError
from ngc_common.exit_codes import ExitCode
from ngc_paddle import cli
from ngc_paddle.distro import Distro
from ngc_paddle.manifest import load_manifest
from ngc_paddle.release.stages import bench as bench_stage
from ngc_paddle.release.state_file import State
from ngc_paddle.scan import policy
from ngc_paddle.scan.findings import dedupe
from ngc_paddle.scan.source.inventory import Package
from ngc_paddle.scan.vulnerabilities.scanners import load_osv, match_osv, read_grype, read_trivy
from tests.unit import fuzz_readers  # noqa: F401  (registers the lock, the notes' record, OSV's export)
from tests.unit.fuzz_support import (
    FUZZ,
    READERS,
    REPO,
    assert_one_line,
    bench_result,
    mangled_bytes,
    mutated,
    outcome,
    reader_input,
    release_state,
    time_bound,
)

DEBIAN_12 = Distro("debian", "12")

MANIFEST = REPO / "releases" / "26.12.yaml"
POLICY = REPO / "security" / "policy.yaml"
TRIVY = REPO / "tests" / "data" / "reports" / "trivy.json"
GRYPE = REPO / "tests" / "data" / "reports" / "grype.json"
OSV = sorted((REPO / "tests" / "data" / "osv").glob("*.json"))

MANIFEST_DATA = yaml.safe_load(MANIFEST.read_text())
POLICY_DATA = yaml.safe_load(POLICY.read_text())
TRIVY_DATA, GRYPE_DATA = json.loads(TRIVY.read_text()), json.loads(GRYPE.read_text())
OSV_DATA = [json.loads(p.read_text()) for p in OSV]
PACKAGES = [Package("pypi", "urllib3", "1.26.4", "paddle"), Package("deb", "libssl3", "3.0.11-1~deb12u1", "os",
                                                                      extra={"source": "openssl"})]


def _yaml(data: object) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode()


def _json(data: object) -> bytes:
    return json.dumps(data, allow_nan=True).encode()


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def document(data: object, raw: Path, dump) -> st.SearchStrategy[bytes]:
    """Bytes of a mutated document: a structural mutation (serialised), or a byte-level one of the real file."""
    return st.one_of(mutated(data).map(dump), mangled_bytes(raw.read_bytes()))


@FUZZ
@given(document(MANIFEST_DATA, MANIFEST, _yaml))
def test_manifest_readers(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "releases" / "26.12.yaml"
        path.parent.mkdir()
        path.write_bytes(content)
        outcome(lambda: load_manifest(path), path)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), time_bound():
            code = cli.main(["--root", tmp, "bake-file", str(path)])
        assert code in (0, 2), code
        if code == 2:
            assert_one_line(err.getvalue().removeprefix("error: ").rstrip("\n"), path)
            assert _files(root) == {path}, "a failed bake-file wrote outputs"


@FUZZ
@given(document(POLICY_DATA, POLICY, _yaml))
def test_policy_reader(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "policy.yaml"
        path.write_bytes(content)
        rules = outcome(lambda: policy.load(path), path)
        if rules is not None:
            assert rules.block_on <= set(policy.FindingKind.__args__)
            assert isinstance(rules.count_unfixed, bool)


@FUZZ
@given(st.sampled_from(["trivy", "grype"]).flatmap(
    lambda tool: st.tuples(st.just(tool), document(TRIVY_DATA if tool == "trivy" else GRYPE_DATA,
                                                   TRIVY if tool == "trivy" else GRYPE, _json))))
def test_report_readers(case: tuple[str, bytes]) -> None:
    tool, content = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{tool}.json"
        path.write_bytes(content)
        findings = outcome(lambda: (read_trivy if tool == "trivy" else read_grype)(path), path)
        if findings is not None:  # what was read must be usable by the rest of the gate
            rules = policy.load(POLICY)
            policy.decide(rules, dedupe(findings), date(2026, 12, 2))


@FUZZ
@given(st.sampled_from(range(len(OSV))).flatmap(
    lambda i: st.tuples(st.just(i), document(OSV_DATA[i], OSV[i], _json))))
def test_osv_reader_and_matcher(case: tuple[int, bytes]) -> None:
    index, content = case
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / OSV[index].name).write_bytes(content)
        advisories = outcome(lambda: load_osv(folder), folder)
        if advisories is not None:
            with time_bound():
                match_osv(PACKAGES, advisories, DEBIAN_12)


# ---- the benchmarks' gates file and --baseline, the release pipeline's stored results and state ------

GATES = REPO / "benchmarks" / "gates.yaml"
GATES_DATA = yaml.safe_load(GATES.read_text())
RESULT_DATA = bench_result("rn50")  # written by report.write from a fixture: the real shape, made-up figures
RESULT_RAW = json.dumps(RESULT_DATA, indent=2).encode()
STATE_DATA = release_state()  # written by state_file.State.record
STATE_RAW = json.dumps(STATE_DATA, indent=2).encode()
BENCH = RN50_SPEC  # the real one: its options and recipe


class InputsAccepted(BaseException):
    """Raised where the benchmark would load Paddle: its input files were all accepted (not an Exception, so
    main's catch-all for bugs does not take it)."""


def bench_cli(tmp: Path, *argv: str) -> int | None:
    """bench-rn50's main() on these options: its exit code after bad input, None when the inputs were accepted."""
    err = io.StringIO()

    def reached(*_a: object) -> None:
        raise InputsAccepted

    try:
        with mock.patch.object(bench_cli_module, "set_threads", reached), contextlib.redirect_stderr(err), \
                contextlib.redirect_stdout(io.StringIO()), time_bound():
            code = bench_cli_module.main(BENCH, [*argv, "--output", str(tmp / "out")])
    except InputsAccepted:
        return None
    assert code == ExitCode.BAD_INPUT, (code, err.getvalue())  # never 1 (a failed gate) or 4 (a crash)
    line = err.getvalue().rstrip("\n")
    assert line.startswith("error: ") and "\n" not in line and "; fix: " in line, line
    assert not (tmp / "out").exists(), "a run refused for bad input wrote results"
    return code


@FUZZ
@given(document(GATES_DATA, GATES, _yaml))
def test_gates_reader(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gates.yaml"
        path.write_bytes(content)
        table = outcome(lambda: acceptance_gates.load(path), path, (InputError,))
        if table is not None:  # what was accepted must work for every use the harness makes of it
            with time_bound():
                profile = acceptance_gates.detect_profile(table, ["NVIDIA A100-SXM4-80GB"])
                acceptance_gates.datasheet_tflops(table, profile, "fp32")
                for model in table["models"]:
                    for name in ("cpu", profile):
                        verdicts = acceptance_gates.evaluate(table, model, name, RESULT_DATA["results"],
                                                       RESULT_DATA["config"], RESULT_DATA, None, "AMD EPYC, 2 threads")
                        assert all(v.status in ("PASS", "FAIL", "N/A", "NOT RUN") for v in verdicts)
                        acceptance_gates.overall(verdicts)
        assert bench_cli(Path(tmp), "--gates", str(path)) == (None if table is not None else 2)


@FUZZ
@given(st.one_of(mutated(RESULT_DATA).map(_json), mangled_bytes(RESULT_RAW)))
def test_baseline_readers(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rn50-20261201T000000Z" / "result.json"
        path.parent.mkdir()
        path.write_bytes(content)
        baseline = outcome(lambda: result_file.read_baseline(path, "rn50"), path, (InputError,))
        stored = outcome(lambda: bench_stage.stored_verdict(path), path)  # the release's reader of stored results
        if baseline is not None:
            assert stored is not None, "the pipeline refuses a result the benchmark accepts as a baseline"
            with time_bound():
                verdicts = acceptance_gates.regressions(RESULT_DATA["results"], baseline, 5.0, "AMD EPYC, 2 threads")
            assert all(v.threshold is None or math.isfinite(v.threshold) for v in verdicts)
        assert bench_cli(Path(tmp), "--baseline", str(path)) == (None if baseline is not None else 2)
        assert path.read_bytes() == content and _files(Path(tmp)) == {path}


@FUZZ
@given(st.one_of(mutated(STATE_DATA).map(_json), mangled_bytes(STATE_RAW)))
def test_release_state_reader(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.json"
        path.write_bytes(content)
        state = outcome(lambda: State(path), path)
        if state is not None:  # an accepted state answers every question the pipeline asks it
            for flavor in ("cpu", "gpu", *state.data):
                for stage in ("build", "validate", "bench", "scan", "push"):
                    entry = state.done(flavor, stage, "0123456789abcdef")
                    assert entry is None or entry["status"] == "passed"
        assert path.read_bytes() == content and _files(Path(tmp)) == {path}, "reading the state wrote to it"


# ---- every registered reader (tests/unit/fuzz_readers.py and whoever registers more) -----------------------

@pytest.mark.parametrize("name", sorted(READERS))
@FUZZ
@given(data=st.data())
def test_registered_reader(name: str, data: st.DataObject) -> None:
    reader = READERS[name]
    content = data.draw(reader_input(reader), label=name)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / reader.filename
        path.write_bytes(content)
        result = outcome(lambda: reader.read(path), path, reader.errors)
        if result is not None and reader.use is not None:
            with time_bound():
                reader.use(result, path)
        assert path.read_bytes() == content, "reading the file changed it"
