"""Metrics against their definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import jisu.amp as amp
from jisu.train import MAE, MSE, Accuracy, Loss, Top1CategoricalAccuracy, Top5CategoricalAccuracy
from jisu.train.metrics import get_metrics

RNG = np.random.default_rng(3)


def test_top_k_accuracy_is_the_share_of_labels_among_the_k_best_scores():
    scores = RNG.standard_normal((50, 8))
    labels = RNG.integers(0, 8, 50)
    ranks = (scores > scores[np.arange(50), labels][:, None]).sum(1)  # 0 = the best score
    for metric, k in ((Top1CategoricalAccuracy(), 1), (Top5CategoricalAccuracy(), 5)):
        for part in (slice(0, 20), slice(20, 50)):  # accumulates over updates
            metric.update(torch.tensor(scores[part]), torch.tensor(labels[part]))
        assert metric.eval() == pytest.approx((ranks < k).mean())
        metric.clear()
        with pytest.raises(RuntimeError, match="no samples"):
            metric.eval()


def test_accuracy_takes_one_hot_labels_and_binary_scores():
    scores = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    acc = Accuracy()
    acc.update(scores, torch.tensor([[0, 1], [0, 1], [0, 1]]))
    assert acc.eval() == pytest.approx(2 / 3)
    binary = Accuracy()
    binary.update(torch.tensor([0.9, 0.2, 0.6, 0.4]), torch.tensor([1, 0, 0, 0]))
    assert binary.eval() == pytest.approx(3 / 4)


def test_errors_and_loss_means():
    pred, target = RNG.standard_normal(30), RNG.standard_normal(30)
    mae, mse = MAE(), MSE()
    for metric in (mae, mse):
        metric.update(torch.tensor(pred[:10]), torch.tensor(target[:10]))
        metric.update(torch.tensor(pred[10:]), torch.tensor(target[10:]))
    assert mae.eval() == pytest.approx(np.abs(pred - target).mean())
    assert mse.eval() == pytest.approx(((pred - target) ** 2).mean())
    loss = Loss()
    loss.update(torch.tensor(2.0), batch_size=3)
    loss.update(torch.tensor(4.0), batch_size=1)
    assert loss.eval() == pytest.approx((2 * 3 + 4) / 4)


def test_metrics_by_name_instance_or_torchmetrics_like_object():
    class Counting:  # the torchmetrics protocol: update / compute / reset
        def __init__(self):
            self.n = 0

        def update(self, outputs, labels):
            self.n += len(labels)

        def compute(self):
            return torch.tensor(float(self.n))

        def reset(self):
            self.n = 0

    metrics = get_metrics({"acc": "acc", "mine": MAE(), "count": Counting()})
    metrics["count"].update(torch.zeros(4, 2), torch.zeros(4))
    assert metrics["count"].eval() == 4.0 and isinstance(metrics["acc"], Accuracy)
    with pytest.raises(TypeError, match="not a Metric"):
        get_metrics({"bad": object()})


def test_all_finite_flags_inf_and_nan_on_the_device():
    ok = [torch.ones(3), torch.zeros(2, 2)]
    assert bool(amp.all_finite(ok))
    assert not bool(amp.all_finite([*ok, torch.tensor([1.0, float("inf")])]))
    assert not bool(amp.all_finite([torch.tensor([float("nan")])]))
    assert amp.all_finite(ok).dtype == torch.bool and amp.all_finite(ok).dim() == 0
