"""``jisu.nn`` networks train with ``Model`` as torch ones do: every AMP level, sink mode
bit-identical to step mode, O2 keeping the MindSpore-style BatchNorm in fp32."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import jisu
import jisu.dataset as ds
from jisu import nn
from jisu.common.initializer import Normal


class SmallNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, has_bias=False)  # pad_mode "same", MindSpore's default
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(4, 3, weight_init=Normal(0.1))

    def construct(self, x):
        return self.fc(self.flatten(self.pool(self.relu(self.bn(self.conv(x))))))


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 1, 8, 8)).astype(np.float32)
    y = (x.mean((1, 2, 3)) > 0).astype(np.int32) + (x[:, 0, 0, 0] > 1)
    ds.config.set_seed(3)
    return ds.NumpySlicesDataset({"x": x, "y": y.astype(np.int32)}, shuffle=True).batch(32)


def train(level: str, sink: bool) -> nn.Cell:
    jisu.set_seed(0)
    net = SmallNet()
    rates = nn.cosine_decay_lr(0.0, 0.1, 9, 3, 3)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), rates, 0.9, weight_decay=1e-4)
    model = jisu.Model(net, loss, opt, amp_level=level)
    model.train(3, data(), dataset_sink_mode=sink)
    return model


@pytest.mark.parametrize("level", ["O0", "O1", "O2", "O3"])
def test_every_amp_level_trains_the_same_weights_in_sink_and_step_mode(level):
    step, sink = train(level, False), train(level, True)
    for (name, a), b in zip(step.network.state_dict().items(), sink.network.state_dict().values()):
        assert torch.equal(a, b), name
    assert int(sink.optimizer.global_step) == 9  # every rate of the list used once


def test_o2_keeps_the_batchnorm_in_fp32():
    model = train("O2", True)
    plan = {name: compute for name, _, compute, _ in model.train_network.network.cast_plan()}
    assert plan["bn"] == "fp32"
    assert plan["conv"] == plan["fc"] == "bf16"  # the CPU's low dtype
