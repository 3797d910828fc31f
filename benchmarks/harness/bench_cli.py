"""The command line shared by bench-rn50 and bench-hgnet: parse, check the input files, resolve the run, run it.

Exit codes (ngc_common.exit_codes): 0 every acceptance gate that applies passed (or --smoke ran through),
1 a gate failed, 2 bad input (an option the hardware cannot honour, a missing data folder, a gates file or
baseline that is not one), 3 NOT PROVEN (no acceptance gate could run: a GPU image without a GPU,
a back end missing, no gate for this hardware and configuration), 4 an internal error (one line
naming the file that holds the traceback), 143/130 stopped by SIGTERM/SIGINT (the run's result.json says
INTERRUPTED, ngc_common.stop). The options and their defaults: run_config.
"""

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.harness import acceptance_gates
from benchmarks.harness.hardware import detect, set_threads
from benchmarks.harness.model_spec import ModelSpec
from benchmarks.harness.run_config import fixed_default, parser, requested, resolve
from ngc_common import bench_result, crash, stop
from ngc_common.errors import InputError
from ngc_common.exit_codes import ExitCode

__all__ = ["main", "parser"]


def entry(spec: ModelSpec) -> None:
    """The command (`python -m benchmarks.rn50`): main() in a process that stops on SIGTERM/SIGINT with its report
    (ngc_common.stop: installed before Paddle loads and starts threads) and exits even if threads linger."""
    stop.install(f"bench-{spec.name}", None, block=True)
    stop.exit_now(main(spec))


def main(spec: ModelSpec, argv: list[str] | None = None) -> int:
    """Run the benchmark; its input files are checked before Paddle loads. Bad input: one line, exit 2; a bug:
    one line naming the file with the traceback, exit 4 (never 1, which means a gate failed)."""
    asked = requested(spec, argv)
    try:
        return _main(spec, asked)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:
        output = Path(asked["output"] or fixed_default(spec, "output"))
        return crash.report(exc, f"bench-{spec.name}", [output] if output.is_dir() else [])


def _main(spec: ModelSpec, asked: Mapping[str, Any]) -> int:
    from benchmarks.harness.launch import launched, relaunch_distributed
    from benchmarks.harness.run_loop import Inputs, run

    table = acceptance_gates.load(Path(asked["gates"] or fixed_default(spec, "gates")))
    baseline = bench_result.read_baseline(Path(asked["baseline"]), spec.name) if asked["baseline"] else None
    if asked["asp"]:  # Paddle's ASP works on the legacy program representation only (must precede the import)
        os.environ["FLAGS_enable_pir_api"] = "0"  # noqa: SIM112 - Paddle's flag names are case-sensitive
    threads = set_threads(asked["threads"])  # imports Paddle
    config = resolve(asked, spec, detect(threads, wants_bf16="bf16" in (asked["precision"] or ())))
    early = spec.before_run(config)
    if early is not None:
        return early
    code = relaunch_distributed(config, spec)
    if code is not None:
        return code
    code = run(config, spec, Inputs(table, baseline))
    if launched() and code in (ExitCode.FAIL, ExitCode.NOT_PROVEN):  # a verdict, not a failed rank: the launching
        return ExitCode.PASS  # process reads it from rank 0's report (the launcher stops every rank on a non-zero exit)
    return code


if __name__ == "__main__":
    from benchmarks.harness.model_registry import models

    sys.exit(f"run one of: {', '.join(f'bench-{name}' for name in models())}")
