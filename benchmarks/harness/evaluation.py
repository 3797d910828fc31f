"""The eval pass after training, as DLE's ResNet50 training does: top-1/top-5 of the model just trained.

Why: a training benchmark that never evaluates cannot tell a fast run from a broken one. With
--eval-data the trained model classifies that ImageNet-style validation folder (DALI, resize the
short side to 256/224 of the image size, centre crop, DLE's eval transform) and the result holds
its top-1/top-5; the accuracy gates apply only then. Without it, a synthetic smoke evaluation runs
the same code on random images and labels, and says so: its accuracy means nothing.
"""

from collections.abc import Callable, Iterator

from benchmarks.harness.run_config import RunConfig

SYNTHETIC_BATCHES = 2
SYNTHETIC_NOTE = "synthetic: a smoke evaluation on random images and labels (proves the eval pass runs; the " \
                 "accuracy means nothing); give --eval-data DIR for top-1/top-5"


def label_rank(row: list[float], label: int) -> int:
    """How many classes score at least as high as the label's (ties count against it: a constant output is no hit)."""
    mine = row[label]
    return sum(1 for v in row if v >= mine) - 1


def evaluate(predict: Callable, batches: Iterator, images: int) -> dict:
    """top-1/top-5 (per cent) over the first `images` images of `batches` (a last partial batch is cut to what
    is left)."""
    seen = top1 = top5 = 0
    while seen < images:
        x, y = next(batches)
        logits = predict(x)
        rows = (logits.numpy() if hasattr(logits, "numpy") else logits).tolist()
        labels = [int(v) for v in (y.numpy() if hasattr(y, "numpy") else y).reshape(-1).tolist()]
        take = min(len(labels), images - seen)
        ranks = [label_rank(row, label) for row, label in zip(rows[:take], labels[:take], strict=True)]
        top1 += sum(r < 1 for r in ranks)
        top5 += sum(r < 5 for r in ranks)
        seen += take
    return {"top1": 100 * top1 / seen, "top5": 100 * top5 / seen, "images": seen}  # per cent, as bench-hgnet's


def for_run(config: RunConfig) -> Callable[[Callable], dict]:
    """The run's eval pass: predict -> its figures, on --eval-data, else the synthetic smoke one."""

    def on_folder(predict: Callable) -> dict:
        from benchmarks.harness import data

        images = data.count_images(str(config.eval_data))
        if config.eval_limit:
            images = min(images, config.eval_limit)
        batches = data.dali(str(config.eval_data), config.batch_size, config.image_size, config.data_format,
                            gpu=config.gpu, train=False, seed=config.seed)
        return {**evaluate(predict, batches, images), "data": str(config.eval_data)}

    def synthetic(predict: Callable) -> dict:
        from benchmarks.harness import data

        batches = data.synthetic(config.batch_size, config.image_size, config.num_classes, config.data_format,
                                 config.seed + 1)
        images = config.batch_size * (1 if config.smoke else SYNTHETIC_BATCHES)
        return {**evaluate(predict, batches, images), "data": SYNTHETIC_NOTE}

    return on_folder if config.eval_data else synthetic


def gated(config: RunConfig, results: dict) -> bool:
    """Do accuracy gates apply? Only to an evaluation on real data (a synthetic one's accuracy means nothing)."""
    return "eval" in results and bool(config.eval_data)
