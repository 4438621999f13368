"""jisu.nn's wrapper cells against MindSpore 2.10's recorded training steps
(``tests/fixtures/nn_losses/make_fixtures.py``) and hand-computed torch expectations."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from jisu import nn

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nn_losses", "mindspore.json")
with open(FIXTURE) as f:
    MS = json.load(f)["train_one_step"]
X = torch.tensor(MS["x"])
Y = torch.tensor(MS["y"])
BIG = X * 1000  # gradients ~1e3: times a scale ~3e38 they overflow float32


def _dense() -> torch.nn.Linear:
    net = torch.nn.Linear(3, 2)
    with torch.no_grad():
        net.weight.copy_(torch.tensor(MS["weight"]))
        net.bias.copy_(torch.tensor(MS["bias"]))
    return net


def _ce():
    return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")


@pytest.mark.parametrize("run", MS["runs"], ids=lambda r: f"sens={r['sens']}")
def test_train_one_step_cell_trains_as_mindspore(run):
    net = _dense()
    opt = nn.Momentum(net.parameters(), learning_rate=0.1, momentum=0.9)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, _ce()), opt, sens=run["sens"])
    losses = [float(step(X, Y)) for _ in range(3)]  # each: the loss before that step's update
    np.testing.assert_allclose(losses, run["losses"], rtol=1e-5)
    np.testing.assert_allclose(net.weight.detach().numpy(), run["weight"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.bias.detach().numpy(), run["bias"], rtol=1e-5, atol=1e-6)


def test_with_eval_cell_returns_mindspores_loss_outputs_and_label():
    loss, outputs, label = nn.WithEvalCell(_dense(), _ce())(X, Y)
    np.testing.assert_allclose(float(loss.detach()), MS["eval_loss"], rtol=1e-6)
    np.testing.assert_allclose(outputs.detach().numpy(), MS["eval_outputs"], rtol=1e-6)
    assert label is Y


def test_with_eval_cell_add_cast_fp32_casts_outputs_and_float_labels():
    net = _dense().half()
    label = torch.ones(4, 2, dtype=torch.float16)
    _, outputs, got = nn.WithEvalCell(net, nn.MSELoss(), add_cast_fp32=True)(X.half(), label)
    assert outputs.dtype == got.dtype == torch.float32
    _, _, same = nn.WithEvalCell(net, _ce(), add_cast_fp32=True)(X.half(), Y)
    assert same.dtype == Y.dtype  # integer labels stay
    with pytest.raises(TypeError, match="add_cast_fp32 must be a bool"):
        nn.WithEvalCell(net, _ce(), add_cast_fp32=1)


def test_with_loss_cell_is_the_loss_of_the_backbone():
    net = _dense()
    cell = nn.WithLossCell(net, _ce())
    assert cell.backbone_network is net
    expected = torch.nn.functional.cross_entropy(X @ net.weight.T + net.bias, Y.long())
    torch.testing.assert_close(cell(X, Y), expected)
    assert dict(cell.named_parameters()).keys() == {"_backbone.weight", "_backbone.bias"}


def test_train_one_step_cell_is_torchs_sgd_step_with_a_scaled_gradient():
    net, ref = _dense(), _dense()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, _ce()), nn.SGD(net.parameters(), 0.5), sens=3)
    sgd = torch.optim.SGD(ref.parameters(), lr=0.5)
    for _ in range(2):
        got = step(X, Y)
        sgd.zero_grad()
        want = torch.nn.functional.cross_entropy(ref(X), Y.long())
        (3 * want).backward()
        sgd.step()
        assert not got.requires_grad
        torch.testing.assert_close(got, want.detach())
    torch.testing.assert_close(net.weight, ref.weight)


def test_train_one_step_cell_works_with_a_plain_torch_optimizer_and_returns_grads():
    net = _dense()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, _ce()), opt, return_grad=True)
    w0 = net.weight.detach().clone()
    loss, grads = step(X, Y)
    assert set(grads) == {"_backbone.weight", "_backbone.bias"}
    torch.testing.assert_close(net.weight.detach(), w0 - 0.1 * grads["_backbone.weight"])
    assert float(loss) == pytest.approx(MS["runs"][0]["losses"][0], rel=1e-5)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"sens": 0}, ValueError, "sens cannot be 0"),
        ({"sens": "1"}, TypeError, "sens must be a number"),
        ({"return_grad": 1}, TypeError, "return_grad must be a bool"),
    ],
)
def test_train_one_step_cell_checks_its_arguments(kwargs, error, match):
    net = _dense()
    with pytest.raises(error, match=match):
        nn.TrainOneStepCell(net, nn.SGD(net.parameters()), **kwargs)


def _scaled_step(scale_sense, optimizer=None):
    net = _dense()
    opt = optimizer(net.parameters()) if optimizer else nn.SGD(net.parameters(), 0.5)
    return net, nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(net, _ce()), opt, scale_sense)


@pytest.mark.parametrize("optimizer", [None, lambda p: torch.optim.SGD(p, lr=0.5)])
def test_loss_scaling_unscales_the_gradients(optimizer):
    net, step = _scaled_step(torch.tensor(1024.0), optimizer)
    ref = _dense()
    loss, overflow, scale = step(X, Y)
    want = torch.nn.functional.cross_entropy(ref(X), Y.long())
    want.backward()
    torch.testing.assert_close(loss, want.detach())
    assert not bool(overflow) and float(scale) == 1024.0
    torch.testing.assert_close(net.weight.detach(), ref.weight.detach() - 0.5 * ref.weight.grad)


@pytest.mark.parametrize("optimizer", [None, lambda p: torch.optim.SGD(p, lr=0.5)])
def test_an_overflowing_step_updates_nothing(optimizer):
    net, step = _scaled_step(torch.tensor([3e38]), optimizer)  # the scaled backward overflows
    before = [p.detach().clone() for p in net.parameters()]
    loss, overflow, _ = step(BIG, Y)
    assert bool(overflow) and torch.isfinite(loss)
    for p, b in zip(net.parameters(), before):
        assert torch.equal(p.detach(), b)
    if optimizer is None:
        assert int(step.optimizer.global_step) == 0


def test_the_dynamic_manager_halves_on_overflow_and_grows_after_the_window():
    manager = nn.DynamicLossScaleUpdateCell(loss_scale_value=8.0, scale_factor=2, scale_window=2)
    scale = torch.tensor(8.0)
    history = []
    for flag in [True, False, False, False, False, True, True, True, True]:
        assert bool(manager(scale, torch.tensor(flag))) is flag
        history.append(float(scale))
    # MindSpore's rule: it grows once the steps since the last overflow (or growth) reach
    # the window; it never drops below 1
    assert history == [4.0, 4.0, 8.0, 8.0, 16.0, 8.0, 4.0, 2.0, 1.0]
    assert manager.get_loss_scale() == 8.0
    fixed = nn.FixedLossScaleUpdateCell(64.0)
    assert fixed.get_loss_scale() == 64.0 and bool(fixed(scale, torch.tensor(True)))


def test_a_managed_step_lowers_the_scale_of_the_next():
    _, step = _scaled_step(nn.DynamicLossScaleUpdateCell(3e38, 2.0**100, 1000))
    _, overflow, used = step(BIG, Y)
    assert bool(overflow) and float(used) == pytest.approx(3e38)
    assert float(step.scale_sense) == pytest.approx(3e38 / 2.0**100)
    _, overflow, _ = step(BIG, Y)
    assert not bool(overflow)


def test_the_scale_can_be_set_and_is_checked():
    _, step = _scaled_step(torch.tensor(2.0))
    step.set_sense_scale(torch.tensor(16.0))
    assert float(step.scale_sense) == 16.0
    with pytest.raises(TypeError, match="sens must be a tensor"):
        step.set_sense_scale(16.0)
    with pytest.raises(ValueError, match=r"shape \(\) or \(1,\)"):
        _scaled_step(torch.ones(2))
    with pytest.raises(TypeError, match="scale_sense must be a Cell or a tensor"):
        _scaled_step(2.0)
