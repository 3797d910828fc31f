"""Input pipelines for the benchmarks: synthetic tensors, DALI, and Paddle's DataLoader.

DALI reads an ImageNet-style folder (one sub-folder per class), decodes ("mixed" nvJPEG on GPUs,
CPU decoder otherwise), random-resized-crops, flips and normalises. The Paddle DataLoader path does
the same with paddle.vision transforms, for comparison. Synthetic data is one random batch on the
device, reused each step (the DLE "synthetic" mode): it measures the model, not the input.
"""

import os
from collections.abc import Iterator

import numpy as np

from benchmarks.harness import dali_compat
from ngc_common.errors import InputError

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")


def count_images(root: str) -> int:
    """The images of an ImageNet-style folder (what fn.readers.file reads: one sub-folder per class)."""
    return sum(1 for _, _, files in os.walk(root) for name in files if name.lower().endswith(IMAGE_SUFFIXES))


def synthetic(batch: int, image_size: int, num_classes: int, data_format: str, seed: int = 0) -> Iterator:
    import paddle

    rng = np.random.default_rng(seed)
    shape = [batch, 3, image_size, image_size] if data_format == "NCHW" else [batch, image_size, image_size, 3]
    x = paddle.to_tensor(rng.normal(size=shape).astype("float32"))
    y = paddle.to_tensor(rng.integers(0, num_classes, size=[batch, 1]).astype("int64"))
    while True:
        yield x, y


def dali(root: str, batch: int, image_size: int, data_format: str, gpu: bool, train: bool = True,
         threads: int | None = None, seed: int = 0, shard: tuple[int, int] = (0, 1)) -> Iterator:
    """Batches from a DALI pipeline over an ImageNet-style folder, as Paddle tensors (DALI 1.34 or 2.4: the
    differences are dali_compat's)."""
    import paddle
    from nvidia.dali import fn, pipeline_def, types

    threads = threads or max(1, min(4, os.cpu_count() or 1))
    layout = "CHW" if data_format == "NCHW" else "HWC"

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0 if gpu else None, seed=seed)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=train, shard_id=shard[0],
                                        num_shards=shard[1], name="reader")
        if train:
            images = fn.decoders.image_random_crop(jpegs, device="mixed" if gpu else "cpu", output_type=types.RGB,
                                                   random_area=[0.08, 1.0], random_aspect_ratio=[0.75, 1.333])
            images = fn.resize(images, resize_x=image_size, resize_y=image_size)
            mirror = fn.random.coin_flip(probability=0.5)
        else:
            images = fn.decoders.image(jpegs, device="mixed" if gpu else "cpu", output_type=types.RGB)
            images = fn.resize(images, resize_shorter=int(image_size * 256 / 224))
            mirror = 0
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout=layout,
                                          crop=(image_size, image_size), mean=[m * 255 for m in MEAN],
                                          std=[s * 255 for s in STD], mirror=mirror)
        return images, labels

    p = dali_compat.built(pipe())
    if gpu:
        from nvidia.dali.plugin.paddle import DALIGenericIterator, LastBatchPolicy

        last = LastBatchPolicy.DROP if train else LastBatchPolicy.PARTIAL  # evaluation sees every image
        epochs = DALIGenericIterator([p], ["image", "label"], reader_name="reader", last_batch_policy=last,
                                     auto_reset=True)
        while True:  # auto_reset restarts the reader at each epoch's end: loop like the CPU path
            empty = True
            for data in epochs:
                empty = False
                yield dali_compat.to_paddle(data[0]["image"]), dali_compat.to_paddle(data[0]["label"]).astype("int64")
            if empty:
                raise InputError(f"--data {root}: fewer images than one batch of {batch} per GPU; fix: "
                                 "lower --batch-size or add images")
    while True:
        images, labels = p.run()
        yield (paddle.to_tensor(np.array(images.as_tensor())),
               paddle.to_tensor(np.array(labels.as_tensor()).astype("int64").reshape(-1, 1)))


def paddle_loader(root: str, batch: int, image_size: int, data_format: str, workers: int | None = None) -> Iterator:
    """Batches from paddle.io.DataLoader over the same folder (PIL decode + paddle.vision transforms)."""
    import paddle
    from paddle.vision import transforms as T
    from paddle.vision.datasets import DatasetFolder

    transform = T.Compose([T.RandomResizedCrop(image_size), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize(mean=MEAN, std=STD)])
    dataset = DatasetFolder(root, transform=transform)
    wanted, workers = workers, dataloader_workers(workers)
    if workers == 0 and wanted != 0:
        print(f"note: /dev/shm is {shm_bytes() // 2**20} MB, too small for DataLoader worker processes; loading in "
              "the main process (start the container with --ipc=host or --shm-size=1g to use workers)")
    loader = paddle.io.DataLoader(dataset, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers)
    while True:
        epoch = iter(loader)
        try:
            for images, labels in epoch:
                if data_format == "NHWC":
                    images = images.transpose([0, 2, 3, 1])
                yield images, labels.reshape([-1, 1]).astype("int64")
        finally:  # on close(): stop the workers now, before the caller may remove the folder they read
            shutdown = getattr(epoch, "_try_shutdown_all", None)  # Paddle's iterators have no public close
            if shutdown is not None:
                shutdown()


SHM_FOR_WORKERS = 512 * 2**20


def dataloader_workers(requested: int | None) -> int:
    """Worker processes the DataLoader can use here: none when /dev/shm is too small for them."""
    wanted = requested if requested is not None else min(4, os.cpu_count() or 1)
    return wanted if shm_bytes() >= SHM_FOR_WORKERS else 0


def shm_bytes() -> int:
    try:
        st = os.statvfs("/dev/shm")
        return st.f_blocks * st.f_frsize
    except OSError:
        return 0


def make_image_folder(root: str, classes: int = 4, per_class: int = 16, size: tuple[int, int] = (300, 400),
                      signal: bool = True, seed: int = 0) -> str:
    """Write an ImageNet-style folder of JPEGs. With `signal`, class k is brighter in colour channel k % 3
    and striped by k // 3, so a model can learn it (for convergence checks)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for k in range(classes):
        folder = os.path.join(root, f"class_{k:03d}")
        os.makedirs(folder, exist_ok=True)
        for i in range(per_class):
            pixels = rng.integers(0, 120, size=(*size, 3)).astype(np.uint8)
            if signal:
                pixels[..., k % 3] = np.clip(pixels[..., k % 3].astype(int) + 120, 0, 255)
                if k // 3:
                    pixels[:: 2 * (k // 3 + 1)] = 255
            Image.fromarray(pixels).save(os.path.join(folder, f"{i:04d}.jpg"), quality=90)
    return root
