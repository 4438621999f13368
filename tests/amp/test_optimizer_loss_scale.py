"""Model with an optimizer's ``loss_scale`` beside ``FixedLossScaleManager(drop_overflow_update=
False)``, the model zoo's pairing: one step updates as MindSpore 2.0.0 does (recorded by
tests/fixtures/zoo_loss_scale/make_fixtures.py), the same as without scaling; before, the
gradients were unscaled twice (by the step and by the optimizer) and updates were 1024x too
small."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import jisu as ms
from jisu import dataset as ds
from jisu import nn

FIXTURES = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "zoo_loss_scale" / "fixtures.json").read_text()
)


def _one_step(opt_scale, manager, level="O0"):
    net = nn.Dense(4, 2)
    with torch.no_grad():
        net.weight.copy_(torch.tensor(FIXTURES["W"]))
        net.bias.copy_(torch.tensor(FIXTURES["B"]))
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9, loss_scale=opt_scale)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = ms.Model(net, loss, opt, loss_scale_manager=manager, amp_level=level)
    x = np.array(FIXTURES["X"], "float32")
    y = np.array(FIXTURES["Y"], "int32")
    model.train(1, ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(4))
    return net.weight.detach().float().numpy(), net.bias.detach().float().numpy()


@pytest.mark.parametrize(
    ("case", "opt_scale", "manager"),
    [
        ("optimizer_unscales", 1024.0, lambda: ms.FixedLossScaleManager(1024.0, False)),
        ("no_scaling", 1.0, lambda: None),
        # jisu's own pairing (the step unscales): the same update
        ("no_scaling", 1.0, lambda: ms.FixedLossScaleManager(1024.0, True)),
    ],
)
def test_one_step_matches_mindspore(case, opt_scale, manager):
    weight, bias = _one_step(opt_scale, manager())
    want_w, want_b = FIXTURES["cases"][case]
    np.testing.assert_allclose(weight, np.array(want_w), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bias, np.array(want_b), rtol=1e-5, atol=1e-6)
