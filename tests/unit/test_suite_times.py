"""perf.suite_times: junit reports read per file and per test, beside the previous run, recorded only when green."""

import json
from pathlib import Path

import pytest

from perf import suite_times

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.integration.test_fleet" name="test_a" time="100.5"/>
<testcase classname="tests.integration.test_fleet" name="test_b[x]" time="20.0"/>
<testcase classname="tests.unit.test_lock" name="test_c" time="1.5"><skipped message="no"/></testcase>
<testcase classname="tests.unit.test_lock" name="test_d" time="2.0">{failure}</testcase>
</testsuite></testsuites>"""


def junit(tmp_path: Path, failure: str = "") -> Path:
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT.format(failure=failure))
    return path


def test_cases_are_summed_per_file_and_outcomes_counted(tmp_path: Path) -> None:
    cases = suite_times.read_junit(junit(tmp_path, '<failure message="boom"/>'))
    assert [c.file for c in cases] == ["tests/integration/test_fleet.py"] * 2 + ["tests/unit/test_lock.py"] * 2
    summary = suite_times.summarise(cases, {"tests/integration": 130.0})
    assert summary["files"] == {"tests/integration/test_fleet.py": 120.5, "tests/unit/test_lock.py": 3.5}
    assert summary["outcomes"] == {"passed": 2, "failed": 1, "skipped": 1}
    assert summary["tests_s"]["tests/integration/test_fleet.py::test_b[x]"] == 20.0
    assert summary["total_s"] == 130.0


def test_the_table_shows_before_and_now_per_file_and_the_slowest_first(tmp_path: Path) -> None:
    now = suite_times.summarise(suite_times.read_junit(junit(tmp_path)), {"tests/integration": 125.0})
    now.update(cpu_kind="amd-avx2", recorded="2026-12-06")
    before = {"total_s": 4860.0, "files": {"tests/integration/test_fleet.py": 600.0, "tests/integration/gone.py": 9.0},
              "tests_s": {"tests/integration/test_fleet.py::test_a": 300.0}, "recorded": "2026-12-01",
              "cpu_kind": "amd-avx512"}
    text = suite_times.markdown(now, before)
    assert "total **2.1 min** (before: 81.0 min, recorded 2026-12-01 on amd-avx512)" in text
    assert "| tests/integration/test_fleet.py | 10.0 min | 2.0 min |" in text
    assert "| tests/integration/gone.py | 9 s | - |" in text  # a file the suite dropped still shows
    rows = [line for line in text.splitlines() if line.startswith("| tests/") and "::" in line]
    assert rows[0] == "| tests/integration/test_fleet.py::test_a | 1.7 min | 5.0 min |"


@pytest.mark.parametrize("failure, code", [("", 0), ('<failure message="boom"/>', 1)])
def test_only_a_green_run_is_recorded(tmp_path: Path, monkeypatch, failure: str, code: int) -> None:
    recorded: list[str] = []
    monkeypatch.setattr(suite_times, "record", lambda name, _title, _body: recorded.append(name))
    monkeypatch.setattr(suite_times, "TIMES", tmp_path / "test-times.json")
    assert suite_times.main(["--junit", str(junit(tmp_path, failure)), "--wall", "60"]) == code
    assert recorded == (["perf-tests"] if code == 0 else [])
    assert (tmp_path / "test-times.json").exists() == (code == 0)
    if code == 0:
        assert json.loads((tmp_path / "test-times.json").read_text())["wall_s"] == {"recorded run": 60.0}


def test_a_missing_report_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    assert suite_times.main(["--junit", str(tmp_path / "nope.xml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.xml: no such junit report; fix:" in err
