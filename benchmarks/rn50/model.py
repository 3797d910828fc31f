"""ResNet50 v1.5 in Paddle, NCHW or NHWC.

v1.5 differs from v1 in the down-sampling bottleneck: the stride sits on the 3x3 convolution, not
on the first 1x1 (a little more accurate, a little slower). Initialisation as DLE's PaddlePaddle
ResNet50 v1.5: every BatchNorm scale starts at 1.0 (with `zero_init_residual`, the last BatchNorm
of each residual branch starts at 0, so each block starts as the identity), the classifier's
weights come from Uniform(-1/sqrt(2048), 1/sqrt(2048)) and its bias starts at 0.
"""

import math

import paddle
from paddle import nn

LAYERS = (3, 4, 6, 3)
WIDTHS = (64, 128, 256, 512)
EXPANSION = 4


class ConvBN(nn.Layer):
    def __init__(self, cin: int, cout: int, kernel: int, stride: int, data_format: str, act: bool = True,
                 zero_gamma: bool = False) -> None:
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, kernel, stride=stride, padding=(kernel - 1) // 2, bias_attr=False,
                              data_format=data_format)
        gamma = nn.initializer.Constant(0.0) if zero_gamma else nn.initializer.Constant(1.0)
        self.bn = nn.BatchNorm2D(cout, weight_attr=paddle.ParamAttr(initializer=gamma), data_format=data_format)
        self.act = nn.ReLU() if act else None

    def forward(self, x):
        x = self.bn(self.conv(x))
        return self.act(x) if self.act is not None else x


class Bottleneck(nn.Layer):
    def __init__(self, cin: int, width: int, stride: int, data_format: str, zero_init_residual: bool = False) -> None:
        super().__init__()
        cout = width * EXPANSION
        self.conv1 = ConvBN(cin, width, 1, 1, data_format)
        self.conv2 = ConvBN(width, width, 3, stride, data_format)  # v1.5: the stride is here
        self.conv3 = ConvBN(width, cout, 1, 1, data_format, act=False, zero_gamma=zero_init_residual)
        self.downsample = ConvBN(cin, cout, 1, stride, data_format, act=False) if stride != 1 or cin != cout else None
        self.relu = nn.ReLU()

    def forward(self, x):
        identity = self.downsample(x) if self.downsample is not None else x
        return self.relu(self.conv3(self.conv2(self.conv1(x))) + identity)


class ResNet50(nn.Layer):
    def __init__(self, num_classes: int = 1000, data_format: str = "NCHW", zero_init_residual: bool = False) -> None:
        super().__init__()
        self.stem = ConvBN(3, 64, 7, 2, data_format)
        self.maxpool = nn.MaxPool2D(3, stride=2, padding=1, data_format=data_format)
        stages, cin = [], 64
        for index, (blocks, width) in enumerate(zip(LAYERS, WIDTHS, strict=True)):
            layer = []
            for b in range(blocks):
                layer.append(Bottleneck(cin, width, 2 if b == 0 and index > 0 else 1, data_format,
                                        zero_init_residual))
                cin = width * EXPANSION
            stages.append(nn.Sequential(*layer))
        self.stages = nn.LayerList(stages)
        self.pool = nn.AdaptiveAvgPool2D(1, data_format=data_format)
        bound = 1.0 / math.sqrt(cin)  # cin = 2048
        self.fc = nn.Linear(cin, num_classes, weight_attr=paddle.ParamAttr(
            initializer=nn.initializer.Uniform(-bound, bound)), bias_attr=paddle.ParamAttr(
            initializer=nn.initializer.Constant(0.0)))

    def forward(self, x):
        x = self.maxpool(self.stem(x))
        for stage in self.stages:
            x = stage(x)
        return self.fc(paddle.flatten(self.pool(x), 1))


def resnet50(num_classes: int = 1000, data_format: str = "NCHW", zero_init_residual: bool = False) -> ResNet50:
    return ResNet50(num_classes, data_format, zero_init_residual)
