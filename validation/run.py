"""Run the validation suite in two phases and write one report.

Phase 1 runs every check not marked `exclusive` in parallel (pytest-xdist); phase 2 runs the
exclusive ones (GPU stress, timing) alone. `--single` runs one phase without xdist instead, for a
handful of checks (the build's checks of one layer), where starting workers costs more than it
saves. Their results are merged into validation.json, validation.md and validation.xml (JUnit).
Reports are written to a scratch folder first and moved into place only when pytest produced a
verdict, so a crashed run never replaces an earlier report.

The long form: docs/design-notes.md, section `validation/run.py`.
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

from pytest import ExitCode as PytestExit

from ngc_common import crash, image_paths, stop, suite_record
from ngc_common.exit_codes import ExitCode, for_verdict

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ngc_report import count, in_layer_order, markdown, per_layer, title, verdict  # noqa: E402

# Each layer's checks (layers/<layer>/, and layers/ itself for checks shared by every layer), then the suite's.
CHECK_FOLDERS = [str(HERE / "layers"), str(HERE / "checks")]
RUNNING: list[subprocess.Popen] = []  # the pytest phase now running (what a stop ends)
STOP_WAIT_S = 3.0  # how long a stop waits for pytest to end on SIGTERM before it kills it (within stop.GRACE_S)


def phase(name: str, marker: str, args: argparse.Namespace, extra: list[str], out: Path) -> int:
    cmd = [sys.executable, "-m", "pytest", "-c", str(HERE / "pytest.ini"), "--rootdir", str(HERE),
           *(["-m", marker] if marker else []), "--report-dir", str(out), "--report-name", name,
           "--junitxml", str(out / f"{name}.xml"),
           "-q", "--no-header", "-p", "no:cacheprovider"]
    if args.hosts:
        cmd += ["--hosts", args.hosts]
    if name == "parallel" and not args.serial:
        cmd += ["-n", args.workers, "--dist", "load"]
    cmd += [*extra, *CHECK_FOLDERS]
    print(f"== validate: {name} phase ({'parallel' if '-n' in cmd else 'serial'})", flush=True)
    with subprocess.Popen(cmd, cwd=HERE, env=suite_env(args)) as proc:
        RUNNING[:] = [proc]
        code = proc.wait()
    RUNNING.clear()
    return code


def stopped(output: Path, scratch: Path) -> str:
    """On SIGTERM/SIGINT (ngc_common.stop): end the running pytest, drop the scratch reports, keep the earlier ones.
    A partial suite proves nothing, and validation.json in `output` is an earlier complete run's: it stays."""
    for proc in RUNNING:
        proc.terminate()  # tini -g signalled it too; this covers a validate signalled alone
        try:
            proc.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
    shutil.rmtree(scratch, ignore_errors=True)
    return f"no report written; earlier reports in {output} were kept"


def suite_env(args: argparse.Namespace) -> dict[str, str]:
    """What conftest.py reads: the manifest passed in, the image's own layer, where the probes are."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONDONTWRITEBYTECODE": "1"}
    for name, value in (("NGC_PADDLE_MANIFEST_FILE", args.manifest), ("NGC_PADDLE_LAYER", args.layer),
                        ("NGC_PADDLE_PROBES", args.probes)):
        if value:
            env[name] = str(Path(value).resolve()) if name == "NGC_PADDLE_MANIFEST_FILE" else value
    return env


def merge(out: Path, names: list[str], started: float) -> dict:
    parts = [json.loads((out / f"{n}.json").read_text()) for n in names if (out / f"{n}.json").exists()]
    first = parts[0] if parts else {}
    layers = first.get("image_layers") or []
    checks = in_layer_order((c for p in parts for c in p["checks"]), layers)
    counts = count(checks)
    summary = {"release": first.get("release"), "flavor": first.get("flavor"), "gpu_flavor": first.get("gpu_flavor"),
               "emulated": first.get("emulated"),
               "layer": first.get("layer"), "flavor_layers": first.get("flavor_layers", []), "image_layers": layers,
               "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
               "duration_s": round(time.time() - started, 1), "counts": counts,
               "ok": bool(checks) and counts["failed"] == 0 and counts["error"] == 0,
               "layers": per_layer(checks, layers), "checks": checks}
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


def _parser() -> argparse.ArgumentParser:
    """The suite's command line (`validate` in the image, `make validate` on the host)."""
    parser = argparse.ArgumentParser(description="Validate this image against its manifest.")
    parser.add_argument("--output", default=os.environ.get("NGC_PADDLE_REPORT_DIR", "validation-report"))
    parser.add_argument("--serial", action="store_true", help="run phase 1 without xdist (for timing)")
    parser.add_argument("--single", action="store_true",
                        help="one pytest run without xdist, exclusive checks included (a few checks: the build's)")
    parser.add_argument("--workers", default="auto", help="xdist workers for phase 1 (default: one per core)")
    parser.add_argument("--hosts", help="testinfra target, e.g. docker://CONTAINER (default: this machine)")
    parser.add_argument("-m", dest="marker", default=None, help="select checks by marker expression")
    parser.add_argument("--smoke", action="store_true", help="collect the checks only: does the suite start here?")
    parser.add_argument("--manifest", help="the flavor's resolved manifest on this machine (for a layer image)")
    parser.add_argument("--layer", help="the image's own layer: run the checks of the layers up to it (default: all)")
    parser.add_argument("--probes", help=f"the probes' folder in the image (default: {image_paths.PROBES})")
    parser.add_argument("--allow-empty", action="store_true", help="no check selected: exit 0, write no report")
    return parser


def _print_summary(summary: dict, output: Path) -> None:
    """The verdict and counts, each layer's counts, each failure and NOT PROVEN reason, and where the reports are."""
    counts = summary["counts"]
    print(f"\n== validation of {title(summary)}: {summary['verdict']} - "
          f"{counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
          f"{counts['skipped']} skipped in {summary['duration_s']} s")
    for layer in summary["layers"]:
        n = layer["counts"]
        print(f"   layer {layer['layer']:<9} {n['passed']} passed, {n['failed']} failed, {n['error']} errors, "
              f"{n['skipped']} skipped")
    for check in summary["checks"]:
        if check["status"] in ("failed", "error"):
            print(f"   FAIL {check['id']} [layer {check['layer']}, {check['component']}]: {check['message']}")
    for reason in summary["verdict_reasons"]:
        print(f"   NOT PROVEN: {reason}")
    print(f"   reports: {output}/validation.json, validation.md, validation.xml")


def main() -> int:
    args, extra = _parser().parse_known_args()
    if (refused := suite_record.refusal(__file__)) is not None:  # the judge changed after the build
        print(refused, file=sys.stderr)
        return ExitCode.NOT_PROVEN
    if args.smoke:
        return smoke(args, extra)

    output = Path(args.output).resolve()
    output.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".validate-", dir=output))
    stop.set_on_stop(lambda _signal_name: stopped(output, scratch))
    started = time.time()
    user = f"({args.marker}) and " if args.marker else ""
    phases = {"parallel": f"{user}not exclusive", "exclusive": f"{user}exclusive"}
    if args.single:  # one run, one process: the selection is small, and nothing else shares the machine
        phases = {"single": args.marker}
    codes = {name: phase(name, marker, args, extra, scratch) for name, marker in phases.items()}
    empty = PytestExit.NO_TESTS_COLLECTED
    verdicts = {PytestExit.OK, PytestExit.TESTS_FAILED, empty}
    if args.allow_empty and all(code == empty for code in codes.values()):
        shutil.rmtree(scratch, ignore_errors=True)
        print("== validate: no checks selected")
        return 0
    if any(code not in verdicts for code in codes.values()) or all(code == empty for code in codes.values()):
        shutil.rmtree(scratch, ignore_errors=True)
        print(f"error: the validation suite could not run (pytest exit codes {codes}); "
              f"earlier reports in {output} were kept", file=sys.stderr)
        return ExitCode.BAD_INPUT
    summary = merge(scratch, [n for n, c in codes.items() if c != empty], started)
    for name in ("validation.json", "validation.md", "validation.xml"):
        (scratch / name).replace(output / name)
    shutil.rmtree(scratch, ignore_errors=True)

    _print_summary(summary, output)
    return for_verdict(summary["verdict"])


def smoke(args: argparse.Namespace, extra: list[str]) -> int:
    cmd = [sys.executable, "-m", "pytest", "-c", str(HERE / "pytest.ini"), "--rootdir", str(HERE), "--collect-only",
           "-q", "--no-header", "-p", "no:cacheprovider", *(["--hosts", args.hosts] if args.hosts else []), *extra,
           *CHECK_FOLDERS]
    proc = subprocess.run(cmd, cwd=HERE, env=suite_env(args), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"error: the validation suite cannot start (pytest exit {proc.returncode}): "
              f"{(proc.stdout + proc.stderr).strip().splitlines()[-1:]}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    print(f"validate --smoke: {proc.stdout.strip().splitlines()[-1]}")
    return 0


def entry() -> int:
    """main(), with a crash as exit 4 and one line (the traceback in a file): 1 means a check failed, 2 bad
    input."""
    try:
        return main()
    except Exception as exc:
        return crash.report(exc, "validate")


if __name__ == "__main__":
    stop.install("validate", None, block=False)  # SIGTERM/SIGINT: exit 143/130, earlier reports kept
    sys.exit(entry())
