"""The run loop of one benchmark: train each precision, then infer each back end, then gate and report.

Why: both models run the same loop; what differs (the model, its back ends, extra results such as
accuracy) comes from their ModelSpec. Each phase is interleaved with peak probes (peaks.Peaks) and its
figures annotated with efficiency; the defaults come from hardware, the verdict from gates, the
files from report. Output ends with the figures and the verdict, nothing after. A SIGTERM or SIGINT
(ngc_common.stop, installed by cli.main) writes the run's folder's report with the verdict INTERRUPTED and
the figures of the phases that finished.
"""

import contextlib
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    acceptance_gates,
    data_parallel,
    efficiency,
    environment,
    evaluation,
    launch,
    record,
    report,
    roofline,
)
from benchmarks.harness.dllogger import DLLogger
from benchmarks.harness.hardware import gpu_image_without_gpu, use_device
from benchmarks.harness.model_spec import ModelSpec
from benchmarks.harness.peaks import Peaks
from benchmarks.harness.recipes import IMAGENET_TRAIN_IMAGES
from benchmarks.harness.run_config import RunConfig
from ngc_common import stop

INFERENCE_STARTED = "inference"  # the step of the line that opens the inference phase, before its model is built
FINISH_WAIT_S = 5.0  # a stop while the complete report is written waits this long for it (within stop.GRACE_S)


@dataclass(frozen=True)
class Inputs:
    """The files cli.main read and checked before Paddle loaded: the gates table and a --baseline."""

    gates_table: dict
    baseline: dict[str, Any] | None


SMOKE_IMAGES = {"classes": 2, "per_class": 4, "size": (96, 128)}  # --smoke's generated JPEGs (DALI's input)


def smoke_images(config: RunConfig, folder: str) -> str | None:
    """--smoke without --data in an image that ships DALI: a few generated JPEGs in `folder`, so the smoke run
    goes through the DALI pipeline as a real run does (CPU operators without a GPU, "mixed" decoding with one);
    None otherwise (synthetic tensors)."""
    if not config.smoke or config.data or config.loader != "dali" or "dali" not in environment.shipped():
        return None
    from benchmarks.harness import data

    return data.make_image_folder(folder, **SMOKE_IMAGES)


def _batches(config: RunConfig, shard: tuple[int, int], folder: str | None = None):
    from benchmarks.harness import data

    root = config.data or folder
    if root and config.loader == "dali":
        return data.dali(root, config.batch_size, config.image_size, config.data_format, gpu=config.gpu,
                         seed=config.seed, shard=shard)
    if root:
        return data.paddle_loader(root, config.batch_size, config.image_size, config.data_format)
    return data.synthetic(config.batch_size, config.image_size, config.num_classes, config.data_format,
                          config.seed + shard[0])  # each rank its own shard of synthetic batches


def train_config(config: RunConfig, spec: ModelSpec, precision: str, train_images: int):
    """One precision's TrainConfig: the run's options and the model's recipe."""
    from benchmarks.harness.training import TrainConfig

    return TrainConfig(batch_size=config.batch_size, image_size=config.image_size, steps=config.steps,
                       warmup=config.warmup, precision=precision, data_format=config.data_format,
                       num_classes=config.num_classes, lr=config.lr, lr_batch=spec.recipe.lr_batch,
                       lr_schedule=config.lr_schedule, lr_warmup_epochs=config.lr_warmup_epochs, epochs=config.epochs,
                       train_images=train_images, momentum=config.momentum, weight_decay=config.weight_decay,
                       label_smoothing=config.label_smoothing, bn_weight_decay=config.bn_weight_decay,
                       asp=config.asp, device=config.device, checkpoint_dir=config.checkpoint_dir,
                       resume=config.resume, seed=config.seed)


def train_all(config: RunConfig, spec: ModelSpec, build: Callable, logger: DLLogger, peaks: Peaks, table: dict,
              gpu_profile: str | None, shard: tuple[int, int]) -> tuple[dict, dict, dict]:
    with contextlib.ExitStack() as stack:  # the generated smoke images outlive every pipeline reading them
        return _train_all(stack, config, spec, build, logger, peaks, table, gpu_profile, shard)


def _train_all(stack: contextlib.ExitStack, config: RunConfig, spec: ModelSpec, build: Callable, logger: DLLogger,
               peaks: Peaks, table: dict, gpu_profile: str | None, shard: tuple[int, int]) -> tuple[dict, dict, dict]:
    """The training phase: each precision asked for, on this process's shard of the data; then (rank 0, where
    the model evaluates what it trained) the eval pass on --eval-data or a synthetic smoke one.
    Returns (train results, eval results by precision, data-parallel figures by precision: data_parallel.summary)."""
    from benchmarks.harness import data
    from benchmarks.harness.training import train

    out: dict = {}
    evals: dict = {}
    dp: dict = {}
    images = data.count_images(config.data) if config.data else IMAGENET_TRAIN_IMAGES
    evaluate = evaluation.for_run(config) if spec.evaluates_training and shard[0] == 0 else None
    train_flops = efficiency.TRAIN_FLOPS_FACTOR * efficiency.forward_flops(build, config.num_classes,
                                                                           config.image_size)
    smoke_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="ngc-smoke-images-"))
    folder = smoke_images(config, smoke_dir)
    source = f"dali {'mixed' if config.gpu else 'cpu'} pipeline" if (config.data or folder) and \
        config.loader == "dali" else config.loader if config.data else "synthetic"
    if folder:
        logger.log("input", {"loader": source, "images": data.count_images(folder), "generated": 1})
    for precision in config.precision:
        batches = stack.enter_context(contextlib.closing(_batches(config, shard, folder)))
        dtype, label = efficiency.probe_dtype(precision), f"train {precision}"
        with peaks.around(dtype, label, logger.log) as peak:
            result = train(build, batches, train_config(config, spec, precision, images), logger.log)
        peaks.recheck(peak, dtype, label, logger.log,
                      [(result["ips"] * train_flops, roofline.own_kind("train", config.device))])
        result["input"] = source + (" (generated JPEGs)" if folder else "")
        if evaluate is not None:
            evals[precision] = evaluate(result["predict"])
            logger.log(f"eval {precision}", {k: v for k, v in evals[precision].items() if k in ("top1", "top5")})
        result.pop("predict")
        if "shard" in result:  # a collective: every rank gathers, rank 0 reports
            ranks = data_parallel.gather(data_parallel.own_figures(*shard, result, **result.pop("shard")))
            dp[precision] = data_parallel.summary(ranks, launch.reference().get(precision))
        losses = [round(v, 5) for v in result.pop("losses")]
        sheet = acceptance_gates.datasheet_tflops(table, gpu_profile, precision)
        out[precision] = efficiency.annotate(result, train_flops, peak or None, sheet and sheet * result["world_size"],
                                             roofline.own_kind("train", config.device))
        out[precision]["losses"] = losses
    out["summary"] = {"loss_finite": 1 if all(r["loss_finite"] for r in out.values()) else 0}
    return out, evals, dp


def _infer_dtype(precision: str) -> str | None:
    """The dtype whose peaks an inference precision is measured against; None for int8 (no probe)."""
    return None if precision == "int8" else "float16" if precision == "fp16" else "float32"


def infer_all(config: RunConfig, build: Callable, logger: DLLogger, peaks: Peaks, table: dict,
              gpu_profile: str | None) -> dict:
    """The inference phase: each back end x precision x batch size asked for, on rank 0's device."""
    from benchmarks.harness import quantization
    from benchmarks.harness.inference import run_all

    warmup = max(1 if config.smoke else 2, config.infer_iters // 4)
    logger.log(INFERENCE_STARTED, {"backends": list(config.backends), "precisions": list(config.infer_precision),
                                   "batch_sizes": list(config.batch_sizes), "warmup_iters": warmup,
                                   "iters": config.infer_iters})  # progress: the sweep's first figure comes later
    model = build(config.num_classes, config.data_format)
    wanted = sorted({dtype for p in config.infer_precision if (dtype := _infer_dtype(p))})
    with contextlib.ExitStack() as stack:
        bracket = {dtype: stack.enter_context(peaks.around(dtype, "inference", logger.log, devices=1))
                   for dtype in wanted}  # inference runs on rank 0's device alone
        infer = run_all(model, list(config.backends), list(config.infer_precision), list(config.batch_sizes),
                        config.infer_image_size, config.data_format, config.device,
                        warmup, config.infer_iters, logger.log,
                        threads=config.threads,
                        calibration=quantization.calibration_source(config.data or config.eval_data,
                                                                    config.infer_image_size, config.data_format,
                                                                    config.gpu, config.seed))
    flops = efficiency.forward_flops(build, config.num_classes, config.infer_image_size)
    measured = [(backend, precision, by_batch) for backend, by_precision in infer.items() if backend != "agreement"
                for precision, by_batch in by_precision.items() if "status" not in by_batch]
    for dtype, peak in bracket.items():
        peaks.recheck(peak, dtype, "inference", logger.log,
                      [(result["ips"] * flops, roofline.own_kind(backend, config.device))
                       for backend, precision, by_batch in measured if _infer_dtype(precision) == dtype
                       for result in by_batch.values()])
    for backend, precision, by_batch in measured:
        dtype = _infer_dtype(precision)
        peak = bracket[dtype] or None if dtype else None  # int8 has no probed peak
        sheet = acceptance_gates.datasheet_tflops(table, gpu_profile, precision)
        for result in by_batch.values():
            efficiency.annotate(result, flops, peak, sheet, roofline.own_kind(backend, config.device))
    pi = infer.get("paddle-inference", {}).get(config.infer_precision[0], {})
    if "bs1" in pi and "bs8" in pi:
        infer["summary"] = {"bs8_over_bs1": pi["bs8"]["ips"] / pi["bs1"]["ips"]}
    return infer


def run(config: RunConfig, spec: ModelSpec, inputs: Inputs) -> int:
    """One resolved run (run_config.resolve); its exit code (0, 1 or 3)."""
    use_device(config)
    rank, world, config = launch.join(config)
    table = inputs.gates_table  # read and checked by cli.main before Paddle loaded
    out = report.run_folder(Path(config.output), spec.name) if rank == 0 else None
    logger = DLLogger(out / "dllogger.jsonl" if out else None, echo=sys.stdout if rank == 0 else None)
    recorded = record.run_config(config, spec)
    env = record.run_environment(config)
    profile = config.profile or acceptance_gates.detect_profile(table, record.gpu_names(config.device, env))
    results: dict = {}  # each phase's figures once it has finished (what a stop reports)
    logger.metadata("config", recorded)
    logger.metadata("environment", env)
    title = f"{spec.title} ({config.device})"
    progress = _Progress()
    if out is not None:
        progress.report_on_stop(out, spec.name, title, recorded, env, results, logger)

    missing = gpu_image_without_gpu(config, environment.image_manifest())
    if missing and not config.gpus_given and not config.smoke:  # nothing to prove here; --gpus 0 runs the CPU path
        outcome = acceptance_gates.Outcome("NOT PROVEN", [missing])
        progress.finishing = True
        code = report.finish(out, spec, title, recorded, env, {}, [], outcome, profile, logger)
        progress.written.set()
        return code
    if not _measure(config, spec, logger, table, profile, (rank, world), results, progress, env.get("emulated")):
        return 0
    recorded["eval"] = evaluation.gated(config, results)

    verdicts, outcome = acceptance_gates.judge(table, spec.name, profile, results, recorded, inputs.baseline,
                                    config.max_regression, env["hardware"], missing, env.get("emulated"))
    progress.finishing = True
    code = report.finish(out, spec, title, recorded, env, results, verdicts, outcome, profile, logger)
    progress.written.set()
    return code


@dataclass
class _Progress:
    """Where a run is, for a stop: the phase now, whether the complete report is being written, and when it is on
    disk (a stop then waits for it rather than replace it with a partial one)."""

    now: str = "start-up"
    finishing: bool = False
    written: threading.Event = field(default_factory=threading.Event)

    def report_on_stop(self, out: Path, name: str, title: str, recorded: dict, env: dict, results: dict,
                       logger: DLLogger) -> None:
        """A stop (SIGTERM, SIGINT) writes the figures of the phases that finished, as an INTERRUPTED report."""
        def on_stop(signal_name: str) -> str:
            if self.finishing:  # the complete report is being written: let it finish, never replace it
                self.written.wait(FINISH_WAIT_S)
                return f"the run had finished: {out}/result.json"
            during = self.now + (f" (last logged: {logger.last_step})" if logger.last_step else "")
            path = report.interrupted(out, name, title, recorded, env, results, signal_name, during)
            return f"partial results: {path}"

        stop.set_on_stop(on_stop)


def _measure(config: RunConfig, spec: ModelSpec, logger: DLLogger, table: dict, profile: str,
             ranks: tuple[int, int], results: dict, progress: _Progress, emulated: str | None = None) -> bool:
    """The phases in order (training, inference, the model's extra results, the peaks), each in `results` once it
    has finished; False on a rank other than 0, whose part ends with training. `emulated`: why no peak is probed."""
    def build(num_classes: int, data_format: str):
        return spec.build(config, num_classes, data_format)

    rank, world = ranks
    peaks = Peaks(config.device, world, 1 if config.smoke else efficiency.PROBE_REPEATS, config.threads,
                  skip=f"not probed: {emulated}" if emulated else None)
    gpu_profile = profile if config.gpu else None  # MFU: a GPU's data sheet, never a CPU run's
    if config.mode in ("train", "all"):
        progress.now = "training"
        results["train"], evals, dp = train_all(config, spec, build, logger, peaks, table, gpu_profile, ranks)
        if evals:
            results["eval"] = evals
        if dp:
            results["data_parallel"] = dp
    if rank != 0:
        return False
    if config.mode in ("infer", "all"):
        progress.now = "inference"
        results["infer"] = infer_all(config, build, logger, peaks, table, gpu_profile)
    progress.now = "the extra results (evaluation)"
    results.update(spec.extra_results(config))
    results["peak"] = dict(peaks.found)
    return True
