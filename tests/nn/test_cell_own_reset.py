"""A layer subclass's own ``reset_parameters`` (MindSpore's layers have none; the zoo's
PointNet2 Conv2d/Dense call theirs at the end of ``__init__``) is not run by torch's layer
``__init__`` before the subclass is ready; and ``P.Conv2D`` takes the (h, w) ``padding`` a torch
layer holds.

MindSpore 2.0.0 printed, for the same subclass: one call from its __init__ (out_channels 3),
weights 0.5 and bias 0.25, two calls after an explicit reset_parameters().
"""

import numpy as np
import torch
import torch.nn.functional as F

import jisu as ms
from jisu import nn
from jisu.ops import operations as P


def test_own_reset_parameters_runs_when_the_cell_calls_it():
    calls = []

    class Conv(nn.Conv2d):
        def __init__(self, cin, cout, k, has_bias=False):
            super().__init__(cin, cout, k, has_bias=has_bias)
            self.reset_parameters()

        def reset_parameters(self):
            calls.append(self.out_channels)
            self.weight.set_data(ms.Tensor(np.full(self.weight.shape, 0.5, np.float32)))
            if self.has_bias:
                self.bias.set_data(ms.Tensor(np.full((self.out_channels,), 0.25, np.float32)))

    c = Conv(2, 3, 1, has_bias=True)
    assert calls == [3]
    assert float(c.weight.mean()) == 0.5 and float(c.bias.mean()) == 0.25
    c.reset_parameters()
    assert len(calls) == 2


def test_conv2d_primitive_takes_a_torch_padding_pair():
    x = torch.randn(1, 2, 5, 5, generator=torch.Generator().manual_seed(0))
    w = torch.randn(3, 2, 3, 3, generator=torch.Generator().manual_seed(1))
    conv = P.Conv2D(out_channel=3, kernel_size=3, mode=1, pad_mode="pad", pad=(1, 2))
    torch.testing.assert_close(conv(x, w), F.conv2d(x, w, padding=(1, 2)))
