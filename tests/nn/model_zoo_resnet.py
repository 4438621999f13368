"""A MindSpore model-zoo style ResNet (``official/cv/ResNet/src/resnet.py``'s structure and
idioms), written against MindSpore's API with only the imports pointing at jisu.

What makes it a porting test: numpy-computed ``Tensor`` weights handed to ``weight_init``,
``ops.ReLU()``/``ops.ReduceMean(keep_dims=True)`` primitives, ``pad_mode="same"`` convolutions
and pooling, MindSpore's ``BatchNorm2d(momentum=0.9)``, ``nn.Pad`` + a ``"valid"`` pool for the
ResNet-18 stem, a ``SequentialCell`` built from a list and parameter names such as
``layer1.0.down_sample_layer.1.moving_mean``. The MindSpore fixture script
(``tests/fixtures/ms_resnet/make_fixtures.py``) runs this same file with the imports swapped
back to ``mindspore``: the lines between the two ``# imports`` markers are the only ones that
differ.
"""

# imports (the only lines a port changes)
import math

import numpy as np

import jisu.common.dtype as mstype
import jisu.nn as nn
import jisu.ops as ops
from jisu.common.tensor import Tensor

# imports end


def _calculate_fan(shape, mode):
    receptive = shape[2] * shape[3] if len(shape) == 4 else 1
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    return fan_in if mode == "fan_in" else fan_out


def kaiming_normal(shape, mode="fan_in"):
    std = math.sqrt(2.0) / math.sqrt(_calculate_fan(shape, mode))  # the gain of a ReLU
    return np.random.normal(0, std, size=shape).astype(np.float32)


def kaiming_uniform(shape, a=0.0, mode="fan_in"):
    gain = math.sqrt(2.0 / (1 + a**2))
    bound = math.sqrt(3.0) * gain / math.sqrt(_calculate_fan(shape, mode))
    return np.random.uniform(-bound, bound, size=shape).astype(np.float32)


def _conv(in_channel, out_channel, kernel_size, stride=1, res_base=False):
    shape = (out_channel, in_channel, kernel_size, kernel_size)
    weight = Tensor(kaiming_normal(shape, mode="fan_out"))
    if res_base:
        return nn.Conv2d(
            in_channel,
            out_channel,
            kernel_size=kernel_size,
            stride=stride,
            padding=kernel_size // 2,
            pad_mode="pad",
            weight_init=weight,
        )
    return nn.Conv2d(
        in_channel,
        out_channel,
        kernel_size=kernel_size,
        stride=stride,
        padding=0,
        pad_mode="same",
        weight_init=weight,
    )


def _bn(channel, res_base=False):
    if res_base:
        return nn.BatchNorm2d(
            channel,
            eps=1e-5,
            momentum=0.1,
            gamma_init=1,
            beta_init=0,
            moving_mean_init=0,
            moving_var_init=1,
        )
    return nn.BatchNorm2d(
        channel,
        eps=1e-4,
        momentum=0.9,
        gamma_init=1,
        beta_init=0,
        moving_mean_init=0,
        moving_var_init=1,
    )


def _fc(in_channel, out_channel):
    weight = Tensor(kaiming_uniform((out_channel, in_channel), a=math.sqrt(5)))
    return nn.Dense(in_channel, out_channel, has_bias=True, weight_init=weight, bias_init=0)


class ResidualBlock(nn.Cell):
    """The bottleneck block of ResNet-50/101/152 (1x1, 3x3, 1x1; expansion 4)."""

    expansion = 4

    def __init__(self, in_channel, out_channel, stride=1):
        super().__init__()
        channel = out_channel // self.expansion
        self.conv1 = _conv(in_channel, channel, 1)
        self.bn1 = _bn(channel)
        self.conv2 = _conv(channel, channel, 3, stride=stride)
        self.bn2 = _bn(channel)
        self.conv3 = _conv(channel, out_channel, 1)
        self.bn3 = _bn(out_channel)
        self.relu = nn.ReLU()
        self.down_sample = stride != 1 or in_channel != out_channel
        self.down_sample_layer = None
        if self.down_sample:
            self.down_sample_layer = nn.SequentialCell(
                [_conv(in_channel, out_channel, 1, stride), _bn(out_channel)]
            )

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.down_sample:
            identity = self.down_sample_layer(identity)
        out = out + identity
        return self.relu(out)


class ResidualBlockBase(nn.Cell):
    """The basic block of ResNet-18/34 (two 3x3 convolutions, explicit padding)."""

    def __init__(self, in_channel, out_channel, stride=1, res_base=True):
        super().__init__()
        self.conv1 = _conv(in_channel, out_channel, 3, stride=stride, res_base=res_base)
        self.bn1d = _bn(out_channel)
        self.conv2 = _conv(out_channel, out_channel, 3, res_base=res_base)
        self.bn2d = _bn(out_channel)
        self.relu = nn.ReLU()
        self.down_sample = stride != 1 or in_channel != out_channel
        self.down_sample_layer = None
        if self.down_sample:
            self.down_sample_layer = nn.SequentialCell(
                [_conv(in_channel, out_channel, 1, stride, res_base), _bn(out_channel, res_base)]
            )

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1d(self.conv1(x)))
        out = self.bn2d(self.conv2(out))
        if self.down_sample:
            identity = self.down_sample_layer(identity)
        return self.relu(out + identity)


class ResNet(nn.Cell):
    """ResNet: a 7x7 stem, a max pool, four stages of blocks, a global mean and a Dense."""

    def __init__(
        self, block, layer_nums, in_channels, out_channels, strides, num_classes, res_base=False
    ):
        super().__init__()
        if not len(layer_nums) == len(in_channels) == len(out_channels) == 4:
            raise ValueError("the length of layer_num, in_channels, out_channels list must be 4!")
        self.res_base = res_base
        self.conv1 = _conv(3, in_channels[0], 7, stride=2, res_base=res_base)
        self.bn1 = _bn(in_channels[0], res_base)
        self.relu = ops.ReLU()
        if res_base:
            self.pad = nn.Pad(paddings=((0, 0), (0, 0), (1, 1), (1, 1)))
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="valid")
        else:
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="same")
        stages = zip(layer_nums, in_channels, out_channels, strides)
        for i, (num, in_channel, out_channel, stride) in enumerate(stages):
            layer = self._make_layer(block, num, in_channel, out_channel, stride)
            setattr(self, f"layer{i + 1}", layer)
        self.mean = ops.ReduceMean(keep_dims=True)
        self.flatten = nn.Flatten()
        self.end_point = _fc(out_channels[3], num_classes)

    def _make_layer(self, block, layer_num, in_channel, out_channel, stride):
        layers = [block(in_channel, out_channel, stride=stride)]
        for _ in range(1, layer_num):
            layers.append(block(out_channel, out_channel, stride=1))
        return nn.SequentialCell(layers)

    def construct(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        if self.res_base:
            x = self.pad(x)
        c1 = self.maxpool(x)
        c5 = self.layer4(self.layer3(self.layer2(self.layer1(c1))))
        out = self.mean(c5, (2, 3))
        out = self.flatten(out)
        return self.end_point(out)


def resnet18(class_num=10):
    """ResNet-18 as the model zoo builds it (``res_base``: explicit padding, BN eps 1e-5)."""
    return ResNet(
        ResidualBlockBase,
        [2, 2, 2, 2],
        [64, 64, 128, 256],
        [64, 128, 256, 512],
        [1, 2, 2, 2],
        class_num,
        res_base=True,
    )


def resnet50(class_num=10, width=1.0):
    """ResNet-50; ``width`` < 1 scales every stage's channels (the fixtures record a narrow
    one: the full network's checkpoint is 94 MB)."""
    ins = [max(8, int(c * width)) for c in (64, 256, 512, 1024)]
    outs = [max(8, int(c * width)) for c in (256, 512, 1024, 2048)]
    return ResNet(ResidualBlock, [3, 4, 6, 3], ins, outs, [1, 2, 2, 2], class_num)


def cast_inputs(x):
    """The model zoo's ``Tensor(array, mstype.float32)`` for a batch of numpy images."""
    return Tensor(x, mstype.float32)
