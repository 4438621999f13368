"""A tensor assigned to a parameter's attribute sets the parameter's data (MindSpore's
``Cell.__setattr__`` -> ``Parameter.set_data``), as official/audio/EcapaTDNN's train cell does
in construct (``self.output = logits``).

Values printed by MindSpore 2.10 (PyNative) for the same script with ``mindspore`` imports:
output [[8, 8]], gradients ([[32, 96], [32, 96]], [32, 32]), output still a Parameter, 2
trainable parameters of 3.
"""

import numpy as np
import pytest
import torch

import jisu as ms
from jisu import nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(2, 2, weight_init="ones", bias_init="zeros")
        self.output = ms.Parameter(ms.Tensor(np.ones((1, 2)), ms.float32), requires_grad=False)

    def construct(self, x):
        out = self.dense(x) * 2
        self.output = out
        return (out * out).sum()


def test_assigning_a_tensor_sets_the_parameter():
    net = Net()
    kept = net.output
    x = ms.Tensor(np.array([[1.0, 3.0]], np.float32))
    w, b = ops.GradOperation(get_by_list=True)(net, net.trainable_params())(x)
    assert net.output is kept and isinstance(net.output, torch.nn.Parameter)
    np.testing.assert_allclose(net.output.detach().numpy(), [[8.0, 8.0]])
    assert net.output.grad_fn is None
    np.testing.assert_allclose(w.numpy(), [[32.0, 96.0], [32.0, 96.0]])
    np.testing.assert_allclose(b.numpy(), [32.0, 32.0])
    assert len(net.trainable_params()) == 2 and len(list(net.get_parameters())) == 3


def test_other_assignments_unchanged():
    net = Net()
    net.extra = torch.zeros(2)  # a plain tensor attribute stays one
    assert torch.equal(net.extra, torch.zeros(2))
    net.output = ms.Parameter(ms.Tensor(np.zeros((1, 3)), ms.float32), name="o2")
    assert net.output.shape == (1, 3)
    with pytest.raises(TypeError):
        net.output = "text"
