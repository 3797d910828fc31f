"""Does the A/B gate catch a planted regression, and pass an image compared with itself? (`make perf-ab-power`)

The long form: docs/design-notes.md, section `perf/bench_ab_power.py`.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from benchmarks.harness import cpu_kind
from benchmarks.harness.timing import PLANTED_SLOWDOWN_ENV
from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine, image_ref
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.ab import compare, plan, rounds, verdict
from ngc_paddle.release.ab.metrics import IMAGE_SIZE
from perf.bench_gate_power import load
from perf.measurements import REPO, matrix, record

VARIANTS = {"healthy": "", "slowed-train": "train=2", "slowed-infer": "infer=2", "slowed-1.2": "1.2",
            "slowed-1.1": "1.1", "slowed-1.05": "1.05"}
SLOWED_PHASES = {"healthy": (), "slowed-train": ("train",), "slowed-infer": ("infer",),
                 "slowed-1.2": ("train", "infer"), "slowed-1.1": ("train", "infer"), "slowed-1.05": ("train", "infer")}
# How fine the A/B sees: slowdowns near its threshold (5 %), which it may not resolve within the round cap. A slowed
# metric of these still NOT PROVEN (or PASS) at the cap is "unresolved", the A/B's resolution, never a miss.
RESOLUTION_VARIANTS = ("slowed-1.1", "slowed-1.05")
# A round's run: small images and one inference batch size, both phases, each measured for a few seconds.
THREADS = 1
ROUND_ARGS = ("--image-size", "32", "--batch-size", "8", "--infer-image-size", "32", "--batch-sizes", "8",
              "--backends", "paddle-inference", "--num-classes", "10", "--steps", "12", "--warmup", "3",
              "--infer-iters", "100")
DERIVED = "ngc-paddle-ab-power"  # the repository of the ISA-capped images made from IMAGE (removed at the end)


def phase(metric_key: str) -> str:
    """train, infer or validate: what a compared figure measures (bench-rn50:train.fp32.ips -> train)."""
    _, sep, rest = metric_key.partition(":")
    return rest.split(".", 1)[0] if sep else metric_key.split(".", 1)[0]


def expected(variant: str, metric_key: str) -> str:
    """What the A/B must say of one metric: FAIL where its phase was slowed, PASS elsewhere."""
    return "FAIL" if phase(metric_key) in SLOWED_PHASES[variant] else "PASS"


def outcome(variant: str, metric_key: str, status: str) -> str:
    """'ok'; 'miss' (a slowed metric that did not FAIL by the cap); 'unresolved' (one of RESOLUTION_VARIANTS that
    did not FAIL by the cap); 'false fail' (a metric of a phase run as shipped that FAILed); 'undecided' (one that
    was still NOT PROVEN at the cap: held, neither wrong way)."""
    want = expected(variant, metric_key)
    if status == want:
        return "ok"
    if want == "FAIL":
        return "unresolved" if variant in RESOLUTION_VARIANTS else "miss"
    return "false fail" if status == "FAIL" else "undecided"


@dataclass
class Watch:
    """Judges the rounds after each one ends, as a release with that many rounds would. Done when every slowed
    metric has FAILed and every other one is decided (PASS or FAIL), or has had `pass_rounds` rounds to be: an A/B
    that cannot tell an unchanged phase within 5 % by then leaves it undecided rather than hold the lock for hours
    (the rounds a PASS needs grow as the noise squared). A slowed metric gets every round up to the job's cap.
    Keeps the first round at which each metric FAILed and the last verdicts."""

    threshold_pct: float
    variant: str = "healthy"
    pass_rounds: int = 30
    say: Callable[[str], None] = print
    judged: int = 0  # complete rounds judged so far
    first_fail: dict[str, int] = field(default_factory=dict)
    last: dict[str, verdict.MetricVerdict] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def decided(self) -> bool:
        return bool(self.last) and all(v.status in ("PASS", "FAIL") for v in self.last.values())

    @property
    def done(self) -> bool:
        slowed = [v for key, v in self.last.items() if expected(self.variant, key) == "FAIL"]
        others = [v for key, v in self.last.items() if expected(self.variant, key) == "PASS"]
        return bool(self.last) and all(v.status == "FAIL" for v in slowed) and (
            self.judged >= self.pass_rounds or all(v.status in ("PASS", "FAIL") for v in others))

    def judge(self, pairs: dict) -> bool:
        """Judge (candidate, reference) pairs per metric (from rounds.Rounds.pairs); True when done."""
        pairs = {m: p for m, p in pairs.items() if m.key != IMAGE_SIZE and p}
        complete = min((len(p) for p in pairs.values()), default=0)
        if complete <= self.judged:
            return self.done
        self.judged = complete
        self.last = {m.key: verdict.judge(m, p, self.threshold_pct) for m, p in pairs.items()}
        for key, judged in self.last.items():
            if judged.status == "FAIL":
                self.first_fail.setdefault(key, complete)
        self.say(f"      after round {complete:02d}: " + "; ".join(
            f"{short(v.label)} {v.ratio:.3f} [{v.low:.3f}, {v.high:.3f}] {v.status}" for v in self.last.values()))
        return self.done

    def __call__(self, folder: Path) -> bool:
        found = rounds.read(folder)
        self.problems = found.problems
        return self.judge(found.pairs())


def short(label: str) -> str:
    """'bench-rn50 infer paddle-inference onednn fp32 bs8 img/s' -> 'infer ... bs8 img/s' (fits a line)."""
    return label.split(" ", 1)[1] if label.startswith("bench-") else label


def round_args(options: argparse.Namespace) -> tuple[str, ...]:
    """The options of every benchmark run of the rounds (both images alike)."""
    return (*ROUND_ARGS, *(("--threads", str(options.threads)) if options.threads else ()))


def capped_image(image: str, isa: str, work: Path) -> str:
    """IMAGE itself (native), or an image made from it with ISA_CAPS[isa] in its environment (both A/B sides run it,
    since candidate_env reaches the candidate only); tagged under DERIVED, removed at the end."""
    caps = cpu_kind.ISA_CAPS[isa]
    if not caps:
        return image
    dockerfile = work / f"Dockerfile.{isa}"
    dockerfile.write_text(f"FROM {image}\n" + "".join(f"ENV {k}={v}\n" for k, v in caps.items()))
    target = f"{DERIVED}:{isa}"
    proc = engine.docker("build", "--quiet", "-t", target, "-f", str(dockerfile), str(work), check=False)
    if proc.returncode != 0:
        raise NgcPaddleError(f"{image}: cannot derive the {isa}-capped image: "
                             f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}; fix: check the engine")
    return target


def run_variant(image: str, variant: str, options: argparse.Namespace, folder: Path, threshold: float,
                say: Callable[[str], None] = print) -> dict:
    """One A/B of `image` against itself, `variant` planted into the candidate, rounds until decided or the cap."""
    image_id = engine.image_id(image)
    if image_id is None:
        raise NgcPaddleError(f"{image}: not on this host; fix: build it (make image)")
    env = (f"{PLANTED_SLOWDOWN_ENV}={VARIANTS[variant]}",) if VARIANTS[variant] else ()
    spec = plan.compare_job(image_id, image_id, folder.resolve(), plan.MODELS[options.model], options.max_rounds,
                            False, 0, False, options.warmup_rounds, pull=False, candidate_env=env)
    spec = replace(spec, ab_benches=tuple((command, round_args(options)) for command in plan.MODELS[options.model]))
    watch = Watch(threshold, variant, options.pass_rounds, say)
    start = time.monotonic()
    attempt = compare.run_job(spec, lambda _line: None, stop_when=watch)
    seconds = time.monotonic() - start
    watch(attempt / "bench-ab")  # the last round, when the job ended at the cap before it was asked
    found = rounds.read(attempt / "bench-ab")
    measured = [s for s in found.steps if s.round >= 1]
    per_round = sum(s.seconds for s in measured) / max(1, len({s.round for s in measured}))
    stopped = (f"decided at round {watch.judged}" if watch.decided else
               stopped_undecided(variant, watch.judged) if watch.done else
               f"cap: {watch.judged} rounds" if watch.judged >= options.max_rounds else
               f"ended after {watch.judged} rounds: {found.outcome}")
    return {"variant": variant, "rounds": watch.judged, "stopped": stopped, "seconds": seconds,
            "round_seconds": per_round, "problems": watch.problems,
            "metrics": {key: {"label": v.label, "status": v.status, "ratio": v.ratio, "low": v.low, "high": v.high,
                              "test_p": v.test_p, "more_rounds": v.more_rounds, "expected": expected(variant, key),
                              "first_fail": watch.first_fail.get(key), "outcome": outcome(variant, key, v.status)}
                        for key, v in watch.last.items()}}


def stopped_undecided(variant: str, rounds_run: int) -> str:
    """How an A/B that stopped at --pass-rounds with unslowed metrics still NOT PROVEN is shown."""
    return (("slowed metrics FAILed; others " if SLOWED_PHASES[variant] else "")
            + f"undecided after {rounds_run} rounds (--pass-rounds)")


def per_metric(runs: list[dict]) -> dict[tuple[str, str, str], dict]:
    """Per CPU kind, load and metric label: runs, misses, false fails, undecided, and the rounds at which it FAILed
    per slowed variant (a metric that never FAILed is not in those lists: it is a miss)."""
    out: dict[tuple[str, str, str], dict] = {}
    for run in runs:
        for figures in run["metrics"].values():
            counts = out.setdefault((run["kind"], run["load"], short(figures["label"])),
                                    {"runs": 0, "miss": 0, "false fail": 0, "undecided": 0, "unresolved": [],
                                     "rounds to FAIL": {}})
            counts["runs"] += 1
            if figures["outcome"] == "unresolved":
                counts["unresolved"].append(run["variant"])
            elif figures["outcome"] != "ok":
                counts[figures["outcome"]] += 1
            if figures["expected"] == "FAIL" and figures["first_fail"] is not None:
                counts["rounds to FAIL"].setdefault(run["variant"], []).append(figures["first_fail"])
    return out


def exit_code(runs: list[dict]) -> ExitCode:
    """FAIL on any miss or false fail; NOT PROVEN when metrics stayed undecided or a slowdown near the threshold was
    not resolved by the cap; PASS otherwise (and with runs)."""
    outcomes = [m["outcome"] for run in runs for m in run["metrics"].values()]
    if not outcomes or "miss" in outcomes or "false fail" in outcomes:
        return ExitCode.FAIL
    return ExitCode.NOT_PROVEN if {"undecided", "unresolved"} & set(outcomes) else ExitCode.PASS


def _rounds(values: list[int]) -> str:
    if len(values) == 1:
        return str(values[0])
    return f"median {statistics.median(values):g} ({min(values)}-{max(values)}, {len(values)} runs)"


def markdown(runs: list[dict], options: argparse.Namespace, repetition_s: list[float]) -> str:
    length = " ".join(round_args(options))
    lines = [f"The image A/B'd against itself through the release's round machinery, healthy and with a planted "
             f"slowdown of the candidate ({PLANTED_SLOWDOWN_ENV}: train=2, infer=2, 1.2, 1.1 and 1.05 on both phases; "
             f"the last two probe how fine the A/B sees against its {options.threshold_pct:g} % threshold), rounds run "
             f"until every slowed metric FAILed ({options.max_rounds} at most) and the others were decided (or had "
             f"{options.pass_rounds} rounds), {options.warmup_rounds} warm-up round(s) before; bench-{options.model} "
             f"runs of `{length}`; {options.runs} repetition(s) per CPU kind and load.", "",
             "| CPU kind | load | variant | rounds | stopped | metrics: ratio [95 % CI] verdict (first FAIL round) |",
             "| --- | --- | --- | ---: | --- | --- |"]
    for run in runs:
        shown = "; ".join(f"{short(m['label'])} {m['ratio']:.3f} [{m['low']:.3f}, {m['high']:.3f}] {m['status']}"
                          + (f" (round {m['first_fail']})" if m["first_fail"] else "")
                          + ("" if m["outcome"] == "ok" else f" **{m['outcome']}**") for m in run["metrics"].values())
        lines.append(f"| {run['kind']} | {run['load']} | {run['variant']} | {run['rounds']} | {run['stopped']} | "
                     f"{shown or 'no figures: ' + '; '.join(run['problems'][:2])} |")
    lines += ["", "Per metric, CPU kind and load (a slowed metric must FAIL, the other phase's PASS):", ""]
    for (kind, load_kind, label), c in per_metric(runs).items():
        caught = "; ".join(f"{variant} {_rounds(v)}" for variant, v in c["rounds to FAIL"].items())
        unresolved = ", ".join(f"{v} ({c['unresolved'].count(v)}x)" for v in dict.fromkeys(c["unresolved"]))
        lines.append(f"- {kind} {load_kind} {label}: {c['miss']} miss(es), {c['false fail']} false fail(s), "
                     f"{c['undecided']} undecided in {c['runs']} run(s)" + (f"; FAILed at round: {caught}"
                                                                             if caught else "")
                     + (f"; NOT PROVEN at the cap of {options.max_rounds} rounds: {unresolved}" if unresolved else ""))
    rounds_run = sum(r["rounds"] + options.warmup_rounds for r in runs)
    per_round = [r["round_seconds"] for r in runs if r["rounds"]]
    lines += ["", f"One repetition of everything: {', '.join(f'{s / 60:.1f} min' for s in repetition_s)} "
              f"({rounds_run} rounds in all, {statistics.median(per_round) if per_round else 0:.0f} s per round "
              "(both images), median)."]
    return "\n".join(lines) + "\n"


def _list(text: str) -> list[str]:
    return [item for item in text.split(",") if item]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("image")
    p.add_argument("--runs", type=int, default=1, help="repetitions of each kind x load x variant (default 1)")
    p.add_argument("--isas", default="native,avx2", type=_list,
                   help=f"CPU kinds to show: {', '.join(cpu_kind.ISA_CAPS)} (the kernels capped to that ISA)")
    p.add_argument("--loads", default="idle,busy", type=_list)
    p.add_argument("--variants", default=",".join(VARIANTS), type=_list, help=f"any of {', '.join(VARIANTS)}")
    p.add_argument("--max-rounds", type=int, default=30,
                   help="rounds at most per A/B: a slowed metric that has not FAILed by then is a miss (default 30)")
    p.add_argument("--pass-rounds", type=int, default=10, help="rounds an unslowed metric gets to PASS before it is "
                   "left undecided (default 10; a slowed metric gets --max-rounds)")
    p.add_argument("--model", choices=tuple(plan.MODELS), default="rn50", help="benchmark(s) of each round")
    p.add_argument("--warmup-rounds", type=int, choices=(0, 1), default=plan.WARMUP_ROUNDS,
                   help="discarded rounds before the measured ones (the release's default: 1)")
    p.add_argument("--threads", type=int, default=THREADS,
                   help=f"CPU threads of each run (default {THREADS}; 0: the benchmark's own, every CPU)")
    p.add_argument("--keep", type=Path, help="keep every A/B's job folder here (default: a temporary folder)")
    p.add_argument("--json", type=Path, help="also write every A/B here")
    p.add_argument("--no-record", action="store_true", help="do not write docs/measurements.md")
    options = p.parse_args(argv)
    # what of the whole matrix this run measures: a run of part of it records its own section
    ran = matrix(p, options, {"ISAS": "isas", "MODEL": "model", "LOADS": "loads", "VARIANTS": "variants"})
    bad = [k for k in options.loads if k not in ("idle", "busy")] + \
        [v for v in options.variants if v not in VARIANTS] + [i for i in options.isas if i not in cpu_kind.ISA_CAPS]
    if bad or options.runs < 1 or options.max_rounds < verdict.FAIL_MIN_ROUNDS or \
            not (options.loads and options.variants and options.isas):
        print(f"error: {bad[0] if bad else f'--runs {options.runs} / --max-rounds {options.max_rounds}'}: not a load "
              f"(idle, busy), a variant ({', '.join(VARIANTS)}), an ISA ({', '.join(cpu_kind.ISA_CAPS)}), or runs < 1 "
              f"or max rounds < {verdict.FAIL_MIN_ROUNDS} (a FAIL needs that many); fix: see --help", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if (code := image_ref.unbuilt_exit(options.image)) is not None:
        return code
    threshold = options.threshold_pct = verdict.max_regression_pct(REPO)
    kinds = {isa: cpu_kind.detect(environ=cpu_kind.ISA_CAPS[isa]).name for isa in options.isas}
    runs: list[dict] = []
    repetition_s: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ab-power-") as tmp:
        work = options.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        derived: list[str] = []
        try:
            images = {isa: capped_image(options.image, isa, work) for isa in options.isas}
            derived = [ref for ref in images.values() if ref.startswith(f"{DERIVED}:")]
            for repetition in range(1, options.runs + 1):
                begun = time.monotonic()
                for load_kind in options.loads:
                    with load(load_kind):
                        for isa in options.isas:
                            for variant in options.variants:
                                print(f"[{repetition}/{options.runs}] {kinds[isa]} {load_kind} {variant}: "
                                      f"{options.image} against itself", flush=True)
                                folder = work / f"{repetition:02d}-{isa}-{load_kind}-{variant}"
                                run = {**run_variant(images[isa], variant, options, folder, threshold,
                                                     lambda line: print(line, flush=True)),
                                       "kind": kinds[isa], "isa": isa, "load": load_kind, "repetition": repetition}
                                runs.append(run)
                                wrong = [f"{short(m['label'])}: {m['outcome']}" for m in run["metrics"].values()
                                         if m["outcome"] != "ok"]
                                print(f"    -> {run['stopped']}, {run['seconds'] / 60:.1f} min "
                                      f"({run['round_seconds']:.0f} s per round): "
                                      + ("ok" if not wrong and run["metrics"] else "; ".join(wrong) or "no figures"),
                                      flush=True)
                repetition_s.append(time.monotonic() - begun)
                print(f"repetition {repetition}: {repetition_s[-1] / 60:.1f} min", flush=True)
        finally:
            engine.remove_images(*derived)
    text = markdown(runs, options, repetition_s)
    print("\n" + text)
    if options.json:
        options.json.write_text(json.dumps(runs, indent=2) + "\n")
    if not options.no_record and runs:
        record("perf-ab-power", "A/B gate: false fails and misses, the image against itself with a planted slowdown",
               text, ran)
    return exit_code(runs)


if __name__ == "__main__":
    sys.exit(main())
