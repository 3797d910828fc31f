"""Do the CPU gates catch a real regression? Each gate healthy and with a planted 2x slowdown, idle and busy.

Why: a gate nobody has seen fail proves nothing. For each model with CPU gates in benchmarks/gates.yaml
(bench-rn50, bench-hgnet) this runs the benchmark in the image in the gates' own configuration (their
`when`: image size, batch, model), shortened (few steps) but long enough for the interleaved probes,
  healthy  as shipped: every gate must PASS (a FAIL or NOT PROVEN is a false fail);
  slowed   with the harness's test hook NGC_PADDLE_BENCH_PLANTED_SLOWDOWN=2 (each timed step sleeps as
           long as it ran: half the work rate): the run must FAIL (a PASS or NOT PROVEN is a miss);
on an idle host and with every core busy (a load generator this script starts: one spinning process
per core), N rounds of each, alternating so drift on the host hits all alike. The CPU gates are ratios
measured in the same run (efficiency against the peaks probed interleaved with the work), so they
need no figure from another machine. Prints every run and the false-fail and miss rates; records them
in docs/measurements.md after a complete run. Exit 0 when there were no misses and no false fails,
1 otherwise.

  python perf/bench_gate_power.py IMAGE [--runs 10] [--models rn50,hgnet] [--loads idle,busy]
                                  [--variants healthy,slowed] [--mode all] [--gates FILE] [--json FILE] [--no-record]
"""

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.harness import gates  # noqa: E402
from benchmarks.harness.timing import PLANTED_SLOWDOWN_ENV  # noqa: E402
from ngc_common.errors import InputError  # noqa: E402
from ngc_common.exit_codes import ExitCode  # noqa: E402
from ngc_paddle import engine, image_ref  # noqa: E402
from ngc_paddle.errors import NgcPaddleError  # noqa: E402
from perf.measurements import record  # noqa: E402

VARIANTS = {"healthy": None, "slowed": "2"}
EXPECTED = {"healthy": "PASS", "slowed": "FAIL"}
OPTION = {"image_size": "--image-size", "batch_size": "--batch-size", "infer_image_size": "--infer-image-size",
          "model": "--model", "gpus": "--gpus"}
SHORT = ["--warmup", "1", "--steps", "3", "--infer-iters", "20", "--batch-sizes", "1,8",
         "--backends", "paddle-inference"]


def gate_args(table: dict, model: str) -> list[str]:
    """The options that put a run in the configuration of every CPU gate of `model` (their `when`)."""
    when: dict = {}
    for gate in table["models"][model].get("cpu", []):
        for key, value in gate.get("when", {}).items():
            if when.setdefault(key, value) != value:
                raise ValueError(f"gates.yaml: the cpu gates of {model} disagree on {key}: {when[key]} vs {value}")
    return [arg for key, value in when.items() if key in OPTION for arg in (OPTION[key], str(value))]


def outcome(variant: str, verdict: str | None) -> str:
    """What one run shows: 'ok', 'false fail' (a healthy run that did not pass) or 'miss' (a slowed one that did
    not fail); a run that left no verdict counts against the gate too."""
    if verdict == EXPECTED[variant]:
        return "ok"
    return "false fail" if variant == "healthy" else "miss"


def rates(runs: list[dict]) -> dict[str, dict]:
    """Per variant: runs, how many went wrong, the rate."""
    out = {}
    for variant in VARIANTS:
        mine = [r for r in runs if r["variant"] == variant]
        if mine:
            wrong = sum(r["outcome"] != "ok" for r in mine)
            out[variant] = {"runs": len(mine), "wrong": wrong, "rate": wrong / len(mine)}
    return out


def _spin() -> None:
    while True:
        pass


@contextmanager
def load(kind: str) -> Iterator[None]:
    """`busy`: one spinning process per core for the duration; `idle`: nothing."""
    procs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(os.cpu_count() or 1)] \
        if kind == "busy" else []
    for proc in procs:
        proc.start()
    try:
        yield
    finally:
        for proc in procs:
            proc.terminate()
            proc.join()


def run_once(image: str, model: str, variant: str, args: list[str], work: Path, timeout: float,
             gates_file: Path | None = None) -> dict:
    """One benchmark run in the image (against `gates_file` instead of the image's own gates.yaml when given);
    its verdict and the CPU gates' figures."""
    out = Path(tempfile.mkdtemp(prefix=f"{model}-{variant}-", dir=work))
    flags = [*engine.run_flags(writes_mounts=True), "-e", "NGC_PADDLE_QUIET=1", "-v", f"{out}:/workspace"]
    if gates_file:
        flags += ["-v", f"{gates_file.resolve()}:/tmp/gates.yaml:ro"]
        args = [*args, "--gates", "/tmp/gates.yaml"]
    if VARIANTS[variant]:
        flags += ["-e", f"{PLANTED_SLOWDOWN_ENV}={VARIANTS[variant]}"]
    start = time.monotonic()
    proc = engine.run(image, f"bench-{model}", "--output", "/workspace/out", *args, flags=flags, timeout=timeout)
    seconds = time.monotonic() - start
    found = sorted(out.glob("out/*/result.json"))
    result = json.loads(found[-1].read_text()) if found else {}
    cpu_gates = {g["metric"]: (g["status"], g["measured"]) for g in result.get("gates", []) if g["profile"] == "cpu"}
    verdict = result.get("verdict")
    tail = [] if found else f"{proc.stdout or ''}{proc.stderr or ''}".strip().splitlines()[-1:]
    return {"model": model, "variant": variant, "verdict": verdict, "exit": proc.returncode, "seconds": seconds,
            "gates": cpu_gates, "reasons": result.get("verdict_reasons", []) or tail,
            "outcome": outcome(variant, verdict)}


def markdown(runs: list[dict], options: argparse.Namespace) -> str:
    lines = [f"Each CPU gate run healthy and with the planted 2x slowdown ({PLANTED_SLOWDOWN_ENV}=2), {options.runs} "
             f"round(s) of each, {options.mode} mode, short runs ({' '.join(SHORT)}), in the gates' configuration.",
             "", "| model | load | variant | runs | false fails / misses | verdicts | gate figures (min-max) |",
             "| --- | --- | --- | ---: | ---: | --- | --- |"]
    for model in options.models:
        for kind in options.loads:
            group = [r for r in runs if r["model"] == model and r["load"] == kind]
            for variant, rate in rates(group).items():
                mine = [r for r in group if r["variant"] == variant]
                verdicts = ", ".join(f"{v} {sum(r['verdict'] == v for r in mine)}"
                                     for v in sorted({str(r["verdict"]) for r in mine}))
                figures = "; ".join(f"{gate} {min(vals):.3f}-{max(vals):.3f}" for gate, vals in _gate_values(mine))
                lines.append(f"| {model} | {kind} | {variant} | {rate['runs']} | {rate['wrong']} | {verdicts} | "
                             f"{figures or '-'} |")
    total = rates(runs)
    lines += ["", "False-fail rate " + _rate(total.get("healthy")) + ", miss rate " + _rate(total.get("slowed"))
              + " (target: 0 and 0), counted per run (its verdict).", "", "Per gate:", ""]
    lines += [f"- {metric}: {wrong['healthy']} false fail(s), {wrong['slowed']} miss(es)"
              for metric, wrong in per_gate(runs).items()]
    return "\n".join(lines) + "\n"


def per_gate(runs: list[dict]) -> dict[str, dict[str, int]]:
    """Per gate metric: healthy runs where it failed, slowed runs where it passed (a run can be caught by one gate
    while another misses; each should catch it alone)."""
    out: dict[str, dict[str, int]] = {}
    for run in runs:
        for metric, (status, _measured) in run["gates"].items():
            wrong = out.setdefault(metric, {"healthy": 0, "slowed": 0})
            wrong[run["variant"]] += status == ("FAIL" if run["variant"] == "healthy" else "PASS")
    return out


def _gate_values(runs: list[dict]) -> list[tuple[str, list[float]]]:
    values: dict[str, list[float]] = {}
    for run in runs:
        for gate, (status, measured) in run["gates"].items():
            if measured is not None and status in ("PASS", "FAIL"):
                values.setdefault(gate, []).append(measured)
    return sorted(values.items())


def _rate(rate: dict | None) -> str:
    return "-" if rate is None else f"{rate['wrong']}/{rate['runs']} ({rate['rate'] * 100:.0f} %)"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("image")
    p.add_argument("--runs", type=int, default=10, help="rounds of each model x load x variant (default 10)")
    p.add_argument("--models", default="rn50,hgnet", type=lambda s: s.split(","))
    p.add_argument("--loads", default="idle,busy", type=lambda s: s.split(","))
    p.add_argument("--variants", default="healthy,slowed", type=lambda s: s.split(","))
    p.add_argument("--mode", choices=("all", "train", "infer"), default="all", help="the benchmark's --mode")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per benchmark run")
    p.add_argument("--gates", type=Path, help="gates file to judge by (default: the image's own; e.g. "
                   "benchmarks/gates.yaml of this checkout while tuning thresholds)")
    p.add_argument("--json", type=Path, help="also write every run here")
    p.add_argument("--no-record", action="store_true", help="do not write docs/measurements.md")
    options = p.parse_args(argv)
    try:
        table = gates.load(options.gates) if options.gates else gates.load()
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    bad = [m for m in options.models if not table["models"].get(m, {}).get("cpu")] + \
        [k for k in options.loads if k not in ("idle", "busy")] + [v for v in options.variants if v not in VARIANTS]
    if bad or options.runs < 1:
        print(f"error: {bad[0] if bad else options.runs}: not a model with CPU gates, a load (idle, busy), a variant "
              "(healthy, slowed) or a number of runs >= 1; fix: see --help", file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        image_ref.require_built(options.image)
    except NgcPaddleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    runs = []
    with tempfile.TemporaryDirectory(prefix="gate-power-") as work:
        for round_ in range(1, options.runs + 1):
            for kind in options.loads:
                with load(kind):
                    for model in options.models:
                        args = [*gate_args(table, model), *SHORT, "--mode", options.mode]
                        for variant in options.variants:
                            run = {**run_once(options.image, model, variant, args, Path(work), options.timeout,
                                            options.gates),
                                   "load": kind, "round": round_}
                            runs.append(run)
                            gates_shown = ", ".join(f"{g} {s} {m if m is None else round(m, 4)}"
                                                    for g, (s, m) in run["gates"].items())
                            print(f"[{round_}/{options.runs}] {model} {kind:<4} {variant:<7} -> {run['verdict']} "
                                  f"({run['outcome']}, {run['seconds']:.0f} s): {gates_shown}"
                                  + ("" if run["outcome"] == "ok" else f" | {'; '.join(run['reasons'])[:300]}"),
                                  flush=True)
    text = markdown(runs, options)
    print("\n" + text)
    if options.json:
        options.json.write_text(json.dumps(runs, indent=2) + "\n")
    if not options.no_record:
        record("bench-gate-power", "CPU gates: false fails and misses with a planted 2x slowdown", text)
    return ExitCode.PASS if all(r["outcome"] == "ok" for r in runs) else ExitCode.FAIL


if __name__ == "__main__":
    sys.exit(main())
