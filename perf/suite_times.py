"""Time the project's own test suites: per file and per test, the total, the machine and its CPU kind.

Why: CI has a hard wall (90 minutes) and a budget (40); a test that grows shows up in review, as a row of
docs/measurements.md beside the previous run's figure (kept in docs/test-times.json), not at the wall.
Run as `make perf-tests` (runs the suites) or `python -m perf.suite_times --junit FILE...` (records a run
already made with `--junitxml`). A run whose tests failed records nothing.
"""

import argparse
import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from benchmarks.harness import cpu_kind
from ngc_common.exit_codes import ExitCode
from perf.measurements import REPO, record

TIMES = REPO / "docs" / "test-times.json"
OUT = REPO / "build" / "test-times"
# the make targets that run the suites as `make test` does (the Makefile holds the pytest options)
SUITES = ("unit", "integration")
SLOWEST = 15


class Case(NamedTuple):
    file: str  # tests/integration/test_fleet.py
    name: str  # test_x[param]
    seconds: float  # setup + call + teardown, as pytest's junit writes it
    outcome: str  # passed, failed, skipped


def _file_of(classname: str) -> str:
    """tests.integration.test_fleet(.Class) -> tests/integration/test_fleet.py (the longest prefix that is a file)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        path = "/".join(parts[:end]) + ".py"
        if (REPO / path).is_file():
            return path
    return "/".join(parts) + ".py"


def read_junit(path: Path) -> list[Case]:
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "passed")
        name = case.get("name", "")
        cases.append(Case(_file_of(case.get("classname", "")), name, float(case.get("time", 0)),
                          {"failure": "failed", "error": "failed"}.get(outcome, outcome)))
    return cases


def summarise(cases: list[Case], wall: dict[str, float]) -> dict:
    files: dict[str, float] = defaultdict(float)
    for c in cases:
        files[c.file] += c.seconds
    return {"wall_s": wall, "total_s": round(sum(wall.values()), 1), "tests": len(cases),
            "outcomes": {o: sum(1 for c in cases if c.outcome == o) for o in ("passed", "failed", "skipped")},
            "files": {f: round(s, 1) for f, s in sorted(files.items())},
            "tests_s": {f"{c.file}::{c.name}": round(c.seconds, 1) for c in cases}}


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def markdown(now: dict, before: dict | None) -> str:
    """Per-file table (before, now), the slowest tests, the totals."""
    prior = before or {}
    lines = ["Wall time per suite: " + ", ".join(f"{s} {_minutes(t)}" for s, t in now["wall_s"].items())
             + f"; total **{_minutes(now['total_s'])}**"
             + (f" (before: {_minutes(prior.get('total_s'))}, recorded {prior.get('recorded', '?')} on "
                f"{prior.get('cpu_kind', '?')}{'; ' + prior['note'] if prior.get('note') else ''})" if before else "")
             + "." + (f" {now['note']}." if now.get("note") else ""),
             f"CPU kind: {now['cpu_kind']}. Tests: {now['tests']} ({now['outcomes']['passed']} passed, "
             f"{now['outcomes']['skipped']} skipped).", "",
             "Per file (test time: setup, call and teardown summed; tests run side by side overlap):", "",
             "| file | before | now |", "| --- | ---: | ---: |"]
    old = prior.get("files", {})
    for f in sorted(set(now["files"]) | set(old), key=lambda f: -now["files"].get(f, 0)):
        lines.append(f"| {f} | {_minutes(old.get(f))} | {_minutes(now['files'].get(f))} |")
    lines += ["", f"Slowest {SLOWEST} tests:", "", "| test | now | before |", "| --- | ---: | ---: |"]
    slow = sorted(now["tests_s"].items(), key=lambda kv: -kv[1])[:SLOWEST]
    lines += [f"| {t} | {_minutes(s)} | {_minutes(prior.get('tests_s', {}).get(t))} |" for t, s in slow]
    return "\n".join(lines)


def run_suites(suites: list[str], extra: list[str]) -> tuple[list[Path], dict[str, float], int]:
    """Each suite through its make target (which holds the pytest options), its junit reports under OUT."""
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.xml"):
        old.unlink()
    wall, code = {}, 0
    for suite in suites:
        started = time.monotonic()
        print(f"== make {suite}", flush=True)
        code = subprocess.run(["make", suite, f"JUNIT={OUT / suite}", f"PYTEST_ARGS={' '.join(extra)}"],
                              cwd=REPO).returncode
        wall[suite] = round(time.monotonic() - started, 1)
        if code != 0:
            break
    return sorted(OUT.glob("*.xml")), wall, code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*", default=list(SUITES), help="unit and/or integration (default: both)")
    parser.add_argument("--junit", nargs="+", type=Path, help="record these junit reports instead of running")
    parser.add_argument("--wall", type=float, help="with --junit: the run's wall seconds (default: the test times)")
    parser.add_argument("--no-record", action="store_true", help="print only")
    parser.add_argument("--note", help="what the run covered, when not the whole suites as make test runs them")
    opts, extra = parser.parse_known_args(argv)
    unknown = [s for s in opts.suites if s not in SUITES]
    if unknown:
        print(f"error: suite {unknown[0]!r}: not one of {', '.join(SUITES)}; fix: name unit or integration",
              file=sys.stderr)
        return ExitCode.BAD_INPUT
    if opts.junit:
        missing = [str(p) for p in opts.junit if not p.is_file()]
        if missing:
            print(f"error: {', '.join(missing)}: no such junit report; fix: run pytest with --junitxml=FILE",
                  file=sys.stderr)
            return ExitCode.BAD_INPUT
        reports, code = opts.junit, 0
        cases = [c for r in reports for c in read_junit(r)]
        wall = {"recorded run": opts.wall if opts.wall is not None else round(sum(c.seconds for c in cases), 1)}
    else:
        reports, wall, code = run_suites(opts.suites, extra)
        cases = [c for r in reports if r.is_file() for c in read_junit(r)]
    now = summarise(cases, wall)
    now.update(cpu_kind=cpu_kind.detect(environ={}).name, recorded=time.strftime("%Y-%m-%d", time.gmtime()))
    if opts.note:
        now["note"] = opts.note
    before = json.loads(TIMES.read_text()) if TIMES.is_file() else None
    text = markdown(now, before)
    print(text)
    if code != 0 or now["outcomes"]["failed"]:
        print("== not recorded: the run had failures (a failed run overwrites no figure)", file=sys.stderr)
        return code or ExitCode.FAIL
    if not opts.no_record:
        record("perf-tests", "The project's own tests: time per file and the slowest tests", text)
        TIMES.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    return ExitCode.PASS


if __name__ == "__main__":
    sys.exit(main())
