"""MindSpore's ``mindspore.nn.metrics`` path (the metrics live in :mod:`jisu.train.metrics`)."""

from ..train.metrics import (
    MAE,
    MSE,
    Accuracy,
    Loss,
    Metric,
    Top1CategoricalAccuracy,
    Top5CategoricalAccuracy,
    TopKCategoricalAccuracy,
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
]
