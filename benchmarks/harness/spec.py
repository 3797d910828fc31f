"""What a model brings to the shared benchmark command: its name, builder, back ends and hooks."""

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class ModelSpec:
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
