"""DALI against Paddle's DataLoader on the same folder of JPEGs: images/s of each and their ratio.

Both decode, random-resized-crop, flip and normalise to the same size on the CPU here (DALI uses
"mixed" GPU decoding when --gpu). Generates the folder unless --data is given.

  python -m benchmarks.rn50.bench_input [--data DIR] [--batches 20] [--batch-size 32] [--image-size 224]
"""

import argparse
import itertools
import os
import tempfile
import time

from benchmarks.harness.data import dali, dataloader_workers, make_image_folder, paddle_loader


def rate(batches, count: int, batch: int) -> float:
    next(batches)  # first batch: pipeline start-up, not counted
    start = time.perf_counter()
    for _ in itertools.islice(batches, count):
        pass
    return count * batch / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data")
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="threads/processes for both")
    parser.add_argument("--gpu", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.data or make_image_folder(tmp, classes=8, per_class=40, size=(300, 400), signal=False)
        dali_batches = dali(root, args.batch_size, args.image_size, "NCHW", gpu=args.gpu, threads=args.workers)
        loader_batches = paddle_loader(root, args.batch_size, args.image_size, "NCHW", workers=args.workers)
        try:
            d = rate(dali_batches, args.batches, args.batch_size)
            p = rate(loader_batches, args.batches, args.batch_size)
        finally:  # stop both pipelines (DataLoader workers included) before the image folder is removed
            dali_batches.close()
            loader_batches.close()
    print(f"DALI {d:.1f} img/s ({args.workers} threads), Paddle DataLoader {p:.1f} img/s "
          f"({dataloader_workers(args.workers)} worker processes); 400x300 JPEGs -> {args.image_size}px; "
          f"DALI / DataLoader = {d / p:.2f}")


if __name__ == "__main__":
    main()
