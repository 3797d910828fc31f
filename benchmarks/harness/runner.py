"""The run loop of one benchmark: train each precision, then infer each back end, then gate and report.

Why: both models run the same loop; what differs (the model, its back ends, extra results such as
accuracy) comes from their ModelSpec. Each phase is interleaved with peak probes (peaks.Peaks) and its
figures annotated with efficiency; the defaults come from hardware, the verdict from gates, the
files from report. Output ends with the figures and the verdict, nothing after. A SIGTERM or SIGINT
(ngc_common.stop, installed by cli.main) writes the run's folder's report with the verdict INTERRUPTED and
the figures of the phases that finished.
"""

import argparse
import contextlib
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from benchmarks.harness import efficiency, environment, gates, launch, record, report, roofline
from benchmarks.harness.dllogger import DLLogger
from benchmarks.harness.hardware import gpu_image_without_gpu, use_device
from benchmarks.harness.peaks import Peaks
from benchmarks.harness.spec import ModelSpec
from ngc_common import stop

FINISH_WAIT_S = 5.0  # a stop while the complete report is written waits this long for it (within stop.GRACE_S)


def _batches(args: argparse.Namespace, shard: tuple[int, int]):
    from benchmarks.harness import data

    if args.data and args.loader == "dali":
        return data.dali(args.data, args.batch_size, args.image_size, args.data_format, gpu=args.device == "gpu",
                         seed=args.seed, shard=shard)
    if args.data:
        return data.paddle_loader(args.data, args.batch_size, args.image_size, args.data_format)
    return data.synthetic(args.batch_size, args.image_size, args.num_classes, args.data_format, args.seed)


def train_all(args: argparse.Namespace, build: Callable, logger: DLLogger, peaks: Peaks, table: dict,
              gpu_profile: str | None, shard: tuple[int, int]) -> dict:
    """The training phase: each precision asked for, on this process's shard of the data."""
    from benchmarks.harness.training import TrainConfig, train

    out: dict = {}
    train_flops = efficiency.TRAIN_FLOPS_FACTOR * efficiency.forward_flops(build, args.num_classes, args.image_size)
    for precision in args.precision:
        cfg = TrainConfig(batch_size=args.batch_size, image_size=args.image_size, steps=args.steps,
                          warmup=args.warmup, precision=precision, data_format=args.data_format,
                          num_classes=args.num_classes, lr=args.lr, lr_schedule=args.lr_schedule,
                          bn_weight_decay=args.bn_weight_decay, asp=args.asp, device=args.device,
                          checkpoint_dir=args.checkpoint_dir, resume=args.resume, seed=args.seed)
        with peaks.around(efficiency.probe_dtype(precision), f"train {precision}", logger.log) as peak:
            result = train(build, _batches(args, shard), cfg, logger.log)
        losses = [round(v, 5) for v in result.pop("losses")]
        sheet = gates.datasheet_tflops(table, gpu_profile, precision)
        out[precision] = efficiency.annotate(result, train_flops, peak or None, sheet and sheet * result["world_size"],
                                             roofline.own_kind("train", args.device))
        out[precision]["losses"] = losses
    out["summary"] = {"loss_finite": 1 if all(r["loss_finite"] for r in out.values()) else 0}
    return out


def infer_all(args: argparse.Namespace, build: Callable, logger: DLLogger, peaks: Peaks, table: dict,
              gpu_profile: str | None) -> dict:
    """The inference phase: each back end x precision x batch size asked for, on rank 0's device."""
    from benchmarks.harness.inference import run_all

    model = build(args.num_classes, args.data_format)
    wanted = sorted({"float16" if p == "fp16" else "float32" for p in args.infer_precision if p != "int8"})
    with contextlib.ExitStack() as stack:
        bracket = {dtype: stack.enter_context(peaks.around(dtype, "inference", logger.log, devices=1))
                   for dtype in wanted}  # inference runs on rank 0's device alone
        infer = run_all(model, args.backends, args.infer_precision, args.batch_sizes, args.infer_image_size,
                        args.data_format, args.device, max(1 if args.smoke else 2, args.infer_iters // 4),
                        args.infer_iters, logger.log, threads=args.threads)
    flops = efficiency.forward_flops(build, args.num_classes, args.infer_image_size)
    for backend, by_precision in infer.items():
        if backend == "agreement":
            continue
        for precision, by_batch in by_precision.items():
            if "status" in by_batch:
                continue
            peak = None if precision == "int8" else bracket["float16" if precision == "fp16" else "float32"] or None
            sheet = gates.datasheet_tflops(table, gpu_profile, precision)
            for result in by_batch.values():
                efficiency.annotate(result, flops, peak, sheet, roofline.own_kind(backend, args.device))
    pi = infer.get("paddle-inference", {}).get(args.infer_precision[0], {})
    if "bs1" in pi and "bs8" in pi:
        infer["summary"] = {"bs8_over_bs1": pi["bs8"]["ips"] / pi["bs1"]["ips"]}
    return infer


def run(args: argparse.Namespace, spec: ModelSpec) -> int:
    """One run with the defaults already filled in (hardware.resolve); its exit code (0, 1 or 3)."""
    use_device(args)
    rank, world = launch.join(args)
    table = args.gates_table  # read and checked by cli.main before Paddle loaded
    out = report.run_folder(Path(args.output), spec.name) if rank == 0 else None
    logger = DLLogger(out / "dllogger.jsonl" if out else None, echo=sys.stdout if rank == 0 else None)
    config = record.run_config(args, spec)
    env = record.run_environment(args, config["gpus"])
    profile = args.profile or gates.detect_profile(table, record.gpu_names(args.device, env))
    results: dict = {}  # each phase's figures once it has finished (what a stop reports)
    logger.metadata("config", config)
    logger.metadata("environment", env)
    title = f"{spec.title} ({args.device})"
    phase = {"now": "start-up", "finishing": False}
    written = threading.Event()  # the complete report is on disk
    if out is not None:
        def on_stop(signal_name: str) -> str:
            if phase["finishing"]:  # the complete report is being written: let it finish, never replace it
                written.wait(FINISH_WAIT_S)
                return f"the run had finished: {out}/result.json"
            during = phase["now"] + (f" (last logged: {logger.last_step})" if logger.last_step else "")
            path = report.interrupted(out, spec.name, title, config, env, results, signal_name, during)
            return f"partial results: {path}"

        stop.set_on_stop(on_stop)

    missing = gpu_image_without_gpu(args, environment.image_manifest())
    if missing and not args.gpus_given and not args.smoke:  # nothing to prove here; --gpus 0 runs the CPU path
        outcome = gates.Outcome("NOT PROVEN", [missing])
        phase["finishing"] = True
        code = report.finish(out, spec, title, config, env, {}, [], outcome, profile, logger)
        written.set()
        return code

    def build(num_classes: int, data_format: str):
        return spec.build(args, num_classes, data_format)

    peaks = Peaks(args.device, world, 1 if args.smoke else efficiency.PROBE_REPEATS, args.threads)
    gpu_profile = profile if args.device == "gpu" else None  # MFU: a GPU's data sheet, never a CPU run's
    if args.mode in ("train", "all"):
        phase["now"] = "training"
        results["train"] = train_all(args, build, logger, peaks, table, gpu_profile, (rank, world))
    if rank != 0:
        return 0
    if args.mode in ("infer", "all"):
        phase["now"] = "inference"
        results["infer"] = infer_all(args, build, logger, peaks, table, gpu_profile)
    phase["now"] = "the extra results (evaluation)"
    results.update(spec.extra_results(args))
    results["peak"] = dict(peaks.found)
    config["eval"] = "eval" in results

    verdicts, outcome = gates.judge(table, spec.name, profile, results, config, args.baseline_data,
                                    args.max_regression, env["hardware"], missing)
    phase["finishing"] = True
    code = report.finish(out, spec, title, config, env, results, verdicts, outcome, profile, logger)
    written.set()
    return code
