"""The model zoo's other jisu.nn losses against MindSpore 2.10's recorded values and gradients
(tests/fixtures/nn_losses_zoo/make_fixtures.py recorded them; MindSpore is not needed here),
and formulas where MindSpore has no CPU kernel (``SoftMarginLoss``)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from jisu import nn

FIXTURE = os.path.join(
    os.path.dirname(__file__), "..", "fixtures", "nn_losses_zoo", "mindspore.json"
)
with open(FIXTURE) as f:
    MS = json.load(f)
ARRAYS = {k: np.array(v, dtype=MS["dtypes"][k]) for k, v in MS["arrays"].items()}


def _label(case: dict) -> str:
    kwargs = ",".join(f"{k}={v}" for k, v in sorted(case["kwargs"].items()))
    return f"{case['name']}({kwargs})-{'-'.join(case['inputs'])}"


def _loss(case: dict) -> torch.nn.Module:
    kwargs = {
        k: (torch.tensor(MS["constants"][v]) if k in ("weight", "weights") else v)
        for k, v in case["kwargs"].items()
    }
    return getattr(nn, case["name"])(**kwargs)


def test_the_fixture_was_recorded_by_mindspore_2_10() -> None:
    assert MS["mindspore"] == "2.10.0"
    assert len(MS["losses"]) == 42  # SoftMarginLoss: no CPU kernel, checked by formula


@pytest.mark.parametrize("case", MS["losses"], ids=_label)
def test_the_losses_give_mindspores_values_and_gradients(case: dict) -> None:
    inputs = [torch.tensor(ARRAYS[name]) for name in case["inputs"]]
    inputs[0].requires_grad_(True)
    out = _loss(case)(*inputs)
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.detach().numpy(), case["value"], rtol=1e-5, atol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(inputs[0].grad.numpy(), case["grad"], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_soft_margin_loss_formula(reduction: str) -> None:
    x, y = ARRAYS["pred"].astype(np.float64), ARRAYS["sign"].astype(np.float64)
    want = np.log1p(np.exp(-y * x))
    want = {"none": want, "mean": want.mean(), "sum": want.sum()}[reduction]
    got = nn.SoftMarginLoss(reduction)(torch.tensor(ARRAYS["pred"]), torch.tensor(ARRAYS["sign"]))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_defaults_and_old_base() -> None:
    assert nn.SmoothL1Loss().reduction == "none"  # MindSpore's default here
    assert nn.BCELoss().reduction == "mean"
    from jisu.nn.loss.loss import _Loss

    class Mine(_Loss):
        def construct(self, logits, labels):
            return self.get_loss(torch.abs(logits - labels), 2.0)

    assert issubclass(_Loss, nn.LossBase)
    assert Mine()(torch.ones(3), torch.zeros(3)).item() == 2.0
    assert Mine("sum")(torch.ones(3), torch.zeros(3)).item() == 6.0


def test_argument_errors() -> None:
    with pytest.raises(ValueError, match="reduction"):
        nn.BCELoss(reduction="avg")
    with pytest.raises(ValueError, match="beta"):
        nn.SmoothL1Loss(beta=0.0)
    with pytest.raises(TypeError, match="gamma"):
        nn.FocalLoss(gamma=2)
    with pytest.raises(ValueError, match="margin"):
        nn.CosineEmbeddingLoss(margin=1.5)
    with pytest.raises(ValueError, match="activation"):
        nn.MultiClassDiceLoss(activation="gelu")
    with pytest.raises(ValueError, match="same shape"):
        nn.DiceLoss()(torch.zeros(2, 3), torch.zeros(3, 2))


def test_loss_base_holds_mindspores_primitives() -> None:
    class Mine(nn.LossBase):  # a model-zoo loss that calls its base's primitives
        def construct(self, logits, labels):
            x = self.cast(self.mul(logits - labels, 2.0), torch.float32)
            return self.reduce_mean(x, ()) + self.reduce_sum(x) * 0

    assert Mine()(torch.ones(4), torch.zeros(4)).item() == 2.0
    assert list(Mine().state_dict()) == []
