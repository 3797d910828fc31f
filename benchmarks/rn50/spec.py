"""bench-rn50's model: what ResNet50 v1.5 brings to the shared benchmark command (its ModelSpec).

Training (DALI, AMP, ASP, multi-GPU) with DLE's recipe and its eval pass, and inference (Paddle
Inference, Paddle-TRT, and TensorRT's own Python API on the ONNX export) with acceptance gates.
`python -m benchmarks.rn50 --help`.
"""

from benchmarks.harness.model_registry import register
from benchmarks.harness.model_spec import ModelSpec
from benchmarks.harness.recipes import DLE_RN50
from benchmarks.harness.run_config import Option

OPTIONS = (Option("--zero-init-residual", "start the last BatchNorm scale of each block at 0 (DLE starts it at 1.0)",
                  False, flag_kind="switch"),)


def build(config, num_classes: int, data_format: str):
    from benchmarks.rn50.model import resnet50

    return resnet50(num_classes, data_format, zero_init_residual=config.model_options["zero_init_residual"])


SPEC = register(ModelSpec(name="rn50", title="ResNet50 v1.5", build=build, backends_cpu=["paddle-inference"],
                          backends_gpu=["paddle-inference", "paddle-trt", "tensorrt"], gpu_batch=256, recipe=DLE_RN50,
                          options=OPTIONS, recorded=("zero_init_residual",), listed=0))
