"""A cell's own attribute named ``train`` (MindSpore: an ordinary attribute; official/cv/PointNet
sets ``self.train = True``) does not break ``set_train``.

MindSpore 2.10 (PyNative) printed, for the same cells: after set_train(False), head.train is
True and the output is the BatchNorm1d eval of x ([[0.999995, 1.99999], [2.999985, 4.999975]]);
after set_train(True), head.train is True and the norm layer is training.
"""

import numpy as np

import jisu as ms
from jisu import nn


class Head(nn.Cell):
    def __init__(self):
        super().__init__()
        self.train = True
        self.drop = nn.Dropout(p=0.5)
        self.bn = nn.BatchNorm1d(2)

    def construct(self, x):
        return self.bn(self.drop(x))


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def construct(self, x):
        return self.head(x)


def test_set_train_through_a_train_attribute():
    net = Net()
    x = ms.Tensor(np.array([[1.0, 2.0], [3.0, 5.0]], np.float32))
    net.set_train(False)
    assert net.head.train is True
    assert not any(m.training for m in net.modules())
    np.testing.assert_allclose(
        net(x).detach().numpy(),
        [[0.9999949932098389, 1.9999899864196777], [2.9999849796295166, 4.999975204467773]],
        rtol=1e-6,
    )
    net.set_train(True)
    assert net.head.train is True
    assert all(m.training for m in net.modules())
    assert net.phase == "train"


def test_model_modes_through_a_train_attribute():
    net = Net()
    x = ms.Tensor(np.array([[1.0, 2.0], [3.0, 5.0]], np.float32))
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    model = ms.Model(net, loss_fn=nn.MSELoss(), optimizer=opt)
    net.set_train(True)
    out = model.predict(x)  # eval mode, then the training mode back
    np.testing.assert_allclose(out.numpy(), [[0.999995, 1.99999], [2.999985, 4.999975]], 1e-5)
    assert all(m.training for m in net.modules())
