"""The upstream training recipes: the learning rate at each step (warm-up reached, scaled by the global batch),
what a run's TrainConfig takes from them, and the eval pass's top-1/top-5."""

import math
import sys
import types

import pytest

from benchmarks.harness import evaluation, recipes, training
from benchmarks.harness.recipes import DLE_RN50, IMAGENET_TRAIN_IMAGES, PADDLECLAS_PPHGNET, schedule
from benchmarks.harness.run_config import Hardware, requested, resolve
from benchmarks.harness.run_loop import train_config
from benchmarks.hgnet.spec import SPEC as HGNET
from benchmarks.rn50.spec import SPEC as RN50


def test_dle_rn50_on_8_gpus_x_256_warms_up_to_2048_then_decays_to_0() -> None:
    s = schedule(DLE_RN50.lr, DLE_RN50.lr_batch, 8 * 256, DLE_RN50.warmup_epochs, DLE_RN50.epochs,
                 IMAGENET_TRAIN_IMAGES)
    per_epoch = IMAGENET_TRAIN_IMAGES // 2048
    assert s.peak == pytest.approx(2.048) and s.warmup_steps == 5 * per_epoch and s.total_steps == 90 * per_epoch
    assert s.lr(0) == 0.0  # linear warm-up from 0
    assert s.lr(s.warmup_steps // 2) == pytest.approx(2.048 * (s.warmup_steps // 2) / s.warmup_steps)
    assert s.lr(s.warmup_steps) == pytest.approx(2.048)  # the end of the warm-up is the peak
    assert s.lr(s.warmup_steps - 1) < s.lr(s.warmup_steps)
    middle = s.warmup_steps + (s.total_steps - s.warmup_steps) // 2
    assert s.lr(middle) == pytest.approx(1.024, rel=1e-3)  # cosine: half way down at half the decay
    assert s.lr(s.total_steps) == pytest.approx(0.0, abs=1e-12)


def test_pphgnet_reaches_05_at_its_reference_batch_and_scales_linearly() -> None:
    reference = schedule(PADDLECLAS_PPHGNET.lr, PADDLECLAS_PPHGNET.lr_batch, 128 * 8, 5, 600, IMAGENET_TRAIN_IMAGES)
    assert reference.peak == pytest.approx(0.5) and reference.lr(reference.warmup_steps) == pytest.approx(0.5)
    one_gpu = schedule(PADDLECLAS_PPHGNET.lr, PADDLECLAS_PPHGNET.lr_batch, 128, 5, 600, IMAGENET_TRAIN_IMAGES)
    assert one_gpu.peak == pytest.approx(0.0625)


def test_step_decay_divides_by_ten_at_each_third() -> None:
    s = recipes.Schedule(peak=1.0, warmup_steps=0, total_steps=90, kind="step")
    assert [s.lr(step) for step in (0, 29, 30, 59, 60, 89)] == pytest.approx([1, 1, 0.1, 0.1, 0.01, 0.01])


def test_a_run_takes_its_recipe_and_the_global_batch_from_the_config() -> None:
    config = resolve(requested(RN50, []), RN50, Hardware(0, 2, "test"))
    cfg = train_config(config, RN50, "fp32", IMAGENET_TRAIN_IMAGES)
    assert (cfg.lr, cfg.lr_batch, cfg.momentum, cfg.weight_decay, cfg.label_smoothing) == (
        0.256, 256, 0.875, 3.0517578125e-05, 0.1)
    assert training.lr_schedule(cfg, world=8).peak == pytest.approx(0.256 * 16 * 8 / 256)  # the global batch
    hgnet = train_config(resolve(requested(HGNET, []), HGNET, Hardware(0, 2, "test")), HGNET, "fp32", 1000)
    assert (hgnet.lr, hgnet.lr_batch, hgnet.momentum, hgnet.weight_decay, hgnet.bn_weight_decay) == (
        0.5, 1024, 0.9, 4e-05, True)


def test_the_warm_up_is_reached_within_a_run_on_a_small_data_folder() -> None:
    """128 images at batch 16: 8 steps an epoch, so one warm-up epoch ends inside a 24-step run."""
    config = resolve(requested(RN50, ["--lr-warmup-epochs", "1", "--steps", "24", "--warmup", "0", "--epochs",
                                      "3"]), RN50, Hardware(0, 2, "test"))
    s = training.lr_schedule(train_config(config, RN50, "fp32", train_images=128), world=1)
    assert (s.warmup_steps, s.total_steps) == (8, 24)
    assert [s.lr(step) for step in (0, 4, 8)] == pytest.approx([0.0, s.peak / 2, s.peak])
    assert s.lr(23) < s.lr(8)


def test_the_default_run_is_inside_the_recipes_warm_up() -> None:
    config = resolve(requested(RN50, []), RN50, Hardware(0, 2, "test"))
    s = training.lr_schedule(train_config(config, RN50, "fp32", IMAGENET_TRAIN_IMAGES), world=1)
    steps = config.warmup + config.steps
    assert s.warmup_steps > steps and 0 < s.lr(steps - 1) < s.peak


def test_paddles_scheduler_is_lambda_decay_over_the_same_schedule(monkeypatch) -> None:
    """training.scheduler hands Paddle the peak and Schedule.factor: LambdaDecay's lr is peak x factor(step)."""
    made = {}

    class LambdaDecay:  # Paddle's contract: lr = learning_rate * lr_lambda(last_epoch)
        def __init__(self, learning_rate: float, lr_lambda) -> None:
            made.update(peak=learning_rate, fn=lr_lambda)

    fake = types.ModuleType("paddle")
    fake.optimizer = types.SimpleNamespace(lr=types.SimpleNamespace(LambdaDecay=LambdaDecay))
    monkeypatch.setitem(sys.modules, "paddle", fake)
    s = recipes.Schedule(peak=2.0, warmup_steps=10, total_steps=110)
    training.scheduler(s)
    assert made["peak"] == 2.0 and [made["peak"] * made["fn"](i) for i in (0, 5, 10)] == [0.0, 1.0, 2.0]


class Array(list):
    """The two calls evaluation makes on a Paddle tensor / NumPy array."""

    def numpy(self) -> "Array":
        return self

    def tolist(self) -> list:
        return list(self)

    def reshape(self, *_shape: int) -> "Array":
        return Array(v for row in self for v in (row if isinstance(row, list) else [row]))


def test_top1_top5_count_ties_against_the_label_and_cut_the_last_batch() -> None:
    logits = Array([[0.0] * 10 for _ in range(4)])
    for row, best in zip(logits, (3, 5, 1, 2), strict=True):
        row[best] = 9.0
        row[7] = 5.0  # everyone's second choice
    labels = Array([[3], [7], [0], [2]])
    batches = iter([(None, labels), (None, labels)])
    found = evaluation.evaluate(lambda _x: logits, batches, images=6)
    # batch 1: hits top-1 on rows 0 and 3; row 1's label is second (top-5); row 2's ties with 7 others: no hit.
    assert found["images"] == 6
    assert found["top1"] == pytest.approx(100 * (2 + 1) / 6) and found["top5"] == pytest.approx(100 * (3 + 2) / 6)
    constant = evaluation.evaluate(lambda _x: Array([[1.0] * 10]), iter([(None, Array([[4]]))]), images=1)
    assert constant["top1"] == 0 and constant["top5"] == 0


def test_without_eval_data_the_eval_is_a_synthetic_smoke_one_and_gates_nothing() -> None:
    config = resolve(requested(RN50, []), RN50, Hardware(0, 2, "test"))
    assert evaluation.for_run(config).__name__ == "synthetic"
    assert not evaluation.gated(config, {"eval": {"fp32": {"top1": 0.1}}})
    assert "synthetic" in evaluation.SYNTHETIC_NOTE and "means nothing" in evaluation.SYNTHETIC_NOTE


def test_with_eval_data_the_folder_is_evaluated_and_gated(tmp_path) -> None:
    (tmp_path / "class_000").mkdir()
    config = resolve(requested(RN50, ["--eval-data", str(tmp_path)]), RN50, Hardware(0, 2, "test"))
    assert evaluation.for_run(config).__name__ == "on_folder"
    assert evaluation.gated(config, {"eval": {}}) and not evaluation.gated(config, {})
    assert math.isclose(config.lr, 0.256)


def test_the_report_shows_the_eval_pass_with_its_data() -> None:
    from benchmarks.harness.report import eval_lines

    rn50 = eval_lines({"fp32": {"top1": 12.5, "top5": 50.0, "images": 32, "data": evaluation.SYNTHETIC_NOTE}})
    assert "| fp32 | 12.50 | 50.00 | 32 | synthetic: a smoke evaluation" in "\n".join(rn50)
    hgnet = eval_lines({"images": 100, "top1": 81.0, "top5": 95.5, "workers": 2})
    assert "| weights | 81.00 | 95.50 | 100 | - |" in hgnet and eval_lines({}) == []
