"""A cell's own method named ``forward`` is a helper (MindSpore), not the entry point.

Values printed by MindSpore 2.10 (PyNative) for the same cells with ``mindspore`` imports:
Head()(x, 3.0) = [[7.5, 4.5]], Outer()(x) = 8.0, its weight gradient [[2, 2], [1, 1]].
"""

import numpy as np
import torch

import jisu as ms
from jisu import nn, ops


class Head(nn.Cell):
    """As the zoo's ArcFace PartialFC: construct calls self.forward(features, weight)."""

    def __init__(self):
        super().__init__()
        w = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
        self.w = ms.Parameter(ms.Tensor(w), name="w")

    def construct(self, x, label):
        return self.forward(x, self.w) * label

    def forward(self, x, w):
        return ops.matmul(x, w)


class Outer(nn.Cell):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def construct(self, x):
        return self.head(x, 2.0).sum()


X = np.array([[1.0, 0.5]], np.float32)


def test_call_runs_construct_and_self_forward_the_helper():
    head = Head()
    np.testing.assert_allclose(head(ms.Tensor(X), 3.0).detach().numpy(), [[7.5, 4.5]])
    np.testing.assert_allclose(head.forward(ms.Tensor(X), head.w).detach().numpy(), [[2.5, 1.5]])
    assert float(Outer()(ms.Tensor(X))) == 8.0


def test_with_hooks_and_gradients():
    net = Outer()
    seen = []
    net.head.register_forward_hook(lambda m, a, out: seen.append(out.shape))
    (g,) = ops.GradOperation(get_by_list=True)(net, net.trainable_params())(ms.Tensor(X))
    np.testing.assert_allclose(g.numpy(), [[2.0, 2.0], [1.0, 1.0]])
    assert seen and seen[0] == (1, 2)


def test_torch_style_cell_without_construct_keeps_forward():
    class Plain(nn.Cell):
        def forward(self, x):
            return x + 1

    assert torch.equal(Plain()(torch.zeros(2)), torch.ones(2))
