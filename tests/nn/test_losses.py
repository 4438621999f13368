"""jisu.nn's losses against MindSpore 2.10's recorded outputs and gradients
(``tests/fixtures/nn_losses/make_fixtures.py`` recorded them; MindSpore is not needed here)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from jisu import nn

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nn_losses", "mindspore.json")
with open(FIXTURE) as f:
    MS = json.load(f)
ARRAYS = {k: np.array(v, dtype=MS["dtypes"][k]) for k, v in MS["arrays"].items()}


def _label(case):
    kwargs = ",".join(f"{k}={v}" for k, v in sorted(case["kwargs"].items()))
    return f"{case['name']}({kwargs})-{'-'.join(case['inputs'])}"


def _loss(case):
    kwargs = {
        k: (torch.tensor(MS["constants"][v]) if k in ("weight", "pos_weight") else v)
        for k, v in case["kwargs"].items()
    }
    return getattr(nn, case["name"])(**kwargs)


def test_the_fixture_was_recorded_by_mindspore_2_10():
    assert MS["mindspore"] == "2.10.0"
    assert len(MS["losses"]) == 66


@pytest.mark.parametrize("case", MS["losses"], ids=_label)
def test_the_losses_give_mindspores_values_and_gradients(case):
    inputs = [torch.tensor(ARRAYS[name]) for name in case["inputs"]]
    inputs[0].requires_grad_(True)
    out = _loss(case)(*inputs)
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.detach().numpy(), case["value"], rtol=1e-5, atol=1e-6)
    if "grad" in case:
        out.sum().backward()
        np.testing.assert_allclose(inputs[0].grad.numpy(), case["grad"], rtol=1e-5, atol=1e-6)


SPARSE_CASES = [
    c
    for c in MS["losses"]
    if c["inputs"][1] in ("sparse", "ignored")
    and (c["name"] == "CrossEntropyLoss" or c["kwargs"].get("sparse"))
]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int16, torch.uint8], ids=str)
@pytest.mark.parametrize("case", SPARSE_CASES[:6], ids=_label)
def test_sparse_labels_of_any_int_dtype_work(case, dtype):
    labels = ARRAYS[case["inputs"][1]]
    if dtype == torch.uint8 and (labels < 0).any():
        pytest.skip("uint8 cannot hold -100")
    out = _loss(case)(torch.tensor(ARRAYS[case["inputs"][0]]), torch.tensor(labels).to(dtype))
    np.testing.assert_allclose(out.numpy(), case["value"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_logits_give_a_float32_loss(dtype):
    case = next(
        c
        for c in MS["losses"]
        if c["name"] == "CrossEntropyLoss"
        and c["kwargs"] == {"reduction": "mean"}
        and c["inputs"] == ["logits", "sparse"]
    )
    logits = torch.tensor(ARRAYS["logits"]).to(dtype)
    out = nn.CrossEntropyLoss()(logits, torch.tensor(ARRAYS["sparse"]))
    assert out.dtype == torch.float32
    np.testing.assert_allclose(float(out), case["value"], rtol=2e-2)


def test_softmax_cross_entropy_sparse_out_of_range_label_is_a_zero_one_hot_row():
    logits = torch.tensor(ARRAYS["logits"])
    labels = torch.tensor([1, -1, 3, 7, 1])
    out = nn.SoftmaxCrossEntropyWithLogits(sparse=True)(logits, labels)
    expected = -torch.log_softmax(logits, -1)[torch.arange(5), labels.clamp(0, 3)]
    expected[[1, 3]] = 0.0
    torch.testing.assert_close(out, expected)


def test_loss_base_get_loss_weights_and_reduces_in_float32():
    class Half(nn.LossBase):
        def construct(self, logits, labels):
            return self.get_loss(logits - labels, weights=torch.tensor([[1.0], [3.0]]))

    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float16)
    y = torch.zeros(2, 2, dtype=torch.float16)
    assert float(Half()(x, y)) == (1 + 2 + 9 + 12) / 4  # mean over every axis
    assert float(Half("sum")(x, y)) == 24
    assert Half("sum")(x, y).dtype == torch.float16  # MindSpore: back to the input's dtype
    assert Half("none")(x, y).tolist() == [[1, 2], [9, 12]]
    assert nn.LossBase().get_axis(x) == (0, 1)
    with pytest.raises(NotImplementedError):
        nn.LossBase()(x, y)


def test_the_defaults_are_mindspores():
    assert nn.SoftmaxCrossEntropyWithLogits().reduction == "none"
    assert nn.SoftmaxCrossEntropyWithLogits().sparse is False
    ce = nn.CrossEntropyLoss()
    assert (ce.weight, ce.ignore_index, ce.reduction, ce.label_smoothing) == (
        None,
        -100,
        "mean",
        0.0,
    )
    for cls in (nn.MSELoss, nn.L1Loss, nn.BCEWithLogitsLoss):
        assert cls().reduction == "mean"


def test_class_weights_are_buffers_that_follow_the_module():
    loss = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0], dtype=torch.float64))
    assert loss.weight.dtype == torch.float32
    assert "weight" in dict(loss.named_buffers())
    assert list(loss.parameters()) == []


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: nn.MSELoss("avg"), ValueError, "MSELoss: reduction must be one of"),
        (lambda: nn.BCEWithLogitsLoss("avg"), ValueError, "BCEWithLogitsLoss: reduction"),
        (lambda: nn.SoftmaxCrossEntropyWithLogits(1), TypeError, "sparse must be a bool"),
        (lambda: nn.CrossEntropyLoss(ignore_index=1.0), TypeError, "ignore_index must be an int"),
        (lambda: nn.CrossEntropyLoss(label_smoothing=1), TypeError, "must be a float"),
        (lambda: nn.CrossEntropyLoss(label_smoothing=1.5), ValueError, r"in \[0.0, 1.0\]"),
        (
            lambda: nn.BCEWithLogitsLoss(weight=torch.nn.Parameter(torch.ones(2))),
            TypeError,
            "weight cannot be a Parameter",
        ),
    ],
)
def test_bad_arguments_raise_mindspores_error_types(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_sparse_softmax_cross_entropy_refuses_float_labels():
    with pytest.raises(TypeError, match="sparse labels must be integer"):
        nn.SoftmaxCrossEntropyWithLogits(sparse=True)(torch.zeros(2, 3), torch.zeros(2))
