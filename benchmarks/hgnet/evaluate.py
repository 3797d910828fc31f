"""--classify and the accuracy gate: load PaddleClas weights, classify images, top-1/top-5 on a folder."""

import os
from pathlib import Path

import numpy as np

from benchmarks.harness.data import IMAGE_SUFFIXES
from benchmarks.hgnet.model import pphgnet
from benchmarks.hgnet.preprocess import DEPLOY_RESIZE_SHORT, EVAL_RESIZE_SHORT, preprocess, preprocess_eval, top_k
from ngc_common.errors import InputError


def load_model(variant: str, weights: str | None, data_format: str = "NCHW"):
    """The model in eval mode; with weights, every key of the file must match a parameter by name."""
    import paddle

    model = pphgnet(variant, 1000, data_format)
    if weights:
        state = paddle.load(weights)
        own = model.state_dict()
        missing = sorted(set(own) - set(state))
        unexpected = sorted(set(state) - set(own))
        if missing or unexpected:
            raise InputError(f"{weights} does not fit PP-HGNet {variant}: {len(missing)} missing "
                             f"(e.g. {missing[:2]}), {len(unexpected)} unexpected (e.g. {unexpected[:2]}); "
                             f"fix: pass the PPHGNet_{variant} weights or the matching --model")
        shapes = [k for k in own if tuple(own[k].shape) != tuple(state[k].shape)]
        if shapes:
            raise InputError(f"{weights}: shape mismatch for {shapes[0]}; fix: pass PPHGNet_{variant} weights")
        model.set_state_dict(state)
    model.eval()
    return model


def classify(paths: list[str], variant: str, weights: str | None) -> int:
    import paddle

    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        raise InputError(f"--classify {missing[0]}: no such file; fix: pass image files")
    model = load_model(variant, weights)
    if not weights:
        print(f"note: PP-HGNet {variant} with random weights (no --weights): the labels below come from the "
              "ImageNet-1k map but carry no meaning; pass --weights PPHGNet_*_pretrained.pdparams")
    print(f"note: deploy preprocessing (short side {DEPLOY_RESIZE_SHORT}, bilinear, centre crop 224), as PaddleClas's "
          f"inference config; the accuracy gate uses the evaluation one ({EVAL_RESIZE_SHORT[variant]}, bicubic)")
    for path in paths:
        with paddle.no_grad():
            logits = model(paddle.to_tensor(preprocess(path))).numpy()
        print(f"{path}:")
        for rank, (index, label, prob) in enumerate(top_k(logits, 5), start=1):
            print(f"  {rank}. {label} (class {index}) {prob:.4f}")
    return 0


def accuracy(folder: str, variant: str, weights: str, batch: int = 32, limit: int | None = None) -> dict:
    """Top-1/top-5 (%) on an ImageNet-style validation folder (class sub-folders in synset order)."""
    import paddle

    classes = sorted(d.name for d in Path(folder).iterdir() if d.is_dir())
    if len(classes) != 1000:
        raise InputError(f"--eval-data {folder} has {len(classes)} class folders, not 1000; fix: mount "
                         "the ImageNet-1k validation set in class sub-folders")
    items = [(str(p), label) for label, c in enumerate(classes) for p in sorted((Path(folder) / c).iterdir())
             if p.suffix.lower() in IMAGE_SUFFIXES][:limit]
    model = load_model(variant, weights)
    top1 = top5 = 0
    for start in range(0, len(items), batch):
        chunk = items[start:start + batch]
        x = np.concatenate([preprocess_eval(p, variant) for p, _ in chunk])
        with paddle.no_grad():
            logits = model(paddle.to_tensor(x)).numpy()
        best = np.argsort(-logits, axis=1)[:, :5]
        labels = np.array([label for _, label in chunk])
        top1 += int((best[:, 0] == labels).sum())
        top5 += int((best == labels[:, None]).any(axis=1).sum())
    n = len(items)
    return {"images": n, "top1": 100 * top1 / n, "top5": 100 * top5 / n, "workers": os.cpu_count(),
            "preprocessing": f"short side {EVAL_RESIZE_SHORT[variant]}, bicubic, centre crop 224 (PaddleClas PPHGNet)"}
