"""The benchmark's run configuration: each option's default written once, resolved once into a frozen RunConfig.

Why: one command serves a 2-core CPU container and an 8-GPU node, so many defaults depend on the
hardware found. Each option is one Option below (its CPU and GPU defaults, its --smoke value, its
help); the --help text is rendered from it and resolve() reads the same entry, so a default cannot
say one thing in the help and do another. resolve() is a pure function of what was asked (the
parsed command line), the hardware found (Hardware) and the model (ModelSpec); the RunConfig it
returns is frozen: nothing changes it afterwards (a launched process that learns its world size
gets a new one, dataclasses.replace).
"""

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from benchmarks.harness.acceptance_gates import GATES_FILE
from benchmarks.harness.recipes import IMAGENET_TRAIN_IMAGES
from ngc_common.bench_result import INFER_PRECISIONS, TRAIN_PRECISIONS
from ngc_common.errors import InputError

GPU_ONLY_PRECISIONS = ("tf32", "amp", "amp-o2")
SAME = object()  # an Option's GPU default that is its CPU default
REPO_ROOT = Path(__file__).resolve().parents[2]  # shown as "." in docs (the gates file's default)


def csv(kind: type, choices: tuple | None = None) -> Callable[[str], tuple]:
    def parse(text: str) -> tuple:
        try:
            values = tuple(kind(v) for v in text.split(",") if v)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from exc
        bad = [v for v in values if choices and v not in choices]
        if bad:
            raise argparse.ArgumentTypeError(f"{bad[0]} is not one of {', '.join(choices)}")
        return values

    return parse


def whole(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= {minimum}")
        return value

    return parse


positive = whole(1)


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number >= 0")
    return value


@dataclass(frozen=True)
class Option:
    """One command-line option: its default on a CPU and on a GPU run (SAME: the CPU one), its --smoke value."""

    flag: str
    help: str
    cpu: Any = None
    gpu: Any = SAME
    smoke: Any = None  # forced by --smoke (None: not forced)
    type: Callable | None = None
    choices: tuple | None = None
    flag_kind: str = "value"  # value | switch (store_true) | toggle (--x / --no-x)
    metavar: str | None = None
    nargs: str | None = None
    shown_default: str | None = None  # for a default resolve() derives (threads, GPUs, back ends, ...)
    from_recipe: bool = False  # the default is the model's upstream recipe's (spec.recipe)

    @property
    def name(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def default(self, gpu: bool) -> Any:
        return self.cpu if not gpu or self.gpu is SAME else self.gpu

    def help_text(self) -> str:
        if self.shown_default is not None:
            return f"{self.help} (default: {self.shown_default})"
        if self.cpu is None or self.flag_kind == "switch":
            return self.help
        if self.gpu is SAME or self.gpu == self.cpu:
            return f"{self.help} (default: {_shown(self.cpu)})"
        return f"{self.help} (default: {_shown(self.cpu)} on CPU, {_shown(self.gpu)} on GPU)"

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        kwargs: dict[str, Any] = {"help": self.help_text().replace("%", "%%"), "default": None}
        if self.flag_kind == "switch":
            kwargs["action"] = "store_true"
        elif self.flag_kind == "toggle":
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs.update(type=self.type, choices=self.choices, metavar=self.metavar, nargs=self.nargs)
        parser.add_argument(self.flag, **kwargs)


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


def common_options(spec) -> tuple[Option, ...]:
    """The options every benchmark has; model-specific defaults come from its ModelSpec (and its Recipe). In the
    order --help and docs/benchmarks.md show them."""
    return (*_run_options(spec), *_data_options(), *_recipe_options(spec.recipe), *_output_options())


def _run_options(spec) -> tuple[Option, ...]:
    """What runs and how big: the phases, sizes, precisions, back ends and step counts."""
    cpu_backends, gpu_backends = tuple(spec.backends_cpu), tuple(spec.backends_gpu)
    return (
        Option("--mode", "what to run", "all", choices=("train", "infer", "all"), smoke="all"),
        Option("--smoke", "one tiny training step and one inference call: does the command start and run "
               "through? (seconds; gates are not evaluated)", False, flag_kind="switch"),
        Option("--threads", "CPU threads", type=positive, shown_default="OMP_NUM_THREADS if set, else the CPUs this "
               "container may use: its cpuset, capped by its CPU quota"),
        Option("--batch-size", "training batch per device", 16, spec.gpu_batch, smoke=2, type=positive),
        Option("--image-size", "training image size", 128, 224, smoke=64, type=positive),
        Option("--infer-image-size", "inference image size", type=positive, smoke=64,
               shown_default=str(spec.infer_image_size or "the training image size")),
        Option("--precision", "training precisions, comma-separated: fp32 (CPU), tf32, amp (FP16 O1), amp-o2, bf16",
               ("fp32",), ("tf32", "amp"), type=csv(str, TRAIN_PRECISIONS)),
        Option("--infer-precision", "inference precisions (int8: Paddle-TRT, calibrated on --data/--eval-data images)",
               ("fp32",), ("fp32", "fp16", "int8"), type=csv(str, INFER_PRECISIONS)),
        Option("--backends", "inference back ends, comma-separated", cpu_backends, gpu_backends, type=csv(str),
               shown_default=f"{','.join(cpu_backends)} on CPU, {','.join(gpu_backends)} on GPU: those the image "
               "ships"),
        Option("--batch-sizes", "inference batch sweep", (1, 8), (1, 8, 64, 256), smoke=(1,), type=csv(int)),
        Option("--steps", "measured training steps", 8, 100, smoke=1, type=positive),
        Option("--warmup", "warm-up training steps (not timed)", 2, 30, smoke=0, type=whole(0)),
        Option("--infer-iters", "measured inference iterations per batch size", 20, 200, smoke=1, type=positive),
    )


def _data_options() -> tuple[Option, ...]:
    """Where the images come from, and the devices and processes that train on them."""
    return (
        Option("--data", "ImageNet-style training folder (one sub-folder per class)", metavar="DIR",
               shown_default="synthetic data"),
        Option("--loader", "input pipeline for --data", "dali", choices=("dali", "paddle")),
        Option("--data-format", "tensor layout", "NCHW", "NHWC", choices=("NCHW", "NHWC")),
        Option("--num-classes", "classes of the model's head", 1000, smoke=10, type=positive),
        Option("--eval-data", "ImageNet-style validation folder: top-1/top-5 after training", metavar="DIR",
               shown_default="a synthetic smoke evaluation, its accuracy meaningless"),
        Option("--eval-limit", "evaluate only the first N images of --eval-data", type=positive),
        Option("--gpus", "GPUs to train on; 0 forces the CPU", type=whole(0),
               shown_default="all visible; 1 with --smoke"),
        Option("--procs", "data-parallel training processes per node on a CPU run, the CPU threads split between them "
               "(on GPUs one process per GPU: --gpus)", 1, type=positive),
        Option("--nnodes", "nodes for multi-node training (with --master)", 1, type=positive),
        Option("--master", "IP:PORT of the first node for multi-node training"),
        Option("--asp", "prune to 2:4 structured sparsity (ASP) and train on", False, flag_kind="switch"),
    )


def _recipe_options(r) -> tuple[Option, ...]:
    """The training recipe's figures, defaulting to the model's recipe (`r`)."""
    return (
        Option("--lr", f"peak learning rate for a global batch of {r.lr_batch}, scaled linearly with the global "
               "batch (per-device batch x devices)", r.lr, type=non_negative_float, from_recipe=True),
        Option("--lr-schedule", "decay after the warm-up", r.schedule, choices=("cosine", "step"), from_recipe=True),
        Option("--lr-warmup-epochs", "epochs of linear warm-up from 0 (an epoch: the training images / global "
               f"batch; ImageNet-1k's {IMAGENET_TRAIN_IMAGES} on synthetic data)", r.warmup_epochs,
               type=non_negative_float, from_recipe=True),
        Option("--epochs", "the recipe's training length, over which the schedule decays", r.epochs, type=positive,
               from_recipe=True),
        Option("--momentum", "Momentum optimizer's momentum", r.momentum, type=non_negative_float, from_recipe=True),
        Option("--weight-decay", "L2 weight decay", r.weight_decay, type=non_negative_float, from_recipe=True),
        Option("--label-smoothing", "label smoothing epsilon", r.label_smoothing, type=non_negative_float,
               from_recipe=True),
        Option("--bn-weight-decay", "weight decay on BatchNorm parameters too", r.bn_weight_decay,
               flag_kind="toggle", from_recipe=True),
    )


def _output_options() -> tuple[Option, ...]:
    """What a run keeps and what it is gated against."""
    return (
        Option("--checkpoint-dir", "save model and optimizer state here at the end of training", metavar="DIR"),
        Option("--resume", "resume training from a --checkpoint-dir", metavar="DIR"),
        Option("--output", "results folder (a new sub-folder per run)", "bench-results", metavar="DIR"),
        Option("--baseline", "result.json of a previous run on the same hardware: gate regressions", metavar="FILE"),
        Option("--max-regression", "allowed regression vs --baseline in %", type=float, shown_default="gates.yaml"),
        Option("--gates", "gates file", str(GATES_FILE), metavar="FILE"),
        Option("--profile", "hardware profile to gate against", shown_default="detected"),
        Option("--seed", "random seed", 0, type=int),
    )


def defaults_table(spec) -> str:
    """docs/benchmarks.md's table of bench-<name>'s defaults, rendered from its options (tests check the file)."""
    rows = [f"### bench-{spec.name}", "", f"Upstream recipe: {spec.recipe.source}; `--lr` is the peak for a global "
            f"batch of {spec.recipe.lr_batch}, scaled linearly.", "",
            "| option | CPU default | GPU default | from |", "| --- | --- | --- | --- |"]
    for option in options(spec):
        if option.flag_kind == "switch":
            continue  # off unless given
        if option.shown_default is not None:
            cpu, gpu = option.shown_default, "same"
        else:
            cpu = "-" if option.cpu is None else _shown(option.cpu)
            gpu = "same" if option.gpu is SAME or option.gpu == option.cpu else _shown(option.gpu)
        origin = "upstream recipe" if option.from_recipe else "this suite"
        rows.append(f"| `{option.flag}` | {cpu} | {gpu} | {origin} |".replace(str(REPO_ROOT), "."))
    return "\n".join(rows) + "\n"


def docs_section() -> str:
    """The generated part of docs/benchmarks.md: every registered model's table."""
    from benchmarks.harness.model_registry import models

    return "\n".join(defaults_table(spec) for spec in models().values())


def fixed_default(spec, name: str) -> Any:
    """The default of an option that does not depend on the hardware (read before the run is resolved)."""
    return next(option.cpu for option in options(spec) if option.name == name)


def options(spec) -> tuple[Option, ...]:
    return common_options(spec) + tuple(spec.options)


def parser(spec) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"bench-{spec.name}", description=f"{spec.title}: training and inference "
                                f"benchmark with acceptance gates, trained with {spec.recipe.source}'s recipe. "
                                "Defaults suit the hardware found.")
    for option in options(spec):
        option.add_to(p)
    return p


@dataclass(frozen=True)
class Hardware:
    """What the run found: visible GPUs, CPU threads (and why that many), what the image ships, bf16 support."""

    gpus_available: int
    threads: int
    threads_from: str
    components: Mapping[str, Any] | None = None  # the image manifest's components (None: not an image)
    bf16_supported: bool = False


BACKEND_NEEDS = {"paddle-trt": "tensorrt", "tensorrt": "tensorrt", "onnxruntime": "onnxruntime"}


def shipped_backends(backends: tuple[str, ...], components: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The default back ends this image can run: one whose component the flavor does not ship (TensorRT in
    gpu-cu118) is left out rather than reported as missing evidence. Asked for by name, it is tried."""
    if not components:
        return backends
    return tuple(b for b in backends if BACKEND_NEEDS.get(b, "paddle") in components)


TRT_BACKENDS = ("paddle-trt", "tensorrt")


def smoke_backends(spec, components: Mapping[str, Any] | None) -> tuple[str, ...]:
    """--smoke's back ends: the first CPU one, and in a CUDA image the model's TensorRT ones too, so that a smoke
    run shows their rows (N/A with the reason where no GPU is visible or the image has no TensorRT)."""
    cuda_image = bool(components) and "cuda-runtime" in components
    return (*spec.backends_cpu[:1], *(b for b in spec.backends_gpu if cuda_image and b in TRT_BACKENDS))


@dataclass(frozen=True)
class RunConfig:
    """One benchmark run, every default filled in for the hardware found. Frozen."""

    mode: str
    smoke: bool
    device: str
    gpus: int
    gpus_available: int
    gpus_given: bool
    threads: int
    threads_from: str
    batch_size: int
    image_size: int
    infer_image_size: int
    precision: tuple[str, ...]
    infer_precision: tuple[str, ...]
    backends: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    steps: int
    warmup: int
    infer_iters: int
    data: str | None
    loader: str
    data_format: str
    num_classes: int
    eval_data: str | None
    eval_limit: int | None
    procs: int
    nnodes: int
    master: str | None
    asp: bool
    lr: float
    lr_schedule: str
    lr_warmup_epochs: float
    epochs: int
    momentum: float
    weight_decay: float
    label_smoothing: float
    bn_weight_decay: bool
    checkpoint_dir: str | None
    resume: str | None
    output: str
    baseline: str | None
    max_regression: float | None
    gates: str
    profile: str | None
    seed: int
    model_options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  # the ModelSpec's own

    @property
    def gpu(self) -> bool:
        return self.device == "gpu"


COMMON = {f.name for f in fields(RunConfig)}


def requested(spec, argv: list[str] | None) -> Mapping[str, Any]:
    """The command line as given: each option's value, None where it was not given. Read-only."""
    parsed = vars(parser(spec).parse_args(argv))
    return MappingProxyType({k: tuple(v) if isinstance(v, list) else v for k, v in parsed.items()})


def resolve(asked: Mapping[str, Any], spec, hardware: Hardware) -> RunConfig:
    """Fill defaults for the hardware found; refuse what it cannot do with one line and the fix."""
    smoke = bool(asked.get("smoke"))
    available = hardware.gpus_available
    gpus = asked.get("gpus")
    if gpus is None:  # inference runs on one device: an inference-only run takes one GPU, not every GPU visible
        gpus = min(available, 1) if smoke or asked.get("mode") == "infer" else available
    if gpus > available:
        raise InputError(f"--gpus {gpus} asked for, but {available} CUDA GPU(s) are visible"
                         f"{' (cpu flavor, or the container was started without --gpus all)' if not available else ''}"
                         "; fix: lower --gpus or run on a GPU host with the NVIDIA Container Toolkit")
    gpu = gpus > 0
    values: dict[str, Any] = {}
    for option in options(spec):
        given = asked.get(option.name)
        if smoke and option.smoke is not None:
            values[option.name] = option.smoke
        elif given is not None:
            values[option.name] = given
        else:
            values[option.name] = option.default(gpu)
    values["infer_image_size"] = values["infer_image_size"] or spec.infer_image_size or values["image_size"]
    if asked.get("backends") is None:
        values["backends"] = smoke_backends(spec, hardware.components) if smoke else shipped_backends(
            tuple(spec.backends_gpu if gpu else spec.backends_cpu), hardware.components)
    if smoke and asked.get("infer_precision") is None:
        values["infer_precision"] = ("fp32",)
    if smoke and gpu:
        values["precision"] = ("tf32",)
    values.update(device="gpu" if gpu else "cpu", gpus=gpus, gpus_available=available,
                  gpus_given=asked.get("gpus") is not None, threads=hardware.threads,
                  threads_from=hardware.threads_from)
    _refuse(values, hardware)
    own = MappingProxyType({k: v for k, v in values.items() if k not in COMMON})
    return RunConfig(**{k: v for k, v in values.items() if k in COMMON}, model_options=own)


def _refuse(values: dict[str, Any], hardware: Hardware) -> None:
    if values["device"] == "cpu":
        wrong = [p for p in values["precision"] if p in GPU_ONLY_PRECISIONS]
        if wrong:
            raise InputError(f"--precision {wrong[0]} needs a GPU; fix: use fp32 (or bf16 where the CPU supports it)")
    if "bf16" in values["precision"] and not hardware.bf16_supported:
        raise InputError("--precision bf16 is not supported on this device; fix: use fp32/tf32 or amp")
    for name, flag in (("data", "--data"), ("eval_data", "--eval-data")):
        if values[name] and not Path(values[name]).is_dir():
            raise InputError(f"{flag} {values[name]}: no such folder; fix: mount an ImageNet-style folder or drop "
                             f"{flag}")
    if values["baseline"] and not Path(values["baseline"]).is_file():
        raise InputError(f"--baseline {values['baseline']}: no such file; fix: point at a result.json of an earlier "
                         "run")
    if values["asp"] and "amp-o2" in values["precision"]:
        raise InputError("--asp with amp-o2 is not supported by Paddle's ASP; fix: use amp (O1) with --asp")
    if values["procs"] > 1 and values["device"] == "gpu":
        raise InputError(f"--procs {values['procs']} is for CPU runs: on GPUs each GPU gets one process; fix: use "
                         "--gpus N (or --gpus 0 --procs N for the CPU)")
    several = f"--procs {values['procs']}" if values["procs"] > 1 else f"--gpus {values['gpus']}" if \
        values["gpus"] > 1 else "--nnodes" if values["nnodes"] > 1 else None
    if values["mode"] == "infer" and several:
        raise InputError(f"--mode infer with {several}: inference runs in one process on one device (data-parallel "
                         "runs train); fix: drop it, or use --mode train or all (inference then runs on rank 0)")
    if values["nnodes"] > 1 and not values["master"]:
        raise InputError("--nnodes > 1 needs --master IP:PORT of the first node; fix: add --master IP:PORT")
