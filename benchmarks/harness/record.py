"""What result.json records about a run: the configuration it was asked for and what it ran on.

Why: a baseline is comparable only with a run of the same configuration on the same hardware, so
both are written into every result (their schema: ngc_common.bench_result.Config and .Environment),
the hardware key included.
"""

from benchmarks.harness import cpu_kind, environment
from benchmarks.harness.hardware import hardware_key
from benchmarks.harness.model_spec import ModelSpec
from benchmarks.harness.run_config import RunConfig
from ngc_common import emulation


def run_config(config: RunConfig, spec: ModelSpec) -> dict:
    """The run's options after the hardware defaults were filled in, its recipe, the model's own
    (spec.recorded), and the CPU kind its kernels ran on (a CPU floor's `when`: an ISA cap changes it)."""
    return {"benchmark": spec.name, "cpu_kind": cpu_kind.detect().name, "mode": config.mode, "device": config.device,
            "gpus": max(config.gpus, 0),
            "threads": config.threads, "threads_from": config.threads_from, "smoke": config.smoke,
            "batch_size": config.batch_size, "image_size": config.image_size,
            "infer_image_size": config.infer_image_size, "data_format": config.data_format,
            "data": config.data or "synthetic", "loader": config.loader if config.data else "synthetic",
            "steps": config.steps, "warmup": config.warmup, "asp": config.asp, "precisions": list(config.precision),
            "infer_precisions": list(config.infer_precision), "backends": list(config.backends),
            "batch_sizes": list(config.batch_sizes), "bn_weight_decay": config.bn_weight_decay,
            "procs": config.procs, "nnodes": config.nnodes,
            "recipe": {"source": spec.recipe.source, "lr": config.lr, "lr_batch": spec.recipe.lr_batch,
                       "lr_schedule": config.lr_schedule, "lr_warmup_epochs": config.lr_warmup_epochs,
                       "epochs": config.epochs, "momentum": config.momentum, "weight_decay": config.weight_decay,
                       "label_smoothing": config.label_smoothing},
            **{name: config.model_options[name] for name in spec.recorded}}


def gpu_names(device: str, env: dict) -> list[str]:
    """The GPU models a run used: none for a CPU run, even on a host that has GPUs."""
    return [g["name"] for g in env["gpus"]] if device == "gpu" else []


def run_environment(config: RunConfig) -> dict:
    """environment.capture(), plus the CPU threads used and the hardware key a baseline must match."""
    env = environment.capture()
    env["threads"], env["threads_from"] = config.threads, config.threads_from
    env["emulated"] = emulation.detect().reason()  # None natively; under qemu every gate is NOT PROVEN
    env["hardware"] = hardware_key(config.device, gpu_names(config.device, env), max(config.gpus, 0), env["cpu"],
                                   config.threads)
    return env
