"""MindSpore's ``mindspore.train.metrics`` path (the metrics live in :mod:`jisu.nn.metrics`,
below the training package, which builds on them)."""

from ..nn.metrics import (
    MAE,
    MSE,
    Accuracy,
    Loss,
    Metric,
    Top1CategoricalAccuracy,
    Top5CategoricalAccuracy,
    TopKCategoricalAccuracy,
    get_metrics,
)

__all__ = [
    "MAE",
    "MSE",
    "Accuracy",
    "Loss",
    "Metric",
    "Top1CategoricalAccuracy",
    "Top5CategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "get_metrics",
]
