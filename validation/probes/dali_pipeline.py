"""A DALI pipeline over a folder of generated JPEGs: read, decode, random-resized-crop, normalize (JSON).

Usage: dali_pipeline.py [--device cpu|gpu]. cpu: CPU operators and device_id=None (no GPU needed);
gpu: "mixed" (nvJPEG) decoding and GPU operators on device 0.
The images are JPEGs written with Pillow; the dali layer image has no Pillow yet (a later layer or
the suite brings it), so there they are binary PPMs (the header written here: three lines, no library
needed), which DALI's decoder reads too. The output says which format ran.
"""

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
from nvidia.dali import fn, pipeline_def, types

try:
    from PIL import Image
except ImportError:
    Image = None

BATCH, SIZE = 4, 64


def make_images(root: Path) -> str:
    rng = np.random.default_rng(0)
    for label in ("a", "b"):
        (root / label).mkdir(parents=True)
        for i in range(4):
            pixels = rng.integers(0, 255, size=(90 + 10 * i, 120, 3), dtype=np.uint8)
            if Image is not None:
                Image.fromarray(pixels).save(root / label / f"{i}.jpg", quality=90)
            else:
                height, width = pixels.shape[:2]
                (root / label / f"{i}.ppm").write_bytes(f"P6\n{width} {height}\n255\n".encode() + pixels.tobytes())
    return "jpeg" if Image is not None else "ppm"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    gpu = args.device == "gpu"
    with tempfile.TemporaryDirectory() as tmp:
        image_format = make_images(Path(tmp))

        @pipeline_def(batch_size=BATCH, num_threads=2, device_id=0 if gpu else None, seed=1)
        def pipe():
            jpegs, labels = fn.readers.file(file_root=tmp, random_shuffle=True, name="reader")
            images = fn.decoders.image(jpegs, device="mixed" if gpu else "cpu", output_type=types.RGB)
            images = fn.random_resized_crop(images, size=(SIZE, SIZE))
            images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                              mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                              std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
                                              mirror=fn.random.coin_flip(probability=0.5))
            return images, labels

        p = pipe()
        p.build()
        images, labels = p.run()
        if gpu:
            images = images.as_cpu()
        array = np.stack([np.array(images.at(i)) for i in range(BATCH)])
        print(json.dumps({"shape": list(array.shape), "labels": [int(np.array(labels.at(i))[0]) for i in range(BATCH)],
                          "finite": bool(np.isfinite(array).all()), "std": float(array.std()),
                          "format": image_format}))


if __name__ == "__main__":
    main()
