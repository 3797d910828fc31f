"""A few training steps of a small network on a learnable signal; the loss must go down (JSON).

Usage: train_steps.py [--device cpu|gpu] [--amp]. With --amp the steps run under Paddle AMP O1
(fp16 with dynamic loss scaling), which needs a GPU.
"""

import argparse
import json

import numpy as np
import paddle


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    paddle.set_device("gpu:0" if args.device == "gpu" else "cpu")
    paddle.seed(7)
    rng = np.random.default_rng(7)
    teacher = rng.normal(size=(32, 4)).astype("float32")
    x = rng.normal(size=(512, 32)).astype("float32")
    y = (x @ teacher).argmax(axis=1).astype("int64")

    model = paddle.nn.Sequential(paddle.nn.Linear(32, 64), paddle.nn.ReLU(), paddle.nn.Linear(64, 4))
    opt = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=model.parameters())
    scaler = paddle.amp.GradScaler(init_loss_scaling=128.0) if args.amp else None
    xs, ys = paddle.to_tensor(x), paddle.to_tensor(y)
    losses = []
    for step in range(args.steps):
        batch = slice((step * 64) % 512, (step * 64) % 512 + 64)
        with paddle.amp.auto_cast(enable=args.amp, level="O1"):
            loss = paddle.nn.functional.cross_entropy(model(xs[batch]), ys[batch])
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.minimize(opt, loss)
        else:
            loss.backward()
            opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    first, last = float(np.mean(losses[:5])), float(np.mean(losses[-5:]))
    print(json.dumps({"first": first, "last": last, "steps": args.steps, "amp": args.amp,
                      "finite": bool(np.all(np.isfinite(losses)))}))


if __name__ == "__main__":
    main()
