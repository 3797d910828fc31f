"""Check the harness's throughput against an independent stopwatch on the same training steps.

Runs the same ResNet50 v1.5 training steps twice: once through the harness (StepTimer, per-step
timing, logging) and once as a bare loop timed as a whole with time.perf_counter, and prints both
throughputs and their ratio (the target is agreement within 3 %).

  python -m benchmarks.rn50.bench_overhead [--steps 10] [--batch-size 16] [--image-size 128]
"""

import argparse
import time

import paddle

from benchmarks.harness.data import synthetic
from benchmarks.harness.timing import StepTimer
from benchmarks.rn50.model import resnet50


def make_step(batch: int, image_size: int):
    model = resnet50(1000)
    opt = paddle.optimizer.Momentum(0.01, momentum=0.875, parameters=model.parameters())
    data = synthetic(batch, image_size, 1000, "NCHW")

    def step(_i: int = 0) -> float:
        x, y = next(data)
        loss = paddle.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return float(loss)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=128)
    args = parser.parse_args()
    step = make_step(args.batch_size, args.image_size)
    harness = StepTimer(args.warmup, args.steps, args.batch_size, phase="train").run(step, lambda *a: None).throughput
    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    bare = args.batch_size * args.steps / (time.perf_counter() - start)
    print(f"harness {harness:.3f} img/s, bare loop {bare:.3f} img/s, harness / bare = {harness / bare:.4f} "
          f"({abs(harness / bare - 1) * 100:.2f} % apart; target: within 3 %)")


if __name__ == "__main__":
    main()
