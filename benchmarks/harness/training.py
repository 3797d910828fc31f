"""The training benchmark loop shared by the models: optimizer, LR, AMP, ASP, distribution, checkpoints.

Recipe (DLE ResNet50 v1.5 defaults): Momentum 0.875, weight decay 3.0517578125e-05 on every parameter
but BatchNorm's (DLE's `bn_weight_decay` off; `bn_weight_decay=True` decays them too), label
smoothing 0.1, cosine LR with linear warm-up (or step decay). Precisions: fp32 (CPU), tf32 (FP32 math on GPUs,
TF32 tensor cores on Ampere and later), amp (FP16 O1, dynamic loss scaling from 128), amp-o2 (FP16
O2), bf16 (BF16 O1 where the device supports it). ASP prunes to 2:4 with Paddle's ASP API and keeps
the pattern through optimizer steps; it needs the legacy program representation (FLAGS_enable_pir_api=0),
which the command sets before Paddle is imported.
"""

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.harness.timing import StepTimer
from ngc_common.errors import InputError

AMP = {"amp": ("float16", "O1"), "amp-o2": ("float16", "O2"), "bf16": ("bfloat16", "O1")}


@dataclass
class TrainConfig:
    batch_size: int
    image_size: int
    steps: int
    warmup: int
    precision: str = "fp32"
    data_format: str = "NCHW"
    num_classes: int = 1000
    lr: float = 0.256
    lr_schedule: str = "cosine"
    lr_warmup_steps: int = 0
    momentum: float = 0.875
    weight_decay: float = 3.0517578125e-05
    label_smoothing: float = 0.1
    bn_weight_decay: bool = False
    asp: bool = False
    device: str = "cpu"
    checkpoint_dir: str | None = None
    resume: str | None = None
    seed: int = 0


def _scheduler(cfg: TrainConfig, total: int):
    import paddle

    lr = cfg.lr * (cfg.batch_size / 256)
    if cfg.lr_schedule == "step":
        base = paddle.optimizer.lr.StepDecay(lr, step_size=max(1, total // 3), gamma=0.1)
    else:
        base = paddle.optimizer.lr.CosineAnnealingDecay(lr, T_max=max(1, total))
    if cfg.lr_warmup_steps:
        return paddle.optimizer.lr.LinearWarmup(base, cfg.lr_warmup_steps, 0.0, lr)
    return base


def sparsity_24(model) -> dict[str, bool]:
    """For each weight ASP pruned: does it still hold the 2:4 pattern?

    A pruned weight has density 0.5 and a dense one about 1.0; below 0.75 counts as pruned, so a
    pruned weight that lost its pattern in a few places is still checked (and fails).

    Uses Paddle's own check (paddle.incubate.asp.utils.check_sparsity) on the transposed weight, as
    ASP prunes `weight.T` (the k dimension cuSparseLt prunes): groups of 4 run along input channels.
    """
    from paddle.incubate import asp
    from paddle.incubate.asp.utils import check_sparsity

    result = {}
    for name, param in model.named_parameters():
        if param.ndim in (2, 4) and name.endswith("weight") and asp.calculate_density(param.numpy()) < 0.75:
            result[name] = bool(check_sparsity(param.numpy().T, n=2, m=4))
    return result


def exempt_batchnorm_from_weight_decay(model) -> int:
    """Give BatchNorm scales and shifts their own zero L2 decay (DLE's `bn_weight_decay` off): in Paddle a
    parameter's own regularizer overrides the optimizer's. Per parameter, not per optimizer group, because
    Paddle's ASP `decorate` takes no parameter groups. Returns how many parameters were exempted."""
    import paddle
    from paddle import nn

    norms = (nn.BatchNorm, nn.BatchNorm1D, nn.BatchNorm2D, nn.BatchNorm3D, nn.SyncBatchNorm)
    exempt = [p for layer in model.sublayers() if isinstance(layer, norms) for p in layer.parameters()]
    for param in exempt:
        param.regularizer = paddle.regularizer.L2Decay(0.0)
    return len(exempt)


def train(build_model: Callable, batches: Iterator, cfg: TrainConfig, log: Callable[[str, dict], None]) -> dict:
    """Train for warm-up + measured steps; return throughput, step latency and the loss curve."""
    import paddle
    import paddle.distributed as dist

    paddle.seed(cfg.seed)
    world = dist.get_world_size() if dist.is_initialized() else 1
    model = build_model(num_classes=cfg.num_classes, data_format=cfg.data_format)
    total = cfg.warmup + cfg.steps
    scheduler = _scheduler(cfg, total)
    if not cfg.bn_weight_decay:
        exempt_batchnorm_from_weight_decay(model)
    optimizer = paddle.optimizer.Momentum(learning_rate=scheduler, momentum=cfg.momentum,
                                          parameters=model.parameters(),
                                          weight_decay=paddle.regularizer.L2Decay(cfg.weight_decay))
    start_step = 0
    if cfg.resume:
        start_step = load_checkpoint(cfg.resume, model, optimizer)
        log("checkpoint", {"resumed_from": cfg.resume, "step": start_step})
    if cfg.asp:
        from paddle.incubate import asp

        optimizer = asp.decorate(optimizer)
        asp.prune_model(model, n=2, m=4)
    scaler = None
    dtype, level = AMP.get(cfg.precision, (None, None))
    if dtype is not None:
        if level == "O2":
            model, optimizer = paddle.amp.decorate(models=model, optimizers=optimizer, level="O2", dtype=dtype)
        if dtype == "float16":
            scaler = paddle.amp.GradScaler(init_loss_scaling=128.0, use_dynamic_loss_scaling=True)
    if world > 1:
        model = paddle.DataParallel(model)
    def loss_fn(logits, labels):
        # One-hot + label_smooth + soft-label CE: CrossEntropyLoss(label_smoothing=) has no int64 CPU kernel.
        onehot = paddle.nn.functional.one_hot(labels.reshape([-1]), cfg.num_classes)
        soft = paddle.nn.functional.label_smooth(onehot, epsilon=cfg.label_smoothing)
        return paddle.nn.functional.cross_entropy(logits.astype("float32"), soft, soft_label=True)

    model.train()
    losses: list[float] = []

    def step(i: int) -> float:
        images, labels = next(batches)
        with paddle.amp.auto_cast(enable=dtype is not None, level=level or "O1", dtype=dtype or "float16"):
            loss = loss_fn(model(images), labels)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.minimize(optimizer, loss)
        else:
            loss.backward()
            optimizer.step()
        optimizer.clear_grad()
        scheduler.step()
        value = float(loss)  # copies to the host: the step's device work is finished when this returns
        losses.append(value)
        return value

    def on_step(i: int, seconds: float, loss: float) -> None:
        phase = "warmup" if i < cfg.warmup else "train"
        log(f"{phase} {start_step + i + 1}/{start_step + total}",
            {"loss": loss, "step_ms": seconds * 1000, "ips": cfg.batch_size * world / seconds,
             "lr": float(scheduler.get_lr())})

    sync = paddle.device.cuda.synchronize if cfg.device == "gpu" else None
    timing = StepTimer(cfg.warmup, cfg.steps, cfg.batch_size * world, sync=sync).run(step, on_step)
    if cfg.checkpoint_dir and (not dist.is_initialized() or dist.get_rank() == 0):
        save_checkpoint(cfg.checkpoint_dir, model, optimizer, start_step + total, cfg)
    head = losses[: max(1, min(5, len(losses) // 4))]
    tail = losses[-max(1, min(5, len(losses) // 4)):]
    return {**timing.summary(), "loss_first": sum(head) / len(head), "loss_last": sum(tail) / len(tail),
            "loss_finite": all(math.isfinite(v) for v in losses), "losses": losses, "world_size": world}


def save_checkpoint(folder: str, model, optimizer, step: int, cfg: TrainConfig) -> Path:
    import paddle

    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    layer = getattr(model, "_layers", model)
    paddle.save(layer.state_dict(), str(path / "model.pdparams"))
    paddle.save(optimizer.state_dict(), str(path / "model.pdopt"))
    (path / "checkpoint.json").write_text(json.dumps({"step": step, "config": asdict(cfg)}, indent=2))
    return path


def load_checkpoint(folder: str, model, optimizer) -> int:
    import paddle

    path = Path(folder)
    meta = path / "checkpoint.json"
    if not meta.exists():
        raise InputError(f"--resume {folder}: no checkpoint.json there; fix: point at a --checkpoint-dir "
                         "of an earlier run")
    model.set_state_dict(paddle.load(str(path / "model.pdparams")))
    optimizer.set_state_dict(paddle.load(str(path / "model.pdopt")))
    return int(json.loads(meta.read_text())["step"])
