"""The upstream training recipes the benchmarks follow, and the learning rate each gives at every step.

Why: a throughput figure is only comparable with the reference's when the training it times is the
reference's. bench-rn50 trains with NVIDIA DeepLearningExamples' PaddlePaddle ResNet50 v1.5 recipe,
bench-hgnet with PaddleClas's PP-HGNet one; each figure below is written here once, with the file it
comes from, and both the run config's defaults and docs/benchmarks.md read it from here.

The schedule: the peak rate is `lr` for `lr_batch` images per step, scaled linearly with the global
batch (per-device batch x devices); it rises linearly from 0 over `warmup_epochs`, then decays
(cosine to 0, or step: x0.1 at each third) over the remaining epochs. An epoch is the training set
divided by the global batch: the --data folder's images, or ImageNet-1k's on synthetic data (the
recipe's own data set), so a short benchmark run sits where the recipe's run would be at that step.
"""

import math
from dataclasses import dataclass

IMAGENET_TRAIN_IMAGES = 1_281_167  # ImageNet-1k (ILSVRC2012) training set: the recipes' data set


@dataclass(frozen=True)
class Recipe:
    source: str  # the upstream file the figures come from
    lr: float  # peak learning rate for a global batch of lr_batch
    lr_batch: int
    momentum: float
    weight_decay: float
    label_smoothing: float
    warmup_epochs: int
    epochs: int
    schedule: str  # cosine | step
    bn_weight_decay: bool  # weight decay on BatchNorm scales and shifts too


DLE_RN50 = Recipe(
    source="NVIDIA DeepLearningExamples PaddlePaddle/Classification/RN50v1.5 (README, train.py defaults)",
    lr=0.256, lr_batch=256, momentum=0.875, weight_decay=3.0517578125e-05, label_smoothing=0.1,
    warmup_epochs=5, epochs=90, schedule="cosine", bn_weight_decay=False)

PADDLECLAS_PPHGNET = Recipe(
    source="PaddleClas ppcls/configs/ImageNet/PPHGNet/PPHGNet_*.yaml (Momentum, Cosine, L2, CELoss epsilon)",
    lr=0.5, lr_batch=128 * 8, momentum=0.9, weight_decay=4e-05, label_smoothing=0.1,
    warmup_epochs=5, epochs=600, schedule="cosine", bn_weight_decay=True)


@dataclass(frozen=True)
class Schedule:
    """The learning rate at each optimizer step of a run (step 0 is the first update)."""

    peak: float
    warmup_steps: int
    total_steps: int
    kind: str = "cosine"

    def factor(self, step: int) -> float:
        """lr(step) / peak: Paddle's LambdaDecay multiplies the peak by this (one definition for both)."""
        if step < self.warmup_steps:
            return step / self.warmup_steps  # linear from 0, as DLE's and PaddleClas's warm-up
        decay_steps = max(1, self.total_steps - self.warmup_steps)
        done = min(step - self.warmup_steps, decay_steps) / decay_steps
        if self.kind == "step":
            return 0.1 ** min(2, int(done * 3))
        return 0.5 * (1 + math.cos(math.pi * done))

    def lr(self, step: int) -> float:
        return self.peak * self.factor(step)


def peak_lr(lr: float, lr_batch: int, global_batch: int) -> float:
    """The linear scaling rule: `lr` for `lr_batch` images per step, at `global_batch` images per step."""
    return lr * global_batch / lr_batch


def steps_per_epoch(train_images: int, global_batch: int) -> int:
    return max(1, train_images // global_batch)  # the readers drop the last partial batch


def schedule(lr: float, lr_batch: int, global_batch: int, warmup_epochs: float, epochs: int, train_images: int,
             kind: str = "cosine") -> Schedule:
    """The run's schedule: the recipe's epochs in steps of this global batch."""
    per_epoch = steps_per_epoch(train_images, global_batch)
    return Schedule(peak_lr(lr, lr_batch, global_batch), round(warmup_epochs * per_epoch), epochs * per_epoch, kind)
