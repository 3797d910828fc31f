"""bench-rn50's entry: what ResNet50 v1.5 brings to the shared benchmark command (its ModelSpec).

Training (DALI, AMP, ASP, multi-GPU) and inference (Paddle Inference, Paddle-TRT) with acceptance
gates. `python -m benchmarks.rn50 --help`.
"""

import argparse

from benchmarks.harness.cli import entry
from benchmarks.harness.spec import ModelSpec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--zero-init-residual", action="store_true",
                        help="start the last BatchNorm scale of each block at 0 (DLE default: 1.0)")


def build(args, num_classes: int, data_format: str):
    from benchmarks.rn50.model import resnet50

    return resnet50(num_classes, data_format, zero_init_residual=args.zero_init_residual)


SPEC = ModelSpec(name="rn50", title="ResNet50 v1.5", build=build, backends_cpu=["paddle-inference"],
                 backends_gpu=["paddle-inference", "paddle-trt"], gpu_batch=256, add_arguments=add_arguments,
                 config_extra=lambda args: {"zero_init_residual": args.zero_init_residual})

if __name__ == "__main__":
    entry(SPEC)
