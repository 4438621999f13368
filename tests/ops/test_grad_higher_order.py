"""GradOperation inside a loss that a train cell differentiates: a gradient penalty.

The values were printed by MindSpore 2.10 (PyNative) running the same script with
``mindspore`` in place of ``jisu``.
"""

import numpy as np
import torch

import jisu as ms
from jisu import nn, ops

W = np.array([[0.3, -0.5, 0.8]], np.float32)
B = np.array([0.1], np.float32)
X = np.array([[0.5, -1.0, 2.0], [1.5, 0.2, -0.7]], np.float32)


class Critic(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 1, weight_init=ms.Tensor(W), bias_init=ms.Tensor(B))
        self.tanh = nn.Tanh()

    def construct(self, x):
        return self.tanh(self.dense(x)).sum()


class WithPenalty(nn.Cell):
    def __init__(self, critic):
        super().__init__()
        self.critic = critic
        self.grad = ops.GradOperation()

    def construct(self, x):
        g = self.grad(self.critic)(x)
        norm = ops.sqrt((g * g).sum(axis=1))
        return self.critic(x) + 10 * ((norm - 1) ** 2).mean()


def test_gradient_penalty_step_matches_mindspore():
    critic = Critic()
    step = nn.TrainOneStepCell(WithPenalty(critic), nn.SGD(critic.trainable_params(), 0.1))
    loss = step(ms.Tensor(X))
    # MindSpore 2.10: loss 5.527383804321289, then these weights after one SGD step
    np.testing.assert_allclose(float(loss), 5.527383804321289, rtol=1e-6)
    np.testing.assert_allclose(
        critic.dense.weight.detach().numpy(),
        [[0.14057284593582153, -0.4765928089618683, 0.7700745463371277]],
        rtol=1e-5,
    )
    np.testing.assert_allclose(critic.dense.bias.detach().numpy(), [-0.06467831879854202], 1e-5)


def test_second_order_through_nested_cells():
    class D(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = ms.Parameter(ms.Tensor(np.array([1.5], np.float32)), name="w")

        def construct(self, x):
            return (self.w * x * x).sum()

    class L(nn.Cell):
        def __init__(self, d):
            super().__init__()
            self.d = d
            self.g = ops.GradOperation()

        def construct(self, x):
            g = self.g(self.d)(x)
            return (g * g).sum()

    net = L(D())
    x = ms.Tensor(np.array([1.0, 2.0], np.float32))
    (gw,) = ops.GradOperation(get_by_list=True)(net, ms.ParameterTuple(net.trainable_params()))(x)
    # d/dw sum((2 w x)^2) = 8 w sum(x^2) = 60 (MindSpore 2.10 printed [6.0e+01])
    np.testing.assert_allclose(gw.numpy(), [60.0])


def test_top_level_input_gradient_has_no_history():
    critic = Critic()
    g = ops.GradOperation()(critic)(ms.Tensor(X))
    assert not g.requires_grad
    assert isinstance(g, torch.Tensor)
