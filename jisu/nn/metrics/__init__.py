"""MindSpore's metrics (``mindspore.nn.metrics``, also ``jisu.train.metrics``): each has
``clear()``, ``update(*inputs)`` and ``eval()``; :mod:`jisu.nn.metrics.metric` holds the base
(``Metric``, ``rearrange_inputs``) at MindSpore's path."""

from .basic import (
    MAE,
    MSE,
    Accuracy,
    Loss,
    Top1CategoricalAccuracy,
    Top5CategoricalAccuracy,
    TopKCategoricalAccuracy,
    get_metrics,
)
from .confusion_matrix import ConfusionMatrixMetric
from .fbeta import F1, Fbeta, Precision, Recall
from .metric import EvaluationBase, Metric, rearrange_inputs
from .roc import ROC, auc

__all__ = [
    "F1",
    "MAE",
    "MSE",
    "ROC",
    "Accuracy",
    "ConfusionMatrixMetric",
    "EvaluationBase",
    "Fbeta",
    "Loss",
    "Metric",
    "Precision",
    "Recall",
    "Top1CategoricalAccuracy",
    "Top5CategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "auc",
    "get_metrics",
    "rearrange_inputs",
]
