"""bench-rn50: ResNet50 v1.5 training (DALI, AMP, ASP, multi-GPU) and inference (Paddle Inference,
Paddle-TRT) benchmark with acceptance gates. `python -m benchmarks.rn50 --help`."""

import sys

from benchmarks.harness.runner import ModelSpec, main


def build(args, num_classes: int, data_format: str):
    from benchmarks.rn50.model import resnet50

    return resnet50(num_classes, data_format)


SPEC = ModelSpec(name="rn50", title="ResNet50 v1.5", build=build, backends_cpu=["paddle-inference"],
                 backends_gpu=["paddle-inference", "paddle-trt"], gpu_batch=256)

if __name__ == "__main__":
    sys.exit(main(SPEC))
