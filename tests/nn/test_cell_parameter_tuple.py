"""A ParameterTuple attribute's new parameters belong to the cell (MindSpore's
``Cell._set_attr_for_parameter_tuple``): a hand-written LSTM's ``self.w_list =
ParameterTuple([...])`` (official/audio/Tacotron2, LPCNet, research/nlp/atae_lstm) is trained
and saved.

MindSpore 2.0.0 printed, for the same cells: trainable_params() and parameters_dict() names
['lstm.bias_ih_l0', 'lstm.bias_ih_l0_reverse', 'lstm.dense.bias', 'lstm.dense.weight',
'lstm.weight_ih_l0', 'lstm.weight_ih_l0_reverse'], and for a wrapper holding
ParameterTuple(net.trainable_params()) the same names under 'network.'.
"""

import numpy as np

import jisu as ms
from jisu import nn, ops

NAMES = [
    "lstm.bias_ih_l0",
    "lstm.bias_ih_l0_reverse",
    "lstm.dense.bias",
    "lstm.dense.weight",
    "lstm.weight_ih_l0",
    "lstm.weight_ih_l0_reverse",
]


class Lstm(nn.Cell):
    def __init__(self):
        super().__init__()
        w, b = [], []
        for d, suffix in enumerate(["", "_reverse"]):
            w.append(
                ms.Parameter(
                    ms.Tensor(np.full((2, 2), d + 1.0, np.float32)), name="weight_ih_l0" + suffix
                )
            )
            b.append(
                ms.Parameter(
                    ms.Tensor(np.full((2,), d + 3.0, np.float32)), name="bias_ih_l0" + suffix
                )
            )
        self.w_list = ms.ParameterTuple(w)
        self.b_list = ms.ParameterTuple(b)
        self.dense = nn.Dense(2, 2)

    def construct(self, x):
        return self.dense(ops.matmul(x, self.w_list[0]) + self.b_list[1])


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.lstm = Lstm()

    def construct(self, x):
        return self.lstm(x).sum()


class Wrap(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.network = net
        self.weights = ms.ParameterTuple(net.trainable_params())

    def construct(self, x):
        return self.network(x)


def test_tuple_parameters_are_the_cells(tmp_path):
    net = Net()
    assert sorted(p.name for p in net.trainable_params()) == NAMES
    assert sorted(net.parameters_dict()) == NAMES
    assert net.lstm.w_list[0] is net.lstm.weight_ih_l0  # the tuple still holds them
    path = str(tmp_path / "n.ckpt")
    ms.save_checkpoint(net, path)
    fresh = Net()
    ms.load_param_into_net(fresh, ms.load_checkpoint(path))


def test_trained_through_the_tuple():
    net = Net()
    before = net.lstm.w_list[0].detach().clone()
    step = nn.TrainOneStepCell(net, nn.SGD(net.trainable_params(), 0.1))
    step(ms.Tensor(np.ones((1, 2), np.float32)))
    assert not np.allclose(net.lstm.w_list[0].detach().numpy(), before.numpy())


def test_a_wrappers_tuple_of_network_parameters_is_left_alone():
    w = Wrap(Net())
    assert sorted(w.parameters_dict()) == ["network." + n for n in NAMES]
    assert len(w.state_dict()) == len(NAMES)
