"""PP-HGNet (tiny, small, base) in Paddle, from the structure PaddleClas published.

Stem of 3x3 ConvBNAct layers and a max-pool; four HG stages, each an optional learnable
down-sampling (depthwise 3x3 stride 2, no activation) and HG blocks: `layer_num` 3x3 ConvBNAct
layers whose outputs are concatenated with the block input, aggregated by a 1x1 ConvBNAct and
weighted by ESE attention (pool -> 1x1 conv with bias -> sigmoid -> multiply), with an identity
shortcut on every block but the first of a stage. Head: pool, 1x1 conv to 2048, ReLU, dropout,
linear. Sub-layer names follow PaddleClas's, so its `.pdparams` files load without renaming.
"""

from dataclasses import dataclass

import paddle
from paddle import nn


@dataclass(frozen=True)
class Variant:
    stem: tuple[int, ...]
    layer_num: int
    dropout: float
    # per stage: in, mid, out channels, blocks, down-sampling
    stages: tuple[tuple[int, int, int, int, bool], ...]


VARIANTS = {
    "tiny": Variant((48, 48, 96), 5, 0.0, ((96, 96, 224, 1, False), (224, 128, 448, 1, True),
                                          (448, 160, 512, 2, True), (512, 192, 768, 1, True))),
    "small": Variant((64, 64, 128), 6, 0.0, ((128, 128, 256, 1, False), (256, 160, 512, 1, True),
                                            (512, 192, 768, 2, True), (768, 224, 1024, 1, True))),
    "base": Variant((96, 96, 160), 7, 0.2, ((160, 192, 320, 1, False), (320, 224, 640, 2, True),
                                           (640, 256, 960, 3, True), (960, 288, 1280, 2, True))),
}
# Published parameter counts (1000 classes), the check that the structure is right. They count every
# parameter, BatchNorm running statistics included, as paddle.summary does.
PUBLISHED_PARAMS = {"tiny": 14_750_904, "small": 24_381_864, "base": 71_624_584}
CLASS_EXPAND = 2048


class ConvBNAct(nn.Layer):
    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, use_act: bool = True,
                 data_format: str = "NCHW") -> None:
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, kernel, stride, padding=(kernel - 1) // 2, groups=groups, bias_attr=False,
                              data_format=data_format)
        no_decay = paddle.ParamAttr(regularizer=paddle.regularizer.L2Decay(0.0))
        self.bn = nn.BatchNorm2D(cout, weight_attr=no_decay, bias_attr=no_decay, data_format=data_format)
        self.act = nn.ReLU() if use_act else None

    def forward(self, x):
        x = self.bn(self.conv(x))
        return self.act(x) if self.act is not None else x


class ESEModule(nn.Layer):
    """Effective squeeze-excitation: one 1x1 conv (with bias) on the pooled features, sigmoid gate."""

    def __init__(self, channels: int, data_format: str) -> None:
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2D(1, data_format=data_format)
        self.conv = nn.Conv2D(channels, channels, 1, data_format=data_format)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        return x * self.sigmoid(self.conv(self.avg_pool(x)))


class HGBlock(nn.Layer):
    def __init__(self, cin: int, mid: int, cout: int, layer_num: int, identity: bool, data_format: str) -> None:
        super().__init__()
        self.identity = identity
        self.axis = 1 if data_format == "NCHW" else -1
        self.layers = nn.LayerList([ConvBNAct(cin if i == 0 else mid, mid, 3, data_format=data_format)
                                    for i in range(layer_num)])
        self.aggregation_conv = ConvBNAct(cin + layer_num * mid, cout, 1, data_format=data_format)
        self.att = ESEModule(cout, data_format)

    def forward(self, x):
        features = [x]
        h = x
        for layer in self.layers:
            h = layer(h)
            features.append(h)
        out = self.att(self.aggregation_conv(paddle.concat(features, axis=self.axis)))
        return out + x if self.identity else out


class HGStage(nn.Layer):
    def __init__(self, cin: int, mid: int, cout: int, blocks: int, downsample: bool, layer_num: int,
                 data_format: str) -> None:
        super().__init__()
        # Learnable down-sampling: depthwise 3x3, stride 2, no activation.
        self.downsample = ConvBNAct(cin, cin, 3, 2, groups=cin, use_act=False, data_format=data_format) \
            if downsample else None
        self.blocks = nn.Sequential(*[HGBlock(cin if i == 0 else cout, mid, cout, layer_num, i > 0, data_format)
                                      for i in range(blocks)])

    def forward(self, x):
        return self.blocks(self.downsample(x) if self.downsample is not None else x)


class PPHGNet(nn.Layer):
    def __init__(self, variant: str = "tiny", num_classes: int = 1000, data_format: str = "NCHW") -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown PP-HGNet variant {variant!r}; use one of {sorted(VARIANTS)}")
        v = VARIANTS[variant]
        chans = (3, *v.stem)
        self.stem = nn.Sequential(*[ConvBNAct(chans[i], chans[i + 1], 3, 2 if i == 0 else 1, data_format=data_format)
                                    for i in range(len(v.stem))])
        self.pool = nn.MaxPool2D(3, stride=2, padding=1, data_format=data_format)
        self.stages = nn.LayerList([HGStage(cin, mid, cout, blocks, down, v.layer_num, data_format)
                                    for cin, mid, cout, blocks, down in v.stages])
        self.avg_pool = nn.AdaptiveAvgPool2D(1, data_format=data_format)
        self.last_conv = nn.Conv2D(v.stages[-1][2], CLASS_EXPAND, 1, bias_attr=False, data_format=data_format)
        self.act = nn.ReLU()
        self.dropout = nn.Dropout(p=v.dropout, mode="downscale_in_infer")
        self.flatten = nn.Flatten(start_axis=1, stop_axis=-1)
        self.fc = nn.Linear(CLASS_EXPAND, num_classes)
        self._init_weights()

    def _init_weights(self) -> None:
        kaiming = nn.initializer.KaimingNormal()
        for layer in self.sublayers():
            if isinstance(layer, nn.Conv2D):
                kaiming(layer.weight)
            elif isinstance(layer, nn.BatchNorm2D):
                nn.initializer.Constant(1.0)(layer.weight)
                nn.initializer.Constant(0.0)(layer.bias)
            elif isinstance(layer, nn.Linear):
                nn.initializer.Constant(0.0)(layer.bias)

    def forward(self, x):
        x = self.pool(self.stem(x))
        for stage in self.stages:
            x = stage(x)
        x = self.dropout(self.act(self.last_conv(self.avg_pool(x))))
        return self.fc(self.flatten(x))


def pphgnet(variant: str = "tiny", num_classes: int = 1000, data_format: str = "NCHW") -> PPHGNet:
    return PPHGNet(variant, num_classes, data_format)


def parameter_count(model: nn.Layer) -> int:
    """All parameters, BatchNorm running mean and variance included (the published figures' convention)."""
    return sum(int(p.numel()) for p in model.parameters())
