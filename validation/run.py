"""Run the validation suite in two phases and write one report.

Phase 1 runs every check not marked `exclusive` in parallel (pytest-xdist); phase 2 runs the
exclusive ones (GPU stress, timing) alone. Their results are merged into validation.json,
validation.md and validation.xml (JUnit). Reports are written to a scratch folder first and moved
into place only when pytest produced a verdict, so a crashed run never replaces an earlier report.

  run.py [--output DIR] [--serial] [--hosts docker://NAME] [-m EXPR] [--smoke] [pytest args...]
Exit: 0 all checks passed (skips that do not apply to the flavor allowed), 1 a check failed, 2 the
suite could not run, 3 NOT PROVEN: a GPU flavor whose GPU checks could not run (no GPU visible).
--smoke only collects the checks: does the suite start here (pytest, testinfra, the manifest)?
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ngc_report import markdown, verdict  # noqa: E402

EXIT_CODES = {"PASS": 0, "FAIL": 1, "NOT PROVEN": 3}


def phase(name: str, marker: str, args: argparse.Namespace, extra: list[str], out: Path) -> int:
    cmd = [sys.executable, "-m", "pytest", "-c", str(HERE / "pytest.ini"), "--rootdir", str(HERE),
           "-m", marker, "--report-dir", str(out), "--report-name", name, "--junitxml", str(out / f"{name}.xml"),
           "-q", "--no-header", "-p", "no:cacheprovider"]
    if args.hosts:
        cmd += ["--hosts", args.hosts]
    if name == "parallel" and not args.serial:
        cmd += ["-n", args.workers, "--dist", "load"]
    cmd += [*extra, str(HERE / "checks")]
    print(f"== validate: {name} phase ({'serial' if args.serial or name == 'exclusive' else 'parallel'})",
          flush=True)
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(cmd, cwd=HERE, env=env, check=False).returncode


def merge(out: Path, names: list[str], started: float) -> dict:
    parts = [json.loads((out / f"{n}.json").read_text()) for n in names if (out / f"{n}.json").exists()]
    checks = sorted((c for p in parts for c in p["checks"]), key=lambda c: c["id"])
    counts = {s: sum(1 for c in checks if c["status"] == s) for s in ("passed", "failed", "error", "skipped")}
    first = parts[0] if parts else {}
    summary = {"release": first.get("release"), "flavor": first.get("flavor"), "gpu_flavor": first.get("gpu_flavor"),
               "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
               "duration_s": round(time.time() - started, 1), "counts": counts,
               "ok": bool(checks) and counts["failed"] == 0 and counts["error"] == 0, "checks": checks}
    summary["verdict"], summary["verdict_reasons"] = verdict(summary)
    (out / "validation.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "validation.md").write_text(markdown(summary))
    suites = ET.Element("testsuites")
    for n in names:
        if (out / f"{n}.xml").exists():
            root = ET.parse(out / f"{n}.xml").getroot()
            suites.extend(root if root.tag == "testsuites" else [root])
    ET.ElementTree(suites).write(out / "validation.xml", encoding="utf-8", xml_declaration=True)
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description="Validate this image against its manifest.")
    parser.add_argument("--output", default=os.environ.get("NGC_PADDLE_REPORT_DIR", "validation-report"))
    parser.add_argument("--serial", action="store_true", help="run phase 1 without xdist (for timing)")
    parser.add_argument("--workers", default="auto", help="xdist workers for phase 1 (default: one per core)")
    parser.add_argument("--hosts", help="testinfra target, e.g. docker://CONTAINER (default: this machine)")
    parser.add_argument("-m", dest="marker", default=None, help="select checks by marker expression")
    parser.add_argument("--smoke", action="store_true", help="collect the checks only: does the suite start here?")
    args, extra = parser.parse_known_args()
    if args.smoke:
        return smoke(args, extra)

    output = Path(args.output).resolve()
    output.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".validate-", dir=output))
    started = time.time()
    user = f"({args.marker}) and " if args.marker else ""
    codes = {name: phase(name, f"{user}{sel}", args, extra, scratch)
             for name, sel in (("parallel", "not exclusive"), ("exclusive", "exclusive"))}
    verdicts = {0, 1, 5}  # passed, failed, nothing selected
    if any(code not in verdicts for code in codes.values()) or all(code == 5 for code in codes.values()):
        shutil.rmtree(scratch, ignore_errors=True)
        print(f"error: the validation suite could not run (pytest exit codes {codes}); "
              f"earlier reports in {output} were kept", file=sys.stderr)
        return 2
    summary = merge(scratch, [n for n, c in codes.items() if c != 5], started)
    for name in ("validation.json", "validation.md", "validation.xml"):
        (scratch / name).replace(output / name)
    shutil.rmtree(scratch, ignore_errors=True)

    counts = summary["counts"]
    print(f"\n== validation of {summary['release']}-{summary['flavor']}: {summary['verdict']} - "
          f"{counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
          f"{counts['skipped']} skipped in {summary['duration_s']} s")
    for check in summary["checks"]:
        if check["status"] in ("failed", "error"):
            print(f"   FAIL {check['id']} [{check['component']}]: {check['message']}")
    for reason in summary["verdict_reasons"]:
        print(f"   NOT PROVEN: {reason}")
    print(f"   reports: {output}/validation.json, validation.md, validation.xml")
    return EXIT_CODES[summary["verdict"]]


def smoke(args: argparse.Namespace, extra: list[str]) -> int:
    cmd = [sys.executable, "-m", "pytest", "-c", str(HERE / "pytest.ini"), "--rootdir", str(HERE), "--collect-only",
           "-q", "--no-header", "-p", "no:cacheprovider", *(["--hosts", args.hosts] if args.hosts else []), *extra,
           str(HERE / "checks")]
    proc = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"error: the validation suite cannot start (pytest exit {proc.returncode}): "
              f"{(proc.stdout + proc.stderr).strip().splitlines()[-1:]}", file=sys.stderr)
        return 2
    print(f"validate --smoke: {proc.stdout.strip().splitlines()[-1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
