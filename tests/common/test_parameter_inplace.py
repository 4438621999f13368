"""``self.p += x`` on a parameter inside construct is MindSpore's assignment
(jisu.common.parameter_inplace), checked against MindSpore's printed answers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import jisu
from jisu import Parameter, Tensor, nn, ops


class _Counting(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.w = Parameter(Tensor(np.array([2.0, 3.0], np.float32)), name="w")
        self.updates = Parameter(Tensor(0.0, jisu.float32), name="updates")

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        self.updates += 1
        self.updates *= 2
        return (x * self.w).sum() * self.updates


def test_inplace_update_of_a_parameter_in_construct_is_an_assignment():
    # MindSpore 2.10 and 2.0.0 (PyNative, ops.value_and_grad over trainable_params) printed
    #   10.0 [[2.0, 2.0], 5.0] 2.0
    #   30.0 [[6.0, 6.0], 5.0] 6.0
    net = _Counting()
    f = ops.value_and_grad(net, None, net.trainable_params())
    x = Tensor(np.array([1.0, 1.0], np.float32))
    want = [(10.0, [[2.0, 2.0], 5.0], 2.0), (30.0, [[6.0, 6.0], 5.0], 6.0)]
    for loss_want, grads_want, updates_want in want:
        loss, grads = f(x)
        assert float(loss) == loss_want
        assert [g.tolist() for g in grads] == grads_want
        assert float(net.updates.detach()) == updates_want
    assert isinstance(net.updates, torch.nn.Parameter) and net.updates.requires_grad


def test_the_forms_torch_accepts_keep_torchs_meaning():
    p = torch.nn.Parameter(torch.ones(2))
    with torch.no_grad():
        p += 1
        p /= 4
    assert p.tolist() == [0.5, 0.5] and p.grad_fn is None
    frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    frozen -= 3
    assert frozen.tolist() == [-2.0, -2.0]
    y = torch.ones(2, requires_grad=True) * 1.0  # a non-leaf tensor: torch records it
    y *= 3
    assert y.grad_fn is not None
    with pytest.raises(RuntimeError):  # a plain leaf tensor (not a parameter) still refuses
        t = torch.ones(2, requires_grad=True)
        t += 1


def test_isinstance_parameter_holds_for_torch_parameters_only():
    """The zoo filters with ``isinstance(x, Parameter)``: jisu's Parameter is a class for
    that check, whose construction makes a plain ``torch.nn.Parameter``."""
    import jisu

    param = jisu.Parameter(torch.ones(2), name="w")
    assert type(param) is torch.nn.Parameter and param.name == "w"
    assert isinstance(param, jisu.Parameter)
    assert isinstance(torch.nn.Parameter(torch.zeros(1)), jisu.Parameter)
    assert not isinstance(torch.zeros(1), jisu.Parameter)
    assert not isinstance(1.0, jisu.Parameter)
