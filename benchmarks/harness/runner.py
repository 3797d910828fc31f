"""One benchmark run: train and infer as configured, probe the peak, gate the figures, write the report.

Why: both models run the same loop; what differs (the model, its back ends, extra results such as
accuracy) comes from their ModelSpec. Output ends with the figures and the verdict, nothing after.
"""

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from benchmarks.harness import efficiency, environment, gates, report
from benchmarks.harness.dllogger import DLLogger
from benchmarks.harness.hardware import gpu_image_without_gpu, hardware_key
from benchmarks.harness.spec import ModelSpec


def run_config(args: argparse.Namespace, spec: ModelSpec) -> dict:
    return {"benchmark": spec.name, "mode": args.mode, "device": args.device, "gpus": max(args.gpus, 0),
            "threads": args.threads, "threads_from": args.threads_from, "smoke": args.smoke,
            "batch_size": args.batch_size, "image_size": args.image_size,
            "infer_image_size": args.infer_image_size, "data_format": args.data_format,
            "data": args.data or "synthetic", "loader": args.loader if args.data else "synthetic",
            "steps": args.steps, "warmup": args.warmup, "asp": args.asp, "precisions": args.precision,
            "infer_precisions": args.infer_precision, "backends": args.backends, "batch_sizes": args.batch_sizes,
            "bn_weight_decay": args.bn_weight_decay, **spec.config_extra(args)}


def _batches(args: argparse.Namespace, shard: tuple[int, int]):
    from benchmarks.harness import data

    if args.data and args.loader == "dali":
        return data.dali(args.data, args.batch_size, args.image_size, args.data_format, gpu=args.device == "gpu",
                         seed=args.seed, shard=shard)
    if args.data:
        return data.paddle_loader(args.data, args.batch_size, args.image_size, args.data_format)
    return data.synthetic(args.batch_size, args.image_size, args.num_classes, args.data_format, args.seed)


class Peaks:
    """The framework's peak per dtype, probed right before and right after each timed phase.

    A phase is gated against the lower of its two probes: on a host whose other work comes and goes,
    a burst during the phase then shows in one of them too (on an idle host the two agree). Every
    probe is kept in the report.
    """

    def __init__(self, device: str, world: int, repeats: int) -> None:
        self.device, self.world, self.repeats = device, world, repeats
        self.found: dict[str, dict] = {}  # dtype -> the probes of every phase, and the lowest peak seen

    def _probe(self, dtype: str, label: str, log) -> dict:
        try:
            probe = efficiency.probe_peak(self.device, dtype, self.repeats)
        except Exception as exc:  # a dtype the device has no kernels for: report, do not fail the run
            probe = {"dtype": dtype, "status": "not available", "reason": str(exc).splitlines()[0][:200]}
        log(f"peak probe {dtype} ({label})", {k: v for k, v in probe.items() if k != "method"})
        entry = self.found.setdefault(dtype, {"dtype": dtype, "probes": []})
        entry["probes"].append({"phase": label, **probe})
        if "peak_flops" in probe:
            for key in ("gemm_flops", "conv_flops", "peak_flops"):
                entry[key] = min(entry.get(key, probe[key]), probe[key])
            entry["method"] = probe["method"] + "; lower of the probes before and after each phase"
        else:
            entry.setdefault("status", probe["status"])
            entry.setdefault("reason", probe["reason"])
        return probe

    @contextlib.contextmanager
    def around(self, dtype: str, label: str, log, devices: int | None = None) -> Iterator[dict]:
        """Probe before and after the block; afterwards it holds the lower peak x the devices the block ran
        on (default: every process of the run), or nothing when no probe worked."""
        found: dict = {}
        before = self._probe(dtype, f"before {label}", log)
        yield found
        after = self._probe(dtype, f"after {label}", log)
        peaks = [p["peak_flops"] for p in (before, after) if "peak_flops" in p]
        if peaks:
            found.update({"peak_flops": min(peaks) * (devices or self.world), "before": before.get("peak_flops"),
                          "after": after.get("peak_flops")})


def train_all(args, spec, build, logger, peaks: Peaks, table: dict, gpu_profile: str | None, rank: int) -> dict:
    import paddle.distributed as dist

    from benchmarks.harness.training import TrainConfig, train

    out: dict = {}
    train_flops = efficiency.TRAIN_FLOPS_FACTOR * efficiency.forward_flops(build, args.num_classes, args.image_size)
    for precision in args.precision:
        cfg = TrainConfig(batch_size=args.batch_size, image_size=args.image_size, steps=args.steps,
                          warmup=args.warmup, precision=precision, data_format=args.data_format,
                          num_classes=args.num_classes, lr=args.lr, lr_schedule=args.lr_schedule,
                          bn_weight_decay=args.bn_weight_decay, asp=args.asp, device=args.device,
                          checkpoint_dir=args.checkpoint_dir, resume=args.resume, seed=args.seed)
        shard = (rank, dist.get_world_size()) if dist.is_initialized() else (0, 1)
        with peaks.around(efficiency.probe_dtype(precision), f"train {precision}", logger.log) as peak:
            result = train(build, _batches(args, shard), cfg, logger.log)
        losses = [round(v, 5) for v in result.pop("losses")]
        sheet = gates.datasheet_tflops(table, gpu_profile, precision)
        out[precision] = efficiency.annotate(result, train_flops, peak or None, sheet and sheet * result["world_size"])
        out[precision]["losses"] = losses
    out["summary"] = {"loss_finite": 1 if all(r["loss_finite"] for r in out.values()) else 0}
    return out


def infer_all(args, build, logger, peaks: Peaks, table: dict, gpu_profile: str | None) -> dict:
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
                efficiency.annotate(result, flops, peak, sheet)
    pi = infer.get("paddle-inference", {}).get(args.infer_precision[0], {})
    if "bs1" in pi and "bs8" in pi:
        infer["summary"] = {"bs8_over_bs1": pi["bs8"]["ips"] / pi["bs1"]["ips"]}
    return infer


def run(args: argparse.Namespace, spec: ModelSpec) -> int:
    import paddle
    import paddle.distributed as dist

    if hasattr(paddle.base.core, "set_num_threads"):
        paddle.base.core.set_num_threads(args.threads)  # the CPU math library's own pool (MKL/OpenBLAS)
    paddle.set_device("gpu:0" if args.device == "gpu" else "cpu")
    rank = 0
    if "PADDLE_TRAINER_ID" in os.environ:
        dist.init_parallel_env()
        rank = dist.get_rank()
        args.gpus = dist.get_world_size()  # each launched process may see one device: record the whole run
    table = args.gates_table  # read and checked by cli.main before Paddle loaded
    baseline = args.baseline_data
    out = report.run_folder(Path(args.output), spec.name) if rank == 0 else None
    logger = DLLogger(out / "dllogger.jsonl" if out else None, echo=sys.stdout if rank == 0 else None)
    config = run_config(args, spec)
    env = environment.capture()
    env["threads"], env["threads_from"] = args.threads, args.threads_from
    gpu_names = [g["name"] for g in env["gpus"]] if args.device == "gpu" else []
    env["hardware"] = hardware_key(args.device, gpu_names, config["gpus"], env["cpu"], args.threads)
    profile = args.profile or gates.detect_profile(table, gpu_names)
    logger.metadata("config", config)
    logger.metadata("environment", env)
    title = f"{spec.title} ({args.device})"

    missing = gpu_image_without_gpu(args, environment.image_manifest())
    if missing and not args.gpus_given and not args.smoke:  # nothing to prove here; --gpus 0 runs the CPU path
        return finish(out, spec, title, config, env, {}, [], gates.Outcome("NOT PROVEN", [missing]), profile, logger)

    def build(num_classes: int, data_format: str):
        return spec.build(args, num_classes, data_format)

    world = dist.get_world_size() if dist.is_initialized() else 1
    peaks = Peaks(args.device, world, 1 if args.smoke else efficiency.PROBE_REPEATS)
    results: dict = {}
    gpu_profile = profile if args.device == "gpu" else None  # MFU: a GPU's data sheet, never a CPU run's
    if args.mode in ("train", "all"):
        results["train"] = train_all(args, spec, build, logger, peaks, table, gpu_profile, rank)
    if rank != 0:
        return 0
    if args.mode in ("infer", "all"):
        results["infer"] = infer_all(args, build, logger, peaks, table, gpu_profile)
    results.update(spec.extra_results(args))
    results["peak"] = dict(peaks.found)
    config["eval"] = "eval" in results

    verdicts = gates.evaluate(table, spec.name, profile if not missing else None, results, config, baseline,
                              args.max_regression, env["hardware"])
    outcome = gates.Outcome("SMOKE") if args.smoke else gates.overall(verdicts, [missing] if missing else [])
    return finish(out, spec, title, config, env, results, verdicts, outcome, profile, logger)


def finish(out: Path, spec: ModelSpec, title: str, config: dict, env: dict, results: dict,
           verdicts: list[gates.Verdict], outcome: gates.Outcome, profile: str | None, logger: DLLogger) -> int:
    report.write(out, spec.name, title, config, env, results, verdicts, outcome)
    logger.log("summary", {"verdict": outcome.verdict, "gates_failed": sum(v.status == "FAIL" for v in verdicts),
                           "output": str(out)})
    logger.close()
    print(report.console(spec.title, profile, config, results, verdicts, outcome, out), flush=True)
    return outcome.exit_code
