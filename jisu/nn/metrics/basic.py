"""MindSpore's accuracy, loss and error metrics, and ``get_metrics`` (what ``Model`` takes).

Model accepts metrics by name (``metrics={"acc", "loss"}``), as instances
(``{"top5": Top5CategoricalAccuracy()}``), or torchmetrics objects (anything with
``update``/``compute``/``reset``).
"""

from __future__ import annotations

from typing import Any

import torch

from .metric import Metric

__all__ = [
    "MAE",
    "MSE",
    "Accuracy",
    "Loss",
    "Top1CategoricalAccuracy",
    "Top5CategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "get_metrics",
]


def _labels(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Class indices, from indices or one-hot/probability labels."""
    if labels.dim() == logits.dim() and labels.shape == logits.shape:
        return labels.argmax(-1)
    return labels.reshape(-1).long()


class TopKCategoricalAccuracy(Metric):
    """Share of samples whose label is among the ``k`` highest scores."""

    def __init__(self, k: int) -> None:
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"TopKCategoricalAccuracy: k must be an int >= 1. Received {k!r}")
        self.k = k
        super().__init__()
        self.clear()

    def clear(self) -> None:
        self._correct, self._total = 0, 0

    def update(self, logits: torch.Tensor, labels: torch.Tensor) -> None:
        logits = logits.detach().reshape(-1, logits.shape[-1])
        labels = _labels(logits, labels.detach().reshape(logits.shape[0], -1).squeeze(-1))
        top = logits.topk(min(self.k, logits.shape[-1]), dim=-1).indices
        self._correct += int((top == labels.to(top.device)[:, None]).any(-1).sum())
        self._total += logits.shape[0]

    def eval(self) -> float:
        if self._total == 0:
            raise RuntimeError(f"{type(self).__name__}: no samples seen; call update() first")
        return self._correct / self._total


class Accuracy(TopKCategoricalAccuracy):
    """Top-1 accuracy of class scores (or of thresholded scores for one output)."""

    def __init__(self) -> None:
        super().__init__(1)

    def update(self, logits: torch.Tensor, labels: torch.Tensor) -> None:
        if logits.dim() == 1 or logits.shape[-1] == 1:  # binary: one score per sample
            predicted = (logits.detach().reshape(-1) > 0.5).long()
            self._correct += int(
                (predicted == labels.detach().reshape(-1).long().to(predicted.device)).sum()
            )
            self._total += predicted.numel()
            return
        super().update(logits, labels)


class Top1CategoricalAccuracy(TopKCategoricalAccuracy):
    def __init__(self) -> None:
        super().__init__(1)


class Top5CategoricalAccuracy(TopKCategoricalAccuracy):
    def __init__(self) -> None:
        super().__init__(5)


class Loss(Metric):
    """Mean of the losses given to ``update(loss)`` (weighted by batch size when given)."""

    def __init__(self) -> None:
        super().__init__()
        self.clear()

    def clear(self) -> None:
        self._sum, self._count = 0.0, 0

    def update(self, loss: torch.Tensor, batch_size: int = 1) -> None:
        self._sum += float(loss.detach().float().mean()) * batch_size
        self._count += batch_size

    def eval(self) -> float:
        if self._count == 0:
            raise RuntimeError("Loss: no losses seen; call update() first")
        return self._sum / self._count


class _ErrorMean(Metric):
    power = 1

    def __init__(self) -> None:
        super().__init__()
        self.clear()

    def clear(self) -> None:
        self._sum, self._count = 0.0, 0

    def update(self, outputs: torch.Tensor, labels: torch.Tensor) -> None:
        diff = outputs.detach().double().reshape(labels.shape) - labels.detach().double().to(
            outputs.device
        )
        self._sum += float(diff.abs().pow(self.power).sum())
        self._count += diff.numel()

    def eval(self) -> float:
        if self._count == 0:
            raise RuntimeError(f"{type(self).__name__}: no samples seen; call update() first")
        return self._sum / self._count


class MAE(_ErrorMean):
    """Mean absolute error."""

    power = 1


class MSE(_ErrorMean):
    """Mean squared error."""

    power = 2


_BY_NAME = {
    "acc": Accuracy,
    "accuracy": Accuracy,
    "top_1_accuracy": Top1CategoricalAccuracy,
    "top_5_accuracy": Top5CategoricalAccuracy,
    "loss": Loss,
    "mae": MAE,
    "mse": MSE,
}


class _TorchMetric(Metric):
    """Adapts a torchmetrics object."""

    def __init__(self, metric: Any) -> None:
        self.metric = metric
        super().__init__()
        self.clear()

    def clear(self) -> None:
        self.metric.reset()

    def update(self, outputs: torch.Tensor, labels: torch.Tensor) -> None:
        self.metric.update(outputs.detach(), labels.detach())

    def eval(self) -> float:
        value = self.metric.compute()
        return float(value) if torch.is_tensor(value) and value.numel() == 1 else value


def get_metrics(metrics: Any) -> dict[str, Metric]:
    """``metrics`` (None, names, or a dict of name -> metric) as a dict of Metric objects."""
    if metrics is None:
        return {}
    if isinstance(metrics, (set, list, tuple)):
        unknown = [m for m in metrics if m not in _BY_NAME]
        if unknown:
            raise ValueError(f"Model: unknown metric name(s) {unknown}; known: {sorted(_BY_NAME)}")
        return {name: _BY_NAME[name]() for name in sorted(metrics)}
    if isinstance(metrics, dict):
        out = {}
        for name, metric in metrics.items():
            if isinstance(metric, str):
                metric = get_metrics([metric])[metric]
            elif not isinstance(metric, Metric):
                if all(hasattr(metric, a) for a in ("update", "compute", "reset")):
                    metric = _TorchMetric(metric)
                else:
                    raise TypeError(
                        f"Model: metric {name!r} is not a Metric or torchmetrics object"
                    )
            out[name] = metric
        return out
    raise TypeError(f"Model: metrics must be a set/list of names or a dict. Received {metrics!r}")
