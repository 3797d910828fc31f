"""Property-based: every reader of an external file, fed mutations of the project's real files.

Each example must end in a valid parse or in one clean line of the project's error type naming the
file (exit 2 through the CLI), within a time bound, and a failed run must write nothing. The
default run is short; NGC_PADDLE_FUZZ_EXAMPLES=N runs N random examples per reader.
"""

import contextlib
import io
import json
import tempfile
from datetime import date
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from ngc_paddle import cli
from ngc_paddle.manifest import load_manifest
from ngc_paddle.scan import policy
from ngc_paddle.scan.findings import dedupe
from ngc_paddle.scan.inventory import Package
from ngc_paddle.scan.vulnerabilities import load_osv, match_osv, read_grype, read_trivy
from tests.unit.fuzz_support import FUZZ, REPO, assert_one_line, mangled_bytes, mutated, outcome, time_bound

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
                match_osv(PACKAGES, advisories, "12")
