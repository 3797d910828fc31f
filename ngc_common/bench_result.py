"""The schema of a benchmark's result.json (written by benchmarks/harness/report.write), and its readers.

Why: one model, strict, for every reader. The benchmark reads a --baseline with it before it gates
regressions against one, and the release pipeline reads the results it stores and picks the previous
release's baselines by their verdict; a wrong file must not pass silently: a truncated or mistyped
file, a list, a validation.json, another benchmark's result (bench-hgnet's img/s against bench-rn50's),
a --smoke run's figures, or `"ips": "fast"` (which the comparison would skip) are bad input, one line
naming the file and the field (exit 2). Measurements inside `results` are checked by name (ips,
latency percentiles, FLOP/s, efficiency: finite numbers, never booleans; an efficiency never above 1.0,
which the harness reports as `efficiency_failure`, a probe failure). Needs pydantic.
"""

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, FiniteFloat, JsonValue, ValidationError

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_common.errors import InputError, OneLineError, line
from ngc_common.strict_model import Strict

MAX_RESULT_BYTES = 4 * 1024 * 1024  # a result.json of a full GPU sweep is tens of kB
FIX = "point --baseline at the result.json of an earlier full run of the same benchmark"
KEY_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
# Leaves of `results` that are measurements: regressions compare them, so each must be a real number.
MEASUREMENTS = {"ips", "batch", "steps", "mean", "p50", "p90", "p95", "p99", "loss_first", "loss_last", "world_size",
                "flops_per_sample", "achieved_tflops", "peak_tflops", "paddle_peak_tflops", "efficiency",
                "efficiency_paddle", "mfu", "gemm_flops", "conv_flops",
                "peak_flops", "bs8_over_bs1", "top1", "top5", "reference_ips", "scaling_efficiency", "data_checksum"}
# What produced a figure: results.infer.<backend>.<precision>.bsN.engine is "<engine> <precision>" with one of
# these engines (benchmarks/harness/paddle_engines.py, inference.py), e.g. "paddle-trt-pir fp16".
ENGINES = ("paddle-trt-pir", "paddle-trt-legacy", "paddle-inference gpu", "paddle-inference onednn",
           "onnxruntime", "tensorrt-python")
EFFICIENCIES = {"efficiency", "efficiency_paddle"}  # never above 1.0: such a figure is a probe failure, not a result
# A figure's count of probes taken after its phase because the work had outrun the probes beside it
# (benchmarks/harness/peaks.Peaks.recheck): its efficiencies rest on a peak not measured beside the work.
PEAK_RECHECKED = "peak_rechecked"
TRAIN_PRECISIONS = ("fp32", "tf32", "amp", "amp-o2", "bf16")  # results.train.<precision> (and the --precision choices)
INFER_PRECISIONS = ("fp32", "fp16", "int8")  # results.infer.<backend>.<precision>.bsN
BATCH_RE = re.compile(r"bs[1-9][0-9]{0,5}")
# What the harness writes, where it knows every name: a baseline with any other name there (a renamed
# efficiency, latency_ms or percentile, peak dtype or back end) would be compared on nothing, without a word.
# results.infer.<backend> (benchmarks/*/spec.py backends_cpu/gpu, checked by tests/unit/test_bench_harness.py)
INFER_BACKENDS = ("paddle-inference", "paddle-trt", "tensorrt", "onnxruntime")
PEAK_DTYPES = ("float32", "float16", "bfloat16")  # results.peak.<dtype> (harness/efficiency.probe_dtype)
LATENCY_KEYS = ("mean", "p50", "p90", "p95", "p99")  # figures' latency_ms (harness/timing.Timing.latency_ms)
# Every name a figure (results.train.<precision>, results.infer.<backend>.<precision>.bsN) may carry: the
# timing summary, training's losses and schedule, the engine of an inference figure, efficiency.annotate's.
FIGURE_KEYS = frozenset({
    "ips", "batch", "steps", "latency_ms",  # timing.Timing.summary
    "loss_first", "loss_last", "loss_finite", "losses", "world_size", "lr_peak", "lr_warmup_steps",
    "lr_total_steps", "lr_last", "input",  # training.train, runner.train_all
    "engine", "timed", "layer_precisions",  # inference.py
    "flops_per_sample", "achieved_tflops", "peak_tflops", "paddle_peak_tflops", "mfu", PEAK_RECHECKED,  # annotate
    *EFFICIENCIES, *(f"{name}_failure" for name in EFFICIENCIES)})
# results.data_parallel.<precision> of a run of several processes (benchmarks/harness/data_parallel.summary): the ranks'
# own figures, the sum of their img/s ("ips"), and, where the one-process reference ran in the same job, its img/s and
# the scaling efficiency (the sum over the reference x the ranks). Each rank: own_figures.
DATA_PARALLEL_KEYS = frozenset({"procs", "nodes", "ranks", "ips", "reference_ips", "scaling_efficiency"})
RANK_KEYS = frozenset({"rank", "node", "node_rank", "shard", "ips", "steps", "lr_peak", "data_checksum",
                       "param_checksums"})
MAX_RESULTS_DEPTH = 8  # results.infer.<backend>.<precision>.bsN.latency_ms.p99 is 6 levels


def is_efficiency(metric: str) -> bool:
    """Does a metric path (train.fp32.efficiency_paddle) name an efficiency, a ratio measured in the same run?"""
    return metric.rsplit(".", 1)[-1] in EFFICIENCIES

# INTERRUPTED: stopped by SIGTERM/SIGINT (ngc_common.stop); its figures are those of the phases that finished.
VERDICTS = Literal["PASS", "FAIL", "NOT PROVEN", "SMOKE", "INTERRUPTED"]

Short = Annotated[str, Field(max_length=200)]
Text = Annotated[str, Field(max_length=5000)]
Count = Annotated[int, Field(ge=0, le=1_000_000)]



class Recipe(Strict):
    """The training recipe a run used (benchmarks/harness/recipes.py, after the command line)."""

    source: Text
    lr: FiniteFloat
    lr_batch: Count
    lr_schedule: Literal["cosine", "step"]
    lr_warmup_epochs: FiniteFloat
    epochs: Count
    momentum: FiniteFloat
    weight_decay: FiniteFloat
    label_smoothing: FiniteFloat


class Config(Strict):
    """record.run_config, plus each ModelSpec's recorded options (rn50: zero_init_residual; hgnet: model, ssld)."""

    benchmark: Short
    mode: Literal["train", "infer", "all"]
    device: Literal["cpu", "gpu"]
    gpus: Count
    threads: Count
    threads_from: Text
    smoke: bool
    batch_size: Count | None
    image_size: Count | None
    infer_image_size: Count | None
    data_format: Literal["NCHW", "NHWC"] | None
    data: Text
    loader: Short
    steps: Count | None
    warmup: Count | None
    asp: bool
    precisions: list[Short] | None
    infer_precisions: list[Short] | None
    backends: list[Short] | None
    batch_sizes: list[Count] | None
    bn_weight_decay: bool
    zero_init_residual: bool | None = None
    model: Short | None = None
    ssld: bool | None = None
    eval: bool | None = None
    cpu_kind: Short | None = None  # absent in results written before CPU floors were kept per CPU kind
    recipe: Recipe | None = None  # absent in results written before the recipes were recorded
    procs: Count | None = None  # data-parallel processes per node (absent in results written before --procs)
    nnodes: Count | None = None


class Gpu(Strict):
    name: Short
    memory: Short
    driver: Short


class Environment(Strict):
    """record.run_environment: environment.capture(), plus the threads and the hardware key."""

    cpu: Text
    cpu_cores: Count | None
    cpu_budget: Text
    gpus: list[Gpu]
    python: Short
    release: Short | None
    flavor: Short | None
    versions: dict[Short, Short]
    threads: Count
    threads_from: Text
    hardware: Text | None = None
    emulated: Text | None = None  # ngc_common.emulation: why the run's figures prove nothing (qemu-user)


class GateVerdict(Strict):
    """gates.Verdict.as_dict()."""

    gate: Text
    metric: Text
    status: Literal["PASS", "FAIL", "NOT RUN", "N/A", "NOT PROVEN"]
    measured: FiniteFloat | None
    threshold: FiniteFloat | None
    op: Literal[">=", "<=", ""]
    profile: Short
    source: Text
    reason: Text
    acceptance: bool


class ResultFile(Strict):
    """report.write's summary."""

    model: Short
    config: Config
    environment: Environment
    results: dict[Literal["train", "infer", "peak", "eval", "data_parallel"], dict[Short, JsonValue]]
    gates: list[GateVerdict]
    verdict: VERDICTS
    verdict_reasons: list[Text]
    passed: bool


def _measurement_problem(results: dict[str, Any]) -> tuple[str, str] | None:
    """(field, what is wrong) for the first key that is not a plain word or measurement that is not a number."""
    stack: list[tuple[str, Any]] = [("results", results)]
    while stack:
        where, node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            at = f"{where}.{key}"
            if isinstance(key, str) and not KEY_RE.fullmatch(key):
                return where, f"key {key[:60]!r} is not a word of letters, digits, '.', '_' and '-'"
            if key in MEASUREMENTS and (isinstance(value, bool) or not isinstance(value, int | float)):
                shown = repr(value)
                return at, f"a measurement must be a number, not {shown if len(shown) <= 60 else shown[:60] + '...'}"
            if key == "engine" and not (isinstance(value, str) and value.startswith(ENGINES) and len(value) <= 200):
                return at, f"names no engine this suite runs ({', '.join(ENGINES)}): {str(value)[:60]!r}"
            if isinstance(value, float) and not math.isfinite(value):  # 1e400 parses as inf
                return at, f"{value} is not a finite number"
            if key in EFFICIENCIES and value > 1.0:
                return at, f"an efficiency of {value:.4g} is above 1.0: a probe failure, never a figure"
            stack.append((at, value))
    return None


def _depth(node: Any) -> int:
    """How many levels of mappings and lists `node` holds (iterative: bounded_read already capped it at 64)."""
    deepest, stack = 0, [(node, 0)]
    while stack:
        value, level = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is not None:
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in children)
    return deepest


def _unknown(where: str, keys: Any, known: Iterable[str], what: str) -> tuple[str, str] | None:
    """(field, what is wrong) for the first key of `keys` that the harness never writes there."""
    known = tuple(known)
    unknown = next((key for key in keys if key not in known), None)
    if unknown is None:
        return None
    return f"{where}.{unknown}"[:200], f"is not {what} the harness writes ({', '.join(sorted(known))[:300]})"


def _figures_problem(where: str, figures: Any) -> tuple[str, str] | None:
    if not isinstance(figures, dict):
        return where, f"must be a mapping of figures, not a {type(figures).__name__}"
    if "ips" not in figures:
        return where, "has no 'ips' (renamed or missing): the throughput the regression gate compares"
    if problem := _unknown(where, figures, FIGURE_KEYS, "a figure"):
        return problem
    latency = figures.get("latency_ms")
    if not isinstance(latency, dict) or set(latency) != set(LATENCY_KEYS):
        if isinstance(latency, dict) and (problem := _unknown(f"{where}.latency_ms", latency, LATENCY_KEYS,
                                                               "a latency figure")):
            return problem
        return f"{where}.latency_ms", f"must map each of {', '.join(LATENCY_KEYS)} to milliseconds (renamed or missing)"
    for name in EFFICIENCIES:  # annotate writes the peak beside the efficiency, or why there is no figure
        peak = "peak_tflops" if name == "efficiency" else "paddle_peak_tflops"
        if peak in figures and name not in figures and f"{name}_failure" not in figures:
            return f"{where}.{name}", f"is missing beside {peak} (renamed?): the figure the regression gate compares"
    return None


def _data_parallel_problem(where: str, figures: Any) -> tuple[str, str] | None:
    if not isinstance(figures, dict) or not isinstance(figures.get("ranks"), list) or "ips" not in figures:
        return where, "must hold the ranks' figures and their sum 'ips' (renamed or missing)"
    if problem := _unknown(where, figures, DATA_PARALLEL_KEYS, "a data-parallel figure"):
        return problem
    for i, rank in enumerate(figures["ranks"]):
        if not isinstance(rank, dict) or "ips" not in rank:
            return f"{where}.ranks.{i}", "must be a rank's figures with its 'ips'"
        if problem := _unknown(f"{where}.ranks.{i}", rank, RANK_KEYS, "a rank's figure"):
            return problem
    return None


def _shape_problem(results: dict[str, Any]) -> tuple[str, str] | None:
    """(field, what is wrong) where `results` is not the harness's shape: a renamed precision, batch or `ips` key
    would make the regression gate compare nothing without a word, and deep nesting is no figure at all."""
    if _depth(results) > MAX_RESULTS_DEPTH:
        return "results", f"nests deeper than {MAX_RESULTS_DEPTH} levels (a result nests 6)"
    peaks = results.get("peak", {})
    if problem := _unknown("results.peak", peaks, PEAK_DTYPES, "a dtype whose peak"):
        return problem
    for dtype, entry in peaks.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("peak_flops"), int | float):
            return f"results.peak.{dtype}.peak_flops", "is missing (renamed?): the peak that tells the load apart"
    for precision, figures in results.get("train", {}).items():
        where = f"results.train.{precision}"
        if precision == "summary":
            continue
        if precision not in TRAIN_PRECISIONS:
            return where, f"{precision[:40]!r} is not a training precision ({', '.join(TRAIN_PRECISIONS)})"
        if problem := _figures_problem(where, figures):
            return problem
    for precision, figures in results.get("data_parallel", {}).items():
        if problem := _data_parallel_problem(f"results.data_parallel.{precision}"[:200], figures):
            return problem
    for backend, by_precision in results.get("infer", {}).items():
        if backend in ("summary", "agreement"):
            continue
        if backend not in INFER_BACKENDS:
            return f"results.infer.{backend}"[:200], (f"{backend[:40]!r} is not an inference back end "
                                                       f"({', '.join(INFER_BACKENDS)})")
        if not isinstance(by_precision, dict):
            return f"results.infer.{backend}", "must be a mapping of precisions"
        for precision, by_batch in by_precision.items():
            where = f"results.infer.{backend}.{precision}"
            if precision not in INFER_PRECISIONS:
                return where, f"{precision[:40]!r} is not an inference precision ({', '.join(INFER_PRECISIONS)})"
            if not isinstance(by_batch, dict):
                return where, "must be a mapping of batch sizes (bsN)"
            if "status" in by_batch:  # {"status": "not available", "reason": ...}
                continue
            for batch, figures in by_batch.items():
                if not BATCH_RE.fullmatch(batch):
                    return f"{where}.{batch}", f"{batch[:40]!r} is not a batch size (bs1, bs8...)"
                if problem := _figures_problem(f"{where}.{batch}", figures):
                    return problem
    return None


def parse(path: Path, data: Any, fix: str = FIX, error: type[OneLineError] = InputError) -> ResultFile:
    """`data` (read from `path`) as a result.json; `error` in one line naming the field (ending in `fix`) otherwise."""
    if not isinstance(data, dict):
        raise error(line(path, "(top level)", f"a result.json is a mapping, not a {type(data).__name__}", fix))
    try:
        result = ResultFile.model_validate(data)
    except ValidationError as exc:
        raise error(one_line(path, exc, fix, written=True)) from None
    problem = _measurement_problem(data["results"])
    if problem is None and result.passed != (result.verdict in ("PASS", "SMOKE")):
        problem = "passed", f"is {result.passed} but the verdict is {result.verdict}"
    if problem:
        raise error(line(path, problem[0], problem[1], fix))
    return result


def read(path: Path, fix: str, error: type[OneLineError] = InputError) -> ResultFile:
    """The result at `path` (the release pipeline's stored runs); `error` (one line ending in `fix`) otherwise."""
    try:
        data = bounded_read.load_json(path, error, MAX_RESULT_BYTES)
    except OneLineError as exc:  # same line, with the caller's fix
        raise error(f"{str(exc).rsplit('; fix: ', 1)[0]}; fix: {fix}") from None
    return parse(path, data, fix, error)


def read_results(path: Path, error: type[OneLineError] = InputError) -> dict[str, Any]:
    """The result.json at `path` of any release's harness (an A/B round's: the reference may be another release,
    whose other fields this schema need not know): the file as a mapping whose `results` is a mapping of finite
    numbers (1e400 parses as inf, which no ratio survives); `error` in one line naming the field otherwise."""
    fix = "rerun the round (a result.json the harness wrote holds only finite numbers)"
    data = bounded_read.load_json(path, error, MAX_RESULT_BYTES)
    if not (isinstance(data, dict) and isinstance(data.get("results"), dict)):
        raise error(line(path, "results", "is missing or not a mapping", fix))
    stack: list[tuple[str, Any]] = [("results", data["results"])]
    while stack:
        where, node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            raise error(line(path, where[:200], f"{node} is not a finite number", fix))
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        stack.extend((f"{where}.{key}", value) for key, value in items)
    return data


def read_baseline(path: Path, benchmark: str, fix: str = FIX, error: type[OneLineError] = InputError) -> dict[str, Any]:
    """A previous result.json of `benchmark` to gate regressions against, as the plain mapping gates.regressions
    reads; a file that is not one (or a --smoke run, or another benchmark's) raises `error`. The one reader of a
    baseline: the benchmark's --baseline and the release's pick of the previous release's stored run."""
    try:
        data = bounded_read.load_json(path, error, MAX_RESULT_BYTES)  # the reader's own fix: check the path...
    except OneLineError as exc:
        if fix == FIX:
            raise
        raise error(f"{str(exc).rsplit('; fix: ', 1)[0]}; fix: {fix}") from None
    result = parse(path, data, fix, error)
    problem = _shape_problem(data["results"])
    if problem:
        raise error(line(path, problem[0], problem[1], fix))
    if result.model != benchmark or result.config.benchmark != benchmark:
        raise error(line(path, "model", f"a result of bench-{result.model[:40]!r}, not of bench-{benchmark}: "
                         "their figures are not comparable", fix))
    if result.verdict == "INTERRUPTED":
        raise error(line(path, "verdict", "an interrupted run (stopped by a signal): its figures are partial, "
                         "no baseline", fix))
    if result.verdict == "SMOKE" or result.config.smoke:
        raise error(line(path, "config.smoke", "a --smoke run (one tiny step): its figures are no baseline", fix))
    return data
