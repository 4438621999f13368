"""``jisu.nn.Cell``: MindSpore's parameter names and orders (checked against MindSpore 2.10's
recorded ones, ``tests/fixtures/ms_surface``), containers, modes, ``to_float``, and the
weight-decay rule reading the names that ``trainable_params()`` records."""

from __future__ import annotations

import json
import os
from collections import OrderedDict

import numpy as np
import pytest
import torch

import jisu
from jisu import nn

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ms_surface", "mindspore.json")
with open(FIXTURE) as f:
    NAMES = json.load(f)["names"]


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.layers = nn.SequentialCell([nn.Dense(4, 4), nn.ReLU(), nn.Dense(4, 2)])
        self.heads = nn.CellList([nn.Dense(2, 2), nn.LayerNorm((2,))])
        self.embed = nn.Embedding(5, 2)

    def construct(self, x):
        return self.layers(self.bn(self.conv(x)).mean((2, 3)))


def test_names_and_orders_are_mindspores():
    net = Block()
    assert [n for n, _ in net.parameters_and_names()] == NAMES["parameters_and_names"]
    assert [nn.parameter_name(p) for p in net.trainable_params()] == NAMES["trainable_params"]
    assert list(net.parameters_dict()) == NAMES["parameters_and_names"]
    untrainable = [nn.parameter_name(p) for p in net.untrainable_params()]
    assert untrainable == NAMES["untrainable_params"]
    assert [n for n, _ in net.bn.parameters_and_names(expand=False)] == NAMES["bn_own"]


def test_a_wrapper_cell_keeps_the_networks_parameter_names():
    net = Block()
    wrapped = nn.WithLossCell(net, nn.MSELoss())
    # attribute paths carry the wrapper's attribute, as MindSpore's parameters_and_names
    assert [n for n, _ in wrapped.parameters_and_names()] == NAMES["with_loss_cell"]
    # the parameters' names (what checkpoints hold) do not: auto_prefix=False
    assert list(wrapped.parameters_dict()) == NAMES["parameters_and_names"]


def test_the_weight_decay_rule_reads_the_recorded_names():
    net = Block()
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9, weight_decay=0.01)
    flags = dict(zip(NAMES["trainable_params"], opt.param_groups[0]["decay_flags"]))
    assert {n for n, f in flags.items() if not f} == {
        "bn.gamma", "bn.beta", "heads.1.gamma", "heads.1.beta"
    }  # fmt: skip


def test_forward_calls_construct_and_the_modes_and_containers_work():
    net = Block()
    assert net(torch.randn(2, 3, 8, 8)).shape == (2, 2)
    assert net.set_train(False) is net and not net.bn.training
    assert net.set_train() is net and net.bn.training
    assert [type(c).__name__ for c in net.cells()][:2] == ["Conv2d", "BatchNorm2d"]
    assert list(net.name_cells())[:2] == ["conv", "bn"]
    seq = nn.SequentialCell(OrderedDict([("a", nn.ReLU()), ("b", nn.Tanh())]))
    assert list(seq.name_cells()) == ["a", "b"] and len(seq) == 2 and isinstance(seq[1], nn.Tanh)
    assert torch.equal(seq(torch.tensor([-1.0, 1.0])), torch.tanh(torch.tensor([0.0, 1.0])))
    with pytest.raises(TypeError, match="SequentialCell: every element must be a Cell"):
        nn.SequentialCell([nn.ReLU(), 3])
    with pytest.raises(NotImplementedError, match="define construct"):
        nn.Cell()(torch.zeros(1))


def test_to_float_runs_the_cell_in_the_dtype():
    dense = nn.Dense(3, 2).to_float(torch.bfloat16)
    out = dense(torch.randn(4, 3))  # a float32 input is cast on the way in
    assert out.dtype == torch.bfloat16 and dense.weight.dtype == torch.float32
    bn = nn.BatchNorm2d(3).to_float(torch.float16)
    assert bn(torch.randn(2, 3, 4, 4)).dtype == torch.float16 and bn.gamma.dtype == torch.float32
    with pytest.raises(TypeError, match="to_float: dst_type must be a float dtype"):
        nn.Dense(3, 2).to_float(torch.int32)


def test_to_float_keeps_float32_master_weights():
    """MindSpore 2.0.0 printed these: a Dense to_float(float16) gives float16 outputs from
    float32 weights; two Adam steps on a zero input leave the weight (zero gradient) as it was
    and move the bias (fastText's fp16 Dense went NaN when its weights were float16)."""
    w = (np.arange(12).reshape(3, 4) / 10 - 0.5).astype(np.float32)
    dense = nn.Dense(4, 3, weight_init=jisu.Tensor(w), bias_init="zeros").to_float(jisu.float16)
    x = torch.tensor([[0.5, -1.0, 2.0, 0.25], [0, 0, 0, 0]])
    y = dense(x)
    assert y.dtype == torch.float16 and dense.weight.dtype == torch.float32
    torch.testing.assert_close(
        y.float(), torch.tensor([[-0.5, 0.199951171875, 0.900390625], [0.0, 0.0, 0.0]])
    )
    opt = nn.Adam(dense.trainable_params(), 0.1)
    net = nn.TrainOneStepCell(nn.WithLossCell(dense, nn.MSELoss()), opt)
    losses = [float(net(torch.zeros(2, 4), torch.ones(2, 3))) for _ in range(2)]
    assert losses[0] == pytest.approx(1.0) and losses[1] == pytest.approx(0.810044, abs=1e-3)
    assert dense.weight.dtype == torch.float32 and torch.equal(
        dense.weight.detach(), torch.tensor(w)
    )
    torch.testing.assert_close(
        dense.bias.detach(), torch.full((3,), 0.19958947598934174), atol=1e-4, rtol=0
    )
    assert "weight" not in dense.__dict__  # the float16 copy lives only during the forward


def test_cells_map_reads_and_replaces_the_sub_cells():
    # MindSpore 2.10 printed: OrderedDict ['fc', 'act'] ['fc', 'act'], then after
    # net._cells["act"] = nn.Sigmoid(): Sigmoid ['Dense', 'Sigmoid']
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(2, 2)
            self.act = nn.ReLU()

        def construct(self, x):
            return self.act(self.fc(x))

    net = Net()
    assert list(net._cells.keys()) == ["fc", "act"] == list(net.name_cells().keys())
    net._cells["act"] = nn.Sigmoid()
    assert type(net.act).__name__ == "Sigmoid"
    assert [type(c).__name__ for c in net.cells()] == ["Dense", "Sigmoid"]
    assert torch.all(net(torch.zeros(1, 2)) > 0)  # the sigmoid now runs


class _Nested(nn.Cell):
    def __init__(self):
        super().__init__()
        w1 = (np.arange(12).reshape(3, 4) / 10 - 0.5).astype(np.float32)
        w2 = (np.arange(6).reshape(2, 3) / 7 - 0.3).astype(np.float32)
        self.d1 = nn.Dense(4, 3, weight_init=jisu.Tensor(w1), bias_init="zeros")
        self.ln = nn.LayerNorm((3,))
        self.d2 = nn.Dense(3, 2, weight_init=jisu.Tensor(w2), bias_init="zeros")

    def construct(self, x):
        a = self.d1(x)
        b = self.ln(a)
        return a, b, self.d2(b)


def test_nested_to_float_runs_each_cell_in_its_own_dtype():
    """MindSpore 2.0.0 printed these (PYNATIVE) for net.to_float(float16) then
    net.ln.to_float(float32), as the zoo's Swin cast_amp does: the LayerNorm runs in float32
    on the float16 Dense output, and the next Dense casts that float32 output back to float16
    (every cell below a to_float casts its inputs)."""
    net = _Nested()
    net.to_float(jisu.float16)
    net.ln.to_float(jisu.float32)
    x = torch.tensor([[0.5, -1.0, 2.0, 0.25], [1.0, 0.0, -0.5, 3.0]])
    a, b, c = net(x)
    assert (a.dtype, b.dtype, c.dtype) == (torch.float16, torch.float32, torch.float16)
    torch.testing.assert_close(
        a.float(),
        torch.tensor(
            [[-0.5, 0.199951171875, 0.900390625], [-0.94970703125, 0.449951171875, 1.8505859375]]
        ),
    )
    torch.testing.assert_close(
        b,
        torch.tensor(
            [
                [-1.2246024609, -0.0002847006, 1.2248871326],
                [-1.2246024609, -0.0002847503, 1.2248871326],
            ]
        ),
        atol=2e-3,
        rtol=0,
    )
    torch.testing.assert_close(
        c.float(), torch.tensor([[0.35009765625, 0.349853515625], [0.35009765625, 0.349853515625]])
    )
    assert net.d1.weight.dtype == torch.float32 and "weight" not in net.d2.__dict__


def test_to_float_float16_cell_inside_an_o3_bfloat16_network():
    """research/nlp/textrcnn: fp16 Dense layers (to_float) in Model(amp_level="O3"), which is
    bfloat16 on CPU in jisu: the converted weights keep bfloat16 (not recast to float16) and
    the step runs, close to the float32 answer."""
    from jisu import amp

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(3, 2).to_float(jisu.float16)

        def construct(self, x):
            return self.dense(x)

    net = Net()
    x = torch.randn(4, 3)
    want = torch.nn.functional.linear(x, net.dense.weight, net.dense.bias).detach()
    low = amp.auto_mixed_precision(net, "O3", dtype=torch.bfloat16)
    out = low(x)
    assert net.dense.weight.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), want, atol=0.05, rtol=0.05)


def test_moving_statistics_carry_their_mindspore_names():
    """MindSpore 2.0.0 printed [('conv.weight', 'conv.weight'), ('bn.moving_mean',
    'bn.moving_mean'), ('bn.moving_variance', 'bn.moving_variance'), ('bn.gamma', 'bn.gamma'),
    ('bn.beta', 'bn.beta')] for (key, p.name) of parameters_and_names(): the zoo's tinynet keys
    its EMA copies by p.name, moving statistics included."""

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.bn = nn.BatchNorm2d(4)

    pairs = [(k, p.name) for k, p in Net().parameters_and_names()]
    assert sorted(pairs) == sorted(
        [
            (n, n)
            for n in ("conv.weight", "bn.moving_mean", "bn.moving_variance", "bn.gamma", "bn.beta")
        ]
    )
    assert torch.zeros(2).name is None  # a tensor no cell named keeps torch's answer
