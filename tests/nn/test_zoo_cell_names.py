"""Parameter names seen while walking cells, and the train cell's weights, as the zoo's
official/cv/YOLOX uses them; expected values printed by MindSpore 2.0.0."""

import torch

from jisu import nn


class _Head(nn.Cell):
    def __init__(self):
        super().__init__()
        self.cls_preds = nn.Conv2d(3, 4, 1, has_bias=True)
        self.bn = nn.BatchNorm2d(4)

    def construct(self, x):
        return self.bn(self.cls_preds(x))


class _Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.head = _Head()
        self.fc = nn.Dense(4, 2)

    def construct(self, x):
        return self.fc(self.head(x).mean((2, 3)))


def test_cells_and_names_gives_parameters_their_names():
    # MindSpore 2.0.0: [('head.cls_preds', 'head.cls_preds.bias'), ('fc', 'fc.bias')]
    net = _Net()
    got = [
        (n, c.bias.name) for n, c in net.cells_and_names() if isinstance(c, (nn.Conv2d, nn.Dense))
    ]
    assert got == [("head.cls_preds", "head.cls_preds.bias"), ("fc", "fc.bias")]


def test_train_cell_weights_clone_like_a_parameter_tuple():
    # MindSpore 2.0.0: ParameterTuple ['ema.head.cls_preds.weight', 'ema.head.cls_preds.bias',
    # 'ema.head.bn.gamma']
    net = _Net()
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    assert type(train.weights).__name__ == "ParameterTuple"
    ema = train.weights.clone("ema", init="same")
    assert [p.name for p in ema][:3] == [
        "ema.head.cls_preds.weight",
        "ema.head.cls_preds.bias",
        "ema.head.bn.gamma",
    ]
    assert torch.equal(ema[0], net.head.cls_preds.weight)
