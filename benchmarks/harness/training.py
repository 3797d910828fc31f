"""The training benchmark loop shared by the models: optimizer, LR, AMP, ASP, distribution, checkpoints, eval.

Recipe: the model's (benchmarks.harness.recipes: DLE's for ResNet50 v1.5, PaddleClas's for PP-HGNet):
Momentum, L2 weight decay (on BatchNorm parameters too only with `bn_weight_decay`), label smoothing,
a learning rate scaled linearly with the global batch, linear warm-up then cosine (or step) decay,
the schedule's step count from the recipe's epochs (recipes.schedule). Precisions: fp32 (CPU), tf32 (FP32 math on GPUs,
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
from typing import Any

from benchmarks.harness import data_parallel, library_noise, recipes
from benchmarks.harness.timing import StepTimer
from ngc_common.errors import InputError

AMP = {"amp": ("float16", "O1"), "amp-o2": ("float16", "O2"), "bf16": ("bfloat16", "O1")}


@dataclass(frozen=True)
class TrainConfig:
    """One precision's training run, from the run config (run_loop.train_config); no defaults of its own."""

    batch_size: int
    image_size: int
    steps: int
    warmup: int
    precision: str
    data_format: str
    num_classes: int
    lr: float  # peak for a global batch of lr_batch
    lr_batch: int
    lr_schedule: str
    lr_warmup_epochs: float
    epochs: int
    train_images: int  # one epoch's images: the --data folder's, or ImageNet-1k's on synthetic data
    momentum: float
    weight_decay: float
    label_smoothing: float
    bn_weight_decay: bool
    asp: bool
    device: str
    checkpoint_dir: str | None
    resume: str | None
    seed: int


def lr_schedule(cfg: TrainConfig, world: int) -> recipes.Schedule:
    """The recipe's schedule for this run: peak scaled by the global batch (batch per device x `world`)."""
    return recipes.schedule(cfg.lr, cfg.lr_batch, cfg.batch_size * world, cfg.lr_warmup_epochs, cfg.epochs,
                            cfg.train_images, cfg.lr_schedule)


def scheduler(schedule: recipes.Schedule):
    """Paddle's LambdaDecay over the schedule: lr(step) = peak x schedule.factor(step), stepped once per update."""
    import paddle

    return paddle.optimizer.lr.LambdaDecay(schedule.peak, schedule.factor)


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
    """Train for warm-up + measured steps; return throughput, step latency, the loss curve, the schedule's
    figures, and "predict": images -> FP32 logits of the trained model (eval mode, the training's precision); in a
    data-parallel run also "shard": its first batch's and its parameters' checksums after each step."""
    import paddle
    import paddle.distributed as dist

    library_noise.quiet_batchnorm_note()
    paddle.seed(cfg.seed)
    world = dist.get_world_size() if dist.is_initialized() else 1
    trainee = _Trainee.prepare(build_model, cfg, world, log)
    total = cfg.warmup + cfg.steps
    losses: list[float] = []
    shard: dict = {"param_checksums": []}  # data-parallel runs: what this rank read and held (data_parallel.py)

    def step(i: int) -> float:
        images, labels = next(batches)
        if world > 1 and i == 0:
            shard["data_checksum"] = data_parallel.checksum([images])
        losses.append(trainee.step(images, labels))
        return losses[-1]

    def on_step(i: int, seconds: float, loss: float) -> None:  # outside the timed step
        if world > 1:
            trained = (p for p in trainee.model.parameters() if not p.stop_gradient)  # BatchNorm statistics too
            shard["param_checksums"].append(data_parallel.checksum(trained))
        phase = "warmup" if i < cfg.warmup else "train"
        log(f"{phase} {trainee.start_step + i + 1}/{trainee.start_step + total}",
            {"loss": loss, "step_ms": seconds * 1000, "ips": cfg.batch_size * world / seconds,
             "lr": float(trainee.lr.get_lr())})

    sync = paddle.device.cuda.synchronize if cfg.device == "gpu" else None
    timing = StepTimer(cfg.warmup, cfg.steps, cfg.batch_size * world, sync=sync, phase="train").run(step, on_step)
    if cfg.checkpoint_dir and (not dist.is_initialized() or dist.get_rank() == 0):
        save_checkpoint(cfg.checkpoint_dir, trainee.model, trainee.optimizer, trainee.start_step + total, cfg)
    result = {**timing.summary(), **_loss_and_schedule(losses, world, trainee.schedule, trainee.start_step + total),
              "predict": trainee.predict}
    if world > 1:
        result["shard"] = shard
    return result


@dataclass
class _Trainee:
    """The model ready to train on this run's ranks: its optimizer (resumed, ASP and AMP applied), the LR scheduler
    and schedule, the loss scaler, and the step it resumes from; one training step and the trained model's predict."""

    model: Any
    optimizer: Any
    lr: Any
    schedule: recipes.Schedule
    scaler: Any
    start_step: int
    cfg: TrainConfig

    @classmethod
    def prepare(cls, build_model: Callable, cfg: TrainConfig, world: int,
                log: Callable[[str, dict], None]) -> "_Trainee":
        """The recipe's optimizer and schedule, a checkpoint resumed, then ASP, AMP and the data-parallel wrap, in
        the order Paddle needs them."""
        import paddle

        model = build_model(num_classes=cfg.num_classes, data_format=cfg.data_format)
        schedule = lr_schedule(cfg, world)
        lr = scheduler(schedule)
        if not cfg.bn_weight_decay:
            exempt_batchnorm_from_weight_decay(model)
        optimizer = paddle.optimizer.Momentum(learning_rate=lr, momentum=cfg.momentum,
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
        model.train()
        return cls(model, optimizer, lr, schedule, scaler, start_step, cfg)

    def _autocast(self):
        import paddle

        dtype, level = AMP.get(self.cfg.precision, (None, None))
        return paddle.amp.auto_cast(enable=dtype is not None, level=level or "O1", dtype=dtype or "float16")

    def _loss(self, logits, labels):
        """One-hot + label_smooth + soft-label CE: CrossEntropyLoss(label_smoothing=) has no int64 CPU kernel."""
        import paddle

        onehot = paddle.nn.functional.one_hot(labels.reshape([-1]), self.cfg.num_classes)
        soft = paddle.nn.functional.label_smooth(onehot, epsilon=self.cfg.label_smoothing)
        return paddle.nn.functional.cross_entropy(logits.astype("float32"), soft, soft_label=True)

    def step(self, images, labels) -> float:
        """One update: forward under the precision's autocast, backward (scaled for FP16), the optimizer and LR
        steps; the loss, copied to the host (the step's device work is finished when this returns)."""
        with self._autocast():
            loss = self._loss(self.model(images), labels)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.minimize(self.optimizer, loss)
        else:
            loss.backward()
            self.optimizer.step()
        self.optimizer.clear_grad()
        self.lr.step()
        return float(loss)

    def predict(self, images):
        """FP32 logits of the trained model, in eval mode and the training's precision."""
        import paddle

        self.model.eval()
        with paddle.no_grad(), self._autocast():
            return self.model(images).astype("float32")


def _loss_and_schedule(losses: list[float], world: int, schedule: recipes.Schedule, steps_done: int) -> dict:
    """The loss curve's ends (a mean of up to 5 steps each) and the schedule's figures, as result.json carries them."""
    head = losses[: max(1, min(5, len(losses) // 4))]
    tail = losses[-max(1, min(5, len(losses) // 4)):]
    return {"loss_first": sum(head) / len(head), "loss_last": sum(tail) / len(tail),
            "loss_finite": all(math.isfinite(v) for v in losses), "losses": losses, "world_size": world,
            "lr_peak": schedule.peak, "lr_warmup_steps": schedule.warmup_steps,
            "lr_total_steps": schedule.total_steps,
            "lr_last": schedule.lr(steps_done - 1)}  # the rate of the last step taken


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
