"""The command line shared by bench-rn50 and bench-hgnet: its options, input files and exit codes.

Exit codes (ngc_common.exit_codes): 0 every acceptance gate that applies passed (or --smoke ran through),
1 a gate failed, 2 bad input (an option the hardware cannot honour, a missing data folder, a gates file or
baseline that is not one), 3 NOT PROVEN (no acceptance gate could run: a GPU image without a GPU,
a back end missing, no gate for this hardware and configuration), 4 an internal error (one line
naming the file that holds the traceback), 143/130 stopped by SIGTERM/SIGINT (the run's result.json says
INTERRUPTED, ngc_common.stop).
"""

import argparse
import os
import sys
from pathlib import Path

from benchmarks.harness import gates
from benchmarks.harness.hardware import set_threads
from benchmarks.harness.spec import ModelSpec
from ngc_common import bench_result, crash, stop
from ngc_common.errors import InputError

TRAIN_PRECISIONS = ("fp32", "tf32", "amp", "amp-o2", "bf16")
INFER_PRECISIONS = ("fp32", "fp16", "int8")


def csv(kind: type, choices: tuple | None = None):
    def parse(text: str) -> list:
        try:
            values = [kind(v) for v in text.split(",") if v]
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from exc
        bad = [v for v in values if choices and v not in choices]
        if bad:
            raise argparse.ArgumentTypeError(f"{bad[0]} is not one of {', '.join(choices)}")
        return values

    return parse


def whole(minimum: int):
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


def parser(spec: ModelSpec) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"bench-{spec.name}", description=f"{spec.title}: training and inference "
                                "benchmark with acceptance gates. Defaults suit the hardware found.")
    p.add_argument("--mode", choices=("train", "infer", "all"), default="all")
    p.add_argument("--smoke", action="store_true", help="one tiny training step and one inference call: does the "
                   "command start and run through? (seconds; gates are not evaluated)")
    p.add_argument("--threads", type=positive, help="CPU threads (default: OMP_NUM_THREADS if set, else the CPUs "
                   "this container may use: its cpuset, capped by its CPU quota)")
    p.add_argument("--batch-size", type=positive, help="training batch per device (default: 16 on CPU, "
                   f"{spec.gpu_batch} on GPU)")
    p.add_argument("--image-size", type=positive, help="training image size (default: 128 on CPU, 224 on GPU)")
    p.add_argument("--infer-image-size", type=positive, help="inference image size (default: "
                   f"{spec.infer_image_size or 'the training image size'})")
    p.add_argument("--precision", type=csv(str, TRAIN_PRECISIONS), help="training precisions, comma-separated: "
                   "fp32 (CPU), tf32, amp (FP16 O1), amp-o2, bf16 (default: fp32 on CPU, tf32,amp on GPU)")
    p.add_argument("--infer-precision", type=csv(str, INFER_PRECISIONS),
                   help="inference precisions (default: fp32 on CPU, fp32,fp16,int8 on GPU)")
    p.add_argument("--backends", type=csv(str), help="inference back ends, comma-separated (default: "
                   f"{','.join(spec.backends_cpu)} on CPU, {','.join(spec.backends_gpu)} on GPU)")
    p.add_argument("--batch-sizes", type=csv(int),
                   help="inference batch sweep (default: 1,8 on CPU, 1,8,64,256 on GPU)")
    p.add_argument("--steps", type=positive, help="measured training steps (default: 8 on CPU, 100 on GPU)")
    p.add_argument("--warmup", type=whole(0), help="warm-up training steps (default: 2 on CPU, 30 on GPU)")
    p.add_argument("--infer-iters", type=positive,
                   help="measured inference iterations per batch size (default: 20 / 200)")
    p.add_argument("--data", help="ImageNet-style folder (one sub-folder per class); default: synthetic data")
    p.add_argument("--loader", choices=("dali", "paddle"), default="dali", help="input pipeline for --data")
    p.add_argument("--data-format", choices=("NCHW", "NHWC"), help="default: NCHW on CPU, NHWC on GPU")
    p.add_argument("--num-classes", type=positive, default=1000)
    p.add_argument("--gpus", type=whole(0), help="GPUs to train on (default: all visible; 0 forces the CPU)")
    p.add_argument("--nnodes", type=positive, default=1, help="nodes for multi-node training (with --master)")
    p.add_argument("--master", help="IP:PORT of the first node for multi-node training")
    p.add_argument("--asp", action="store_true", help="prune to 2:4 structured sparsity (ASP) and train on")
    p.add_argument("--lr", type=float, default=0.256, help="learning rate for a batch of 256 (scaled linearly)")
    p.add_argument("--lr-schedule", choices=("cosine", "step"), default="cosine")
    p.add_argument("--bn-weight-decay", action="store_true",
                   help="apply weight decay to BatchNorm parameters too (DLE default: off)")
    p.add_argument("--checkpoint-dir", help="save model and optimizer state here at the end of training")
    p.add_argument("--resume", help="resume training from a --checkpoint-dir")
    p.add_argument("--output", default="bench-results", help="results folder (a new sub-folder per run)")
    p.add_argument("--baseline", help="result.json of a previous run on the same hardware: gate regressions")
    p.add_argument("--max-regression", type=float, help="allowed regression vs --baseline in %% (default: gates.yaml)")
    p.add_argument("--gates", default=str(gates.GATES_FILE), help="gates file")
    p.add_argument("--profile", help="hardware profile to gate against (default: detected)")
    p.add_argument("--seed", type=int, default=0)
    spec.add_arguments(p)
    return p


def entry(spec: ModelSpec) -> None:
    """The command (`python -m benchmarks.rn50`): main() in a process that stops on SIGTERM/SIGINT with its report
    (ngc_common.stop: installed before Paddle loads and starts threads) and exits even if threads linger."""
    stop.install(f"bench-{spec.name}", None, block=True)
    stop.exit_now(main(spec))


def main(spec: ModelSpec, argv: list[str] | None = None) -> int:
    """Run the benchmark; its input files are checked before Paddle loads. Bad input: one line, exit 2; a bug:
    one line naming the file with the traceback, exit 4 (never 1, which means a gate failed)."""
    args = parser(spec).parse_args(argv)
    try:
        return _main(spec, args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:
        output = Path(args.output)
        return crash.report(exc, f"bench-{spec.name}", [output] if output.is_dir() else [])


def _main(spec: ModelSpec, args: argparse.Namespace) -> int:
    from benchmarks.harness.hardware import resolve
    from benchmarks.harness.launch import relaunch_distributed
    from benchmarks.harness.runner import run

    args.gates_table = gates.load(Path(args.gates))
    args.baseline_data = bench_result.read_baseline(Path(args.baseline), spec.name) if args.baseline else None
    if args.asp:  # Paddle's ASP works on the legacy program representation only (must precede the import)
        os.environ["FLAGS_enable_pir_api"] = "0"  # noqa: SIM112 - Paddle's flag names are case-sensitive
    set_threads(args)  # imports Paddle
    early = spec.before_run(args)
    if early is not None:
        return early
    args = resolve(args, spec)
    code = relaunch_distributed(args, spec)
    if code is not None:
        return code
    return run(args, spec)


if __name__ == "__main__":
    sys.exit("run bench-rn50 or bench-hgnet")
