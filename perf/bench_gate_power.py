"""Do the CPU gates catch a real regression of their own phase, on more than one CPU kind, idle and busy?

The long form: docs/design-notes.md, section `perf/bench_gate_power.py`.
"""

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.harness import acceptance_gates, cpu_kind
from benchmarks.harness.timing import PLANTED_SLOWDOWN_ENV
from ngc_common.errors import InputError
from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine, image_ref
from perf.measurements import matrix, record

VARIANTS = {"healthy": None, "slowed-train": "train=2", "slowed-infer": "infer=2", "slowed": "2"}
SLOWED_PHASES = {"healthy": (), "slowed-train": ("train",), "slowed-infer": ("infer",), "slowed": ("train", "infer")}
OPTION = {"image_size": "--image-size", "batch_size": "--batch-size", "infer_image_size": "--infer-image-size",
          "model": "--model", "gpus": "--gpus"}
ISA_WORDS = {"native": "native kernels", "avx2": "capped to AVX2"}  # how the report names each --isas choice
DEFAULT_RUNS = 10  # the rounds proving the CPU gates takes (make perf-gate-power's default)
SHORT = ["--warmup", "1", "--steps", "3", "--infer-iters", "20", "--batch-sizes", "1,8",
         "--backends", "paddle-inference"]


def cpu_gates(table: dict, model: str, kind: str) -> list[dict]:
    """The CPU gates of `model` that hold for CPU kind `kind` (their `when: {cpu_kind}`)."""
    return [g for g in table["models"][model].get("cpu", []) if g.get("when", {}).get("cpu_kind") == kind]


def gate_args(table: dict, model: str, kind: str) -> list[str]:
    """The options that put a run in the configuration of every CPU gate of `model` for `kind` (their `when`)."""
    when: dict = {}
    for gate in cpu_gates(table, model, kind):
        for key, value in gate.get("when", {}).items():
            if when.setdefault(key, value) != value:
                raise ValueError(f"gates.yaml: the cpu gates of {model} disagree on {key}: {when[key]} vs {value}")
    return [arg for key, value in when.items() if key in OPTION for arg in (OPTION[key], str(value))]


def gated_phases(table: dict, model: str, kind: str) -> tuple[str, ...]:
    """The phases (train, infer) that have a CPU floor of `model` for CPU kind `kind`."""
    return tuple(sorted({g["metric"].split(".", 1)[0] for g in cpu_gates(table, model, kind)}))


def expected(variant: str, metric: str | None = None, gated: tuple[str, ...] = ("train", "infer")) -> str:
    """What a run (metric None) or one gate must show: slowed phases FAIL, everything else PASS. A run fails only
    through a gate: a slowed phase without a floor for the run's CPU kind (not `gated`) cannot fail it."""
    if metric is None:
        return "FAIL" if set(SLOWED_PHASES[variant]) & set(gated) else "PASS"
    return "FAIL" if metric.split(".", 1)[0] in SLOWED_PHASES[variant] else "PASS"


def outcome(variant: str, verdict: str | None, gated: tuple[str, ...] = ("train", "infer")) -> str:
    """What one run shows: 'ok', 'false fail' (a run that should pass and did not) or 'miss' (one a gate should
    have failed and did not); a run that left no verdict counts against the gates too."""
    want = expected(variant, None, gated)
    if verdict == want:
        return "ok"
    return "miss" if want == "FAIL" else "false fail"


def not_gated(variant: str, gated: tuple[str, ...]) -> list[str]:
    """The phases a variant slows that no floor of the run's CPU kind gates: not a miss of a gate that does not
    exist, reported as not gated (the A/B gate covers them: make perf-ab-power)."""
    return [p for p in SLOWED_PHASES[variant] if p not in gated]


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
             gates_file: Path | None = None, isa: str = "native") -> dict:
    """One benchmark run in the image (against `gates_file` instead of the image's own gates.yaml when given, its
    kernels capped to `isa`); its verdict and the CPU gates' figures."""
    out = Path(tempfile.mkdtemp(prefix=f"{model}-{variant}-{isa}-", dir=work))
    flags = [*engine.run_flags(writes_mounts=True), "-e", "NGC_PADDLE_QUIET=1", "-v", f"{out}:/workspace"]
    flags += [arg for name, value in cpu_kind.ISA_CAPS[isa].items() for arg in ("-e", f"{name}={value}")]
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
    cpu = cpu_verdicts(result.get("gates", []))
    verdict = result.get("verdict")
    tail = [] if found else f"{proc.stdout or ''}{proc.stderr or ''}".strip().splitlines()[-1:]
    return {"model": model, "variant": variant, "isa": isa, "cpu_kind": result.get("config", {}).get("cpu_kind"),
            "verdict": verdict, "exit": proc.returncode, "seconds": seconds, "gates": cpu,
            "reasons": result.get("verdict_reasons", []) or tail}


def cpu_verdicts(verdicts: list[dict]) -> dict[str, tuple[str, float | None]]:
    """Per metric, the status and figure of the CPU floor that applied (one per metric and CPU kind: the floors of
    other kinds are N/A and shown only where none applied)."""
    out: dict[str, tuple[str, float | None]] = {}
    for verdict in sorted((v for v in verdicts if v["profile"] == "cpu"), key=lambda v: v["status"] != "N/A"):
        out[verdict["metric"]] = (verdict["status"], verdict["measured"])  # an applied floor is written last: kept
    return out


def markdown(runs: list[dict], options: argparse.Namespace, skipped: list[str], round_s: list[float] = ()) -> str:
    lines = [f"Each CPU gate run healthy and with a planted 2x slowdown of one phase ({PLANTED_SLOWDOWN_ENV}=train=2 "
             f"or infer=2), {options.runs} round(s) of each, {options.mode} mode, short runs ({' '.join(SHORT)}), in "
             f"the gates' configuration, per CPU kind ({', '.join(ISA_WORDS.get(i, i) for i in options.isas)}).",
             "", "| model | CPU kind | load | variant | runs | false fails / misses | verdicts | gate figures "
             "(min-max) |",
             "| --- | --- | --- | --- | ---: | ---: | --- | --- |"]
    for model in options.models:
        for kind in sorted({r["kind"] for r in runs}):
            for load_kind in options.loads:
                group = [r for r in runs if (r["model"], r["kind"], r["load"]) == (model, kind, load_kind)]
                for variant in VARIANTS:
                    mine = [r for r in group if r["variant"] == variant]
                    if not mine:
                        continue
                    wrong = sum(r["outcome"] != "ok" for r in mine)
                    verdicts = ", ".join(f"{v} {sum(r['verdict'] == v for r in mine)}"
                                         for v in sorted({str(r["verdict"]) for r in mine}))
                    figures = "; ".join(f"{gate} {min(vals):.3f}-{max(vals):.3f}" for gate, vals in _gate_values(mine))
                    lines.append(f"| {model} | {kind} | {load_kind} | {variant} | {len(mine)} | {wrong} | {verdicts} | "
                                 f"{figures or '-'} |")
    total = rates(runs)
    healthy = total.get("healthy")
    # a slowed run whose slowed phase no floor of its kind gates cannot be missed: counted apart, not as caught
    unguarded = sum(bool(not_gated(r["variant"], tuple(r.get("gated", ())))) for r in runs)
    slowed = [rate for variant, rate in total.items() if variant != "healthy"]
    missed = {"runs": sum(r["runs"] for r in slowed) - unguarded, "wrong": sum(r["wrong"] for r in slowed)} \
        if slowed else None
    if missed:
        missed["rate"] = missed["wrong"] / missed["runs"] if missed["runs"] else 0.0
    apart = f"; {unguarded} slowed run(s) not gated (no floor of the kind for the slowed phase)" if unguarded else ""
    lines += ["", "False-fail rate " + _rate(healthy) + ", miss rate " + _rate(missed) + " of the gated slowed runs"
              + apart + " (target: 0 and 0), counted per run (its verdict).", "",
              "Per gate, model, CPU kind and load (each gate alone: a slowed phase's gate must fail, the other "
              "phase's pass):", ""]
    lines += [f"- {model} {kind} {load_kind} {metric}: {wrong['false fail']} false fail(s), {wrong['miss']} miss(es) "
              f"in {wrong['runs']} run(s)" for (model, kind, load_kind, metric), wrong in per_gate(runs).items()]
    lines += [f"- {model} {kind} {load_kind} {slowed}: not gated (A/B covers it): no {slowed} floor for this kind, "
              f"{count} slowed run(s) not counted as misses"
              for (model, kind, load_kind, slowed), count in per_phase_not_gated(runs).items()]
    lines += [f"- skipped: {why}" for why in skipped]
    if round_s:
        lines += ["", f"One round (every model x kind x load x variant above) took "
                  f"{', '.join(f'{s / 60:.1f}' for s in round_s)} min; {DEFAULT_RUNS} rounds: about "
                  f"{DEFAULT_RUNS * statistics.median(round_s) / 3600:.1f} h."]
    return "\n".join(lines) + "\n"


def per_gate(runs: list[dict]) -> dict[tuple[str, str, str, str], dict[str, int]]:
    """Per model, CPU kind, load and gate metric: runs where it failed though its phase ran as shipped (false fail),
    runs where it passed though its phase was slowed (miss). A run can be caught by one gate while another misses;
    each should catch its own phase alone, and pass while the other phase is slowed. Models that share a metric
    (rn50's and hgnet's training floors) and the loads are counted apart, so one's miss is not hidden in the
    other's total."""
    out: dict[tuple[str, str, str, str], dict[str, int]] = {}
    for run in runs:
        for metric, (status, _measured) in run["gates"].items():
            if status == "N/A":  # no floor of this kind for that metric (another kind's): nothing to count
                continue
            key = (run["model"], run.get("kind", "-"), run.get("load", "-"), metric)
            wrong = out.setdefault(key, {"runs": 0, "false fail": 0, "miss": 0})
            wrong["runs"] += 1
            want = expected(run["variant"], metric)
            if status != want:
                wrong["miss" if want == "FAIL" else "false fail"] += 1
    return out


def per_phase_not_gated(runs: list[dict]) -> dict[tuple[str, str, str, str], int]:
    """Per model, CPU kind, load and phase: slowed runs whose slowed phase has no floor for that kind (printed, not
    counted as misses)."""
    out: dict[tuple[str, str, str, str], int] = {}
    for run in runs:
        for slowed in not_gated(run["variant"], tuple(run.get("gated", ()))):
            key = (run["model"], run.get("kind", "-"), run.get("load", "-"), slowed)
            out[key] = out.get(key, 0) + 1
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


def _list(text: str) -> list[str]:
    return [item for item in text.split(",") if item]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("image")
    p.add_argument("--runs", type=int, default=DEFAULT_RUNS,
                   help=f"rounds of each model x kind x load x variant (default {DEFAULT_RUNS})")
    p.add_argument("--models", default="rn50,hgnet", type=_list)
    p.add_argument("--loads", default="idle,busy", type=_list)
    p.add_argument("--isas", default="native,avx2", type=_list,
                   help=f"CPU kinds to show: {', '.join(cpu_kind.ISA_CAPS)} (the kernels capped to that ISA)")
    p.add_argument("--variants", default="healthy,slowed-train,slowed-infer", type=_list,
                   help=f"any of {', '.join(VARIANTS)}")
    p.add_argument("--mode", choices=("all", "train", "infer"), default="all", help="the benchmark's --mode")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per benchmark run")
    p.add_argument("--gates", type=Path, help="gates file to judge by (default: the image's own; e.g. "
                   "benchmarks/gates.yaml of this checkout while tuning thresholds)")
    p.add_argument("--json", type=Path, help="also write every run here")
    p.add_argument("--no-record", action="store_true", help="do not write docs/measurements.md")
    options = p.parse_args(argv)
    # what of the whole matrix this run measures: a run of part of it records its own section
    ran = matrix(p, options, {"ISAS": "isas", "MODELS": "models", "LOADS": "loads", "VARIANTS": "variants",
                              "MODE": "mode"})
    try:
        table = acceptance_gates.load(options.gates) if options.gates else acceptance_gates.load()
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    bad = [m for m in options.models if not table["models"].get(m, {}).get("cpu")] + \
        [k for k in options.loads if k not in ("idle", "busy")] + [v for v in options.variants if v not in VARIANTS] + \
        [i for i in options.isas if i not in cpu_kind.ISA_CAPS]
    if bad or options.runs < 1 or not (options.models and options.loads and options.variants and options.isas):
        print(f"error: {bad[0] if bad else options.runs}: not a model with CPU gates, a load (idle, busy), a variant "
              f"({', '.join(VARIANTS)}), an ISA ({', '.join(cpu_kind.ISA_CAPS)}) or a number of runs >= 1; "
              "fix: see --help", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if (code := image_ref.unbuilt_exit(options.image)) is not None:
        return code
    kinds = {isa: cpu_kind.detect(environ=cpu_kind.ISA_CAPS[isa]).name for isa in options.isas}
    plan, skipped = [], []
    for isa, kind in kinds.items():
        for model in options.models:
            gated = gated_phases(table, model, kind)
            if gated:
                plan.append((isa, kind, model, gated, [*gate_args(table, model, kind), *SHORT, "--mode", options.mode]))
                for p in ("train", "infer"):
                    if p not in gated:
                        print(f"note: {model} on {kind} ({isa}): no {p} floor for this kind: a slowed {p} phase is not "
                              "gated here (A/B covers it: make perf-ab-power)", flush=True)
            else:
                skipped.append(f"{model} on {kind} ({isa}): gates.yaml has no CPU floor for this kind")
    for why in skipped:
        print(f"note: {why}", flush=True)
    runs, round_s = [], []
    with tempfile.TemporaryDirectory(prefix="gate-power-") as work:
        for round_ in range(1, options.runs + 1):
            begun = time.monotonic()
            for load_kind in options.loads:
                with load(load_kind):
                    for isa, kind, model, gated, args in plan:
                        for variant in options.variants:
                            run = run_once(options.image, model, variant, args, Path(work), options.timeout,
                                           options.gates, isa)
                            run.update(kind=kind, load=load_kind, round=round_, gated=gated,
                                       outcome=outcome(variant, run["verdict"], gated))
                            runs.append(run)
                            gates_shown = ", ".join(f"{g} {s} {m if m is None else round(m, 4)}"
                                                    for g, (s, m) in run["gates"].items())
                            unguarded = not_gated(variant, gated)
                            print(f"[{round_}/{options.runs}] {model} {kind} {load_kind:<4} {variant:<12} -> "
                                  f"{run['verdict']} ({run['outcome']}, {run['seconds']:.0f} s): {gates_shown}"
                                  + (f" | {', '.join(unguarded)} not gated (A/B covers it)" if unguarded else "")
                                  + ("" if run["outcome"] == "ok" else f" | {'; '.join(run['reasons'])[:300]}"),
                                  flush=True)
            round_s.append(time.monotonic() - begun)
            print(f"round {round_}/{options.runs}: {round_s[-1] / 60:.1f} min; all {options.runs} rounds: about "
                  f"{options.runs * statistics.median(round_s) / 3600:.1f} h", flush=True)
    text = markdown(runs, options, skipped, round_s)
    print("\n" + text)
    if options.json:
        options.json.write_text(json.dumps(runs, indent=2) + "\n")
    if not options.no_record and runs:
        record("perf-gate-power", "CPU gates: false fails and misses, a planted 2x slowdown per phase and CPU kind",
               text, ran)
    wrong = [w for w in per_gate(runs).values() if w["false fail"] or w["miss"]]
    return ExitCode.PASS if runs and not wrong and all(r["outcome"] == "ok" for r in runs) else ExitCode.FAIL


if __name__ == "__main__":
    sys.exit(main())
