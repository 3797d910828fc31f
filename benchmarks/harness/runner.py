"""The command line shared by bench-rn50 and bench-hgnet: options, hardware defaults, gates, reports.

Exit codes: 0 every gate passed (or was not run, with the reason), 1 a gate failed, 2 bad input
(an option the hardware cannot honour, a missing data folder, an unreadable baseline).
"""

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import environment, gates, report
from benchmarks.harness.dllogger import DLLogger

TRAIN_PRECISIONS = ("fp32", "tf32", "amp", "amp-o2", "bf16")
INFER_PRECISIONS = ("fp32", "fp16", "int8")


class BadInput(SystemExit):
    def __init__(self, message: str) -> None:
        print(f"error: {message}", file=sys.stderr)
        super().__init__(2)


@dataclass
class ModelSpec:
    """What a model brings to the shared runner."""

    name: str  # rn50, hgnet
    title: str
    build: Callable  # build(args, num_classes, data_format) -> paddle.nn.Layer
    backends_cpu: list[str]
    backends_gpu: list[str]
    gpu_batch: int
    infer_image_size: int | None = None  # inference at this size by default (the reference's), else --image-size
    add_arguments: Callable[[argparse.ArgumentParser], None] = lambda parser: None
    before_run: Callable[[argparse.Namespace], int | None] = lambda args: None  # e.g. --classify
    config_extra: Callable[[argparse.Namespace], dict] = lambda args: {}
    extra_results: Callable[[argparse.Namespace], dict] = lambda args: {}  # e.g. accuracy on a dataset


def csv(kind: type, choices: tuple | None = None):
    def parse(text: str) -> list:
        values = [kind(v) for v in text.split(",") if v]
        bad = [v for v in values if choices and v not in choices]
        if bad:
            raise argparse.ArgumentTypeError(f"{bad[0]} is not one of {', '.join(choices)}")
        return values

    return parse


def parser(spec: ModelSpec) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"bench-{spec.name}", description=f"{spec.title}: training and inference "
                                "benchmark with acceptance gates. Defaults suit the hardware found.")
    p.add_argument("--mode", choices=("train", "infer", "all"), default="all")
    p.add_argument("--batch-size", type=int, help="training batch per device (default: 16 on CPU, "
                   f"{spec.gpu_batch} on GPU)")
    p.add_argument("--image-size", type=int, help="training image size (default: 128 on CPU, 224 on GPU)")
    p.add_argument("--infer-image-size", type=int, help="inference image size (default: "
                   f"{spec.infer_image_size or 'the training image size'})")
    p.add_argument("--precision", type=csv(str, TRAIN_PRECISIONS), help="training precisions, comma-separated: "
                   "fp32 (CPU), tf32, amp (FP16 O1), amp-o2, bf16 (default: fp32 on CPU, tf32,amp on GPU)")
    p.add_argument("--infer-precision", type=csv(str, INFER_PRECISIONS),
                   help="inference precisions (default: fp32 on CPU, fp32,fp16,int8 on GPU)")
    p.add_argument("--backends", type=csv(str), help="inference back ends, comma-separated (default: "
                   f"{','.join(spec.backends_cpu)} on CPU, {','.join(spec.backends_gpu)} on GPU)")
    p.add_argument("--batch-sizes", type=csv(int),
                   help="inference batch sweep (default: 1,8 on CPU, 1,8,64,256 on GPU)")
    p.add_argument("--steps", type=int, help="measured training steps (default: 8 on CPU, 100 on GPU)")
    p.add_argument("--warmup", type=int, help="warm-up training steps (default: 2 on CPU, 30 on GPU)")
    p.add_argument("--infer-iters", type=int, help="measured inference iterations per batch size (default: 20 / 200)")
    p.add_argument("--data", help="ImageNet-style folder (one sub-folder per class); default: synthetic data")
    p.add_argument("--loader", choices=("dali", "paddle"), default="dali", help="input pipeline for --data")
    p.add_argument("--data-format", choices=("NCHW", "NHWC"), help="default: NCHW on CPU, NHWC on GPU")
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--gpus", type=int, help="GPUs to train on (default: all visible; 0 forces the CPU)")
    p.add_argument("--nnodes", type=int, default=1, help="nodes for multi-node training (with --master)")
    p.add_argument("--master", help="IP:PORT of the first node for multi-node training")
    p.add_argument("--asp", action="store_true", help="prune to 2:4 structured sparsity (ASP) and train on")
    p.add_argument("--lr", type=float, default=0.256, help="learning rate for a batch of 256 (scaled linearly)")
    p.add_argument("--lr-schedule", choices=("cosine", "step"), default="cosine")
    p.add_argument("--checkpoint-dir", help="save model and optimizer state here at the end of training")
    p.add_argument("--resume", help="resume training from a --checkpoint-dir")
    p.add_argument("--output", default="bench-results", help="results folder (a new sub-folder per run)")
    p.add_argument("--baseline", help="result.json of a previous run: gate regressions against it")
    p.add_argument("--max-regression", type=float, help="allowed regression vs --baseline in %% (default: gates.yaml)")
    p.add_argument("--gates", default=str(gates.GATES_FILE), help="gates file")
    p.add_argument("--profile", help="hardware profile to gate against (default: detected)")
    p.add_argument("--seed", type=int, default=0)
    spec.add_arguments(p)
    return p


def visible_gpus() -> int:
    if os.environ.get("NGC_PADDLE_CPU_ONLY") == "1":
        return 0
    import paddle

    if not paddle.is_compiled_with_cuda():
        return 0
    try:
        return paddle.device.cuda.device_count()
    except Exception:
        return 0


def resolve(args: argparse.Namespace, spec: ModelSpec) -> argparse.Namespace:
    """Fill defaults for the hardware found; refuse what it cannot do with one line and the fix."""
    available = visible_gpus()
    if args.gpus is None:
        args.gpus = available
    if args.gpus > available:
        raise BadInput(f"--gpus {args.gpus} asked for, but {available} CUDA GPU(s) are visible"
                       f"{' (cpu flavor, or the container was started without --gpus all)' if not available else ''}"
                       "; fix: lower --gpus or run on a GPU host with the NVIDIA Container Toolkit")
    gpu = args.gpus > 0
    args.device = "gpu" if gpu else "cpu"
    args.batch_size = args.batch_size or (spec.gpu_batch if gpu else 16)
    args.image_size = args.image_size or (224 if gpu else 128)
    args.infer_image_size = args.infer_image_size or spec.infer_image_size or args.image_size
    args.precision = args.precision or (["tf32", "amp"] if gpu else ["fp32"])
    args.infer_precision = args.infer_precision or (["fp32", "fp16", "int8"] if gpu else ["fp32"])
    args.backends = args.backends or (spec.backends_gpu if gpu else spec.backends_cpu)
    args.batch_sizes = args.batch_sizes or ([1, 8, 64, 256] if gpu else [1, 8])
    args.steps = args.steps or (100 if gpu else 8)
    args.warmup = args.warmup if args.warmup is not None else (30 if gpu else 2)
    args.infer_iters = args.infer_iters or (200 if gpu else 20)
    args.data_format = args.data_format or ("NHWC" if gpu else "NCHW")
    if not gpu:
        wrong = [p for p in args.precision if p in ("tf32", "amp", "amp-o2")]
        if wrong:
            raise BadInput(f"--precision {wrong[0]} needs a GPU; fix: use fp32 (or bf16 where the CPU supports it)")
    if "bf16" in args.precision:
        import paddle

        if not paddle.amp.is_bfloat16_supported():
            raise BadInput("--precision bf16 is not supported on this device; fix: use fp32/tf32 or amp")
    if args.data and not Path(args.data).is_dir():
        raise BadInput(f"--data {args.data}: no such folder; fix: mount an ImageNet-style folder or drop --data")
    if args.baseline and not Path(args.baseline).is_file():
        raise BadInput(f"--baseline {args.baseline}: no such file; fix: point at a result.json of an earlier run")
    if args.asp and any(p in ("amp-o2",) for p in args.precision):
        raise BadInput("--asp with amp-o2 is not supported by Paddle's ASP; fix: use amp (O1) with --asp")
    return args


def relaunch_distributed(args: argparse.Namespace, spec: ModelSpec) -> int | None:
    """Several GPUs or nodes: re-run this command under paddle.distributed.launch (collective/NCCL)."""
    if (args.gpus <= 1 and args.nnodes <= 1) or "PADDLE_TRAINER_ID" in os.environ:
        return None
    cmd = [sys.executable, "-m", "paddle.distributed.launch", "--gpus", ",".join(map(str, range(args.gpus)))]
    if args.nnodes > 1:
        if not args.master:
            raise BadInput("--nnodes > 1 needs --master IP:PORT of the first node")
        cmd += ["--nnodes", str(args.nnodes), "--master", args.master]
    cmd += ["-m", f"benchmarks.{spec.name}", *sys.argv[1:]]
    return subprocess.run(cmd, check=False).returncode


def main(spec: ModelSpec, argv: list[str] | None = None) -> int:
    args = parser(spec).parse_args(argv)
    if args.asp:  # Paddle's ASP works on the legacy program representation only (must precede the import)
        os.environ["FLAGS_enable_pir_api"] = "0"  # noqa: SIM112 - Paddle's flag names are case-sensitive
    early = spec.before_run(args)
    if early is not None:
        return early
    args = resolve(args, spec)
    code = relaunch_distributed(args, spec)
    if code is not None:
        return code
    return run(args, spec)


def run(args: argparse.Namespace, spec: ModelSpec) -> int:
    import paddle
    import paddle.distributed as dist

    from benchmarks.harness import data as data_mod
    from benchmarks.harness.inference import run_all
    from benchmarks.harness.training import TrainConfig, train

    paddle.set_device("gpu:0" if args.device == "gpu" else "cpu")
    rank = 0
    if "PADDLE_TRAINER_ID" in os.environ:
        dist.init_parallel_env()
        rank = dist.get_rank()
    out = report.run_folder(Path(args.output), spec.name) if rank == 0 else None
    logger = DLLogger(out / "dllogger.jsonl" if out else None, echo=sys.stdout if rank == 0 else None)
    config = {"benchmark": spec.name, "mode": args.mode, "device": args.device, "gpus": max(args.gpus, 0),
              "batch_size": args.batch_size, "image_size": args.image_size,
              "infer_image_size": args.infer_image_size, "data_format": args.data_format,
              "data": args.data or "synthetic", "loader": args.loader if args.data else "synthetic",
              "steps": args.steps, "warmup": args.warmup, "asp": args.asp, **spec.config_extra(args)}
    env = environment.capture()
    logger.metadata("config", config)
    logger.metadata("environment", env)

    def build(num_classes: int, data_format: str):
        return spec.build(args, num_classes, data_format)

    results: dict = {}
    if args.mode in ("train", "all"):
        results["train"] = {}
        for precision in args.precision:
            cfg = TrainConfig(batch_size=args.batch_size, image_size=args.image_size, steps=args.steps,
                              warmup=args.warmup, precision=precision, data_format=args.data_format,
                              num_classes=args.num_classes, lr=args.lr, lr_schedule=args.lr_schedule,
                              asp=args.asp, device=args.device, checkpoint_dir=args.checkpoint_dir,
                              resume=args.resume, seed=args.seed)
            shard = (rank, dist.get_world_size()) if dist.is_initialized() else (0, 1)
            if args.data and args.loader == "dali":
                batches = data_mod.dali(args.data, args.batch_size, args.image_size, args.data_format,
                                        gpu=args.device == "gpu", seed=args.seed, shard=shard)
            elif args.data:
                batches = data_mod.paddle_loader(args.data, args.batch_size, args.image_size, args.data_format)
            else:
                batches = data_mod.synthetic(args.batch_size, args.image_size, args.num_classes, args.data_format,
                                             args.seed)
            result = train(build, batches, cfg, logger.log)
            results["train"][precision] = {k: v for k, v in result.items() if k != "losses"}
            results["train"][precision]["losses"] = [round(v, 5) for v in result["losses"]]
        finite = all(r["loss_finite"] for r in results["train"].values())
        results["train"]["summary"] = {"loss_finite": 1 if finite else 0}
    if rank != 0:
        return 0
    if args.mode in ("infer", "all"):
        model = build(args.num_classes, args.data_format)
        infer = run_all(model, args.backends, args.infer_precision, args.batch_sizes, args.infer_image_size,
                        args.data_format, args.device, max(2, args.infer_iters // 4), args.infer_iters, logger.log)
        pi = infer.get("paddle-inference", {}).get(args.infer_precision[0], {})
        if "bs1" in pi and "bs8" in pi:
            infer["summary"] = {"bs8_over_bs1": pi["bs8"]["ips"] / pi["bs1"]["ips"]}
        results["infer"] = infer
    results.update(spec.extra_results(args))

    table = gates.load(Path(args.gates))
    gpu_names = [g["name"] for g in env["gpus"]] if args.device == "gpu" else []
    profile = args.profile or gates.detect_profile(table, gpu_names)
    baseline = json.loads(Path(args.baseline).read_text()) if args.baseline else None
    verdicts = gates.evaluate(table, spec.name, profile, results, config, baseline, args.max_regression)
    summary = report.write(out, spec.name, f"{spec.title} ({args.device})", config, env, results, verdicts)
    logger.log("summary", {"gates_failed": sum(v.status == "FAIL" for v in verdicts), "output": str(out)})
    logger.close()
    print(f"\n== {spec.title}: gates against profile {profile or 'relative'}")
    for v in verdicts:
        measured = "-" if v.measured is None else f"{v.measured:.4g}"
        print(f"   {v.status:<8} {v.gate}: {measured} (needs {v.op} {v.threshold:.4g}) "
              f"{'- ' + v.reason if v.reason else ''}")
    print(f"   results: {out}/result.json, result.md, throughput.png")
    return 0 if summary["passed"] else 1
