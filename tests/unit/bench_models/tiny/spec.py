"""bench-tiny's model: a two-layer network with an option of its own, registered like rn50 and hgnet."""

from benchmarks.harness.model_registry import register
from benchmarks.harness.model_spec import ModelSpec
from benchmarks.harness.recipes import DLE_RN50
from benchmarks.harness.run_config import Option

OPTIONS = (Option("--width", "hidden channels", 8, type=int),)


def build(config, num_classes: int, data_format: str):
    import paddle

    width = config.model_options["width"]
    return paddle.nn.Sequential(paddle.nn.Conv2D(3, width, 3, data_format=data_format), paddle.nn.ReLU(),
                                paddle.nn.AdaptiveAvgPool2D(1, data_format=data_format), paddle.nn.Flatten(),
                                paddle.nn.Linear(width, num_classes))


SPEC = register(ModelSpec(name="tiny", title="Tiny test net", build=build, backends_cpu=["paddle-inference"],
                          backends_gpu=["paddle-inference"], gpu_batch=32, recipe=DLE_RN50, options=OPTIONS,
                          recorded=("width",)))
