"""``x += y`` inside ``construct`` is MindSpore's ``x = x + y`` (jisu.common.tensor_inplace),
checked against MindSpore 2.0.0's printed answers; torch's meaning elsewhere."""

from __future__ import annotations

import numpy as np
import torch

import jisu
from jisu import nn, ops


class _Net(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.w = jisu.Parameter(jisu.Tensor(np.array([0.5, -1.0, 2.0], np.float32)), name="w")

    def construct(self, x):
        a = ops.sigmoid(x * self.w)  # torch's sigmoid keeps its output for the backward pass
        b = a
        a += x
        a *= 2.0
        return (a * b).sum(), b


def test_augmented_assignment_in_construct_rebinds_as_mindspore():
    """MindSpore 2.0.0 printed loss 2.4007778, b [0.62245935 0.11920292 0.26894143] (the
    old tensor unchanged) and the weight's gradient [1.0551285, 0.94007295, -0.0074482234]."""
    net = _Net()
    loss, b = net(torch.tensor([1.0, 2.0, -0.5]))
    assert float(loss) == np.float32(2.4007778)
    np.testing.assert_allclose(b.detach(), [0.62245935, 0.11920292, 0.26894143], rtol=1e-6)
    loss.backward()
    np.testing.assert_allclose(net.w.grad, [1.05512846, 0.940072954, -7.44822342e-03], rtol=1e-5)


def test_outside_construct_plus_equals_stays_torchs():
    x = torch.ones(3, requires_grad=True) * 2
    alias = x
    x += 1
    assert x is alias and torch.equal(alias, torch.full((3,), 3.0))
    y = torch.zeros(2)
    y += 1  # no graph: in place, inside construct too
    assert torch.equal(y, torch.ones(2))


class _Accumulator(nn.Cell):
    """official/cv/FasterRCNN's rpn: ``loss = self.loss`` (zeros), then ``loss += item``."""

    def __init__(self) -> None:
        super().__init__()
        self.acc = jisu.numpy.zeros((1,), jisu.float32)
        self.w = jisu.Parameter(jisu.Tensor(np.array([2.0], np.float32)), name="w")

    def construct(self, x):
        loss = self.acc
        for _ in range(2):
            loss += x * self.w
        return loss


def test_constant_accumulator_in_construct_stays_constant():
    """MindSpore 2.0.0 (PyNative and GRAPH_MODE) printed [12.] twice, the weight's gradient
    [6.] twice, and the cell's zeros still [0.] after them."""
    net = _Accumulator()
    x = torch.tensor([3.0])
    grad = ops.GradOperation(get_by_list=True)(net, net.trainable_params())
    assert net(x).tolist() == [12.0] and net(x).tolist() == [12.0]
    assert grad(x)[0].tolist() == [6.0] and grad(x)[0].tolist() == [6.0]
    assert net.acc.tolist() == [0.0] and net.acc.grad_fn is None
