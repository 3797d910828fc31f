"""What result.json records about a run: the configuration it was asked for and what it ran on.

Why: a baseline is comparable only with a run of the same configuration on the same hardware, so
both are written into every result (their schema: ngc_common.bench_result.Config and .Environment),
the hardware key included.
"""

import argparse

from benchmarks.harness import environment
from benchmarks.harness.hardware import hardware_key
from benchmarks.harness.spec import ModelSpec


def run_config(args: argparse.Namespace, spec: ModelSpec) -> dict:
    """The run's options after the hardware defaults were filled in, plus the model's own (spec.config_extra)."""
    return {"benchmark": spec.name, "mode": args.mode, "device": args.device, "gpus": max(args.gpus, 0),
            "threads": args.threads, "threads_from": args.threads_from, "smoke": args.smoke,
            "batch_size": args.batch_size, "image_size": args.image_size,
            "infer_image_size": args.infer_image_size, "data_format": args.data_format,
            "data": args.data or "synthetic", "loader": args.loader if args.data else "synthetic",
            "steps": args.steps, "warmup": args.warmup, "asp": args.asp, "precisions": args.precision,
            "infer_precisions": args.infer_precision, "backends": args.backends, "batch_sizes": args.batch_sizes,
            "bn_weight_decay": args.bn_weight_decay, **spec.config_extra(args)}


def gpu_names(device: str, env: dict) -> list[str]:
    """The GPU models a run used: none for a CPU run, even on a host that has GPUs."""
    return [g["name"] for g in env["gpus"]] if device == "gpu" else []


def run_environment(args: argparse.Namespace, gpus: int) -> dict:
    """environment.capture(), plus the CPU threads used and the hardware key a baseline must match."""
    env = environment.capture()
    env["threads"], env["threads_from"] = args.threads, args.threads_from
    env["hardware"] = hardware_key(args.device, gpu_names(args.device, env), gpus, env["cpu"], args.threads)
    return env
