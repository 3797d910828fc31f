"""What a model brings to the shared benchmark command: its name, builder, recipe, back ends, options and hooks.

Every hook takes the run's frozen RunConfig (benchmarks.harness.run_config); a model's own options
are Option entries here and reach it as config.model_options[name].
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.harness.recipes import Recipe


@dataclass(frozen=True)
class ModelSpec:
    name: str  # the model's folder under benchmarks/ (bench-<name>)
    title: str
    build: Callable  # build(config, num_classes, data_format) -> paddle.nn.Layer
    backends_cpu: list[str]
    backends_gpu: list[str]
    gpu_batch: int
    recipe: Recipe
    infer_image_size: int | None = None  # inference at this size by default (the reference's), else --image-size
    options: tuple = ()  # run_config.Option entries of the model's own
    recorded: tuple[str, ...] = ()  # which of them result.json's config records
    evaluates_training: bool = True  # an eval pass on the model just trained (DLE's), after each precision
    before_run: Callable[[Any], int | None] = lambda config: None  # e.g. --classify
    extra_results: Callable[[Any], dict] = field(default=lambda config: {})  # e.g. accuracy of given weights
    listed: int = 100  # where the model comes in lists (the docs' tables, --model choices): lower first
