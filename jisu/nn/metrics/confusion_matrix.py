"""MindSpore's ``ConfusionMatrixMetric``: ratios of true/false positives/negatives (sensitivity,
specificity, precision, F1, MCC ...) of binarized predictions, as MindSpore computes them (in
NumPy, on the host)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .metric import Metric, rearrange_inputs

__all__ = ["ConfusionMatrixMetric"]

_ALIASES = {
    "tpr": ("sensitivity", "recall", "hit_rate", "true_positive_rate"),
    "tnr": ("specificity", "selectivity", "true_negative_rate"),
    "ppv": ("precision", "positive_predictive_value"),
    "npv": ("negative_predictive_value",),
    "fnr": ("miss_rate", "false_negative_rate"),
    "fpr": ("fall_out", "false_positive_rate"),
    "fdr": ("false_discovery_rate",),
    "for": ("false_omission_rate",),
    "pt": ("prevalence_threshold",),
    "ts": ("threat_score", "critical_success_index", "csi"),
    "acc": ("accuracy",),
    "ba": ("balanced_accuracy",),
    "f1": ("f1_score",),
    "mcc": ("matthews_correlation_coefficient",),
    "fm": ("fowlkes_mallows_index",),
    "bm": ("informedness", "bookmaker_informedness"),
    "mk": ("markedness", "deltap"),
}
_CANONICAL = {alias: key for key, aliases in _ALIASES.items() for alias in (key, *aliases)}
_DECREASES = ("none", "mean", "sum", "mean_batch", "sum_batch", "mean_channel", "sum_channel")


def _canonical(metric_name: str) -> str:
    key = _CANONICAL.get(metric_name.replace(" ", "_").lower())
    if key is None:
        raise NotImplementedError(f"ConfusionMatrixMetric: unknown metric_name {metric_name!r}")
    return key


def _nan_div(num: Any, den: Any) -> np.ndarray:
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / np.where(den != 0, den, 1.0), np.nan)


def _metric(name: str, cm: np.ndarray) -> np.ndarray:
    """The metric ``name`` of confusion counts ``cm`` (..., 4) = (tp, fp, tn, fn); NaN where
    its denominator is 0."""
    cm = cm[None] if cm.ndim == 1 else cm
    tp, fp, tn, fn = (cm[..., i] for i in range(4))
    p, n = tp + fn, fp + tn
    tpr, tnr = _nan_div(tp, p), _nan_div(tn, n)
    ratios = {
        "tpr": lambda: (tp, p),
        "tnr": lambda: (tn, n),
        "ppv": lambda: (tp, tp + fp),
        "npv": lambda: (tn, tn + fn),
        "fnr": lambda: (fn, p),
        "fpr": lambda: (fp, n),
        "fdr": lambda: (fp, fp + tp),
        "for": lambda: (fn, fn + tn),
        "pt": lambda: (np.sqrt(tpr * (1.0 - tnr)) + tnr - 1.0, tpr + tnr - 1.0),
        "ts": lambda: (tp, tp + fn + fp),
        "acc": lambda: (tp + tn, p + n),
        "ba": lambda: (tpr + tnr, 2.0),
        "f1": lambda: (tp * 2.0, tp * 2.0 + fn + fp),
        "mcc": lambda: (tp * tn - fp * fn, np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))),
        "fm": lambda: (np.sqrt(_nan_div(tp, tp + fp) * tpr), 1.0),
        "bm": lambda: (tpr + tnr - 1.0, 1.0),
        "mk": lambda: (_nan_div(tp, tp + fp) + tn / (tn + fn) - 1.0, 1.0),
    }
    num, den = ratios[name]()
    return _nan_div(num, np.broadcast_to(den, np.shape(num)))


def _confusion(y_pred: np.ndarray, y: np.ndarray, skip_channel: bool) -> np.ndarray:
    """(batch, class, 4) counts of tp, fp, tn, fn over each sample's positions."""
    if not skip_channel:  # leave the first (background) channel out
        y = y[:, 1:] if y.shape[1] > 1 else y
        y_pred = y_pred[:, 1:] if y_pred.shape[1] > 1 else y_pred
    if y.shape != y_pred.shape:
        raise ValueError(
            "ConfusionMatrixMetric: y_pred and y must have the same shape. Received "
            f"{y_pred.shape} and {y.shape}"
        )
    batch, classes = y_pred.shape[:2]
    y_pred = y_pred.astype(float).reshape(batch, classes, -1)
    y = y.astype(float).reshape(batch, classes, -1)
    tp = (y_pred + y == 2).sum(axis=2).astype(float)
    tn = (y_pred + y == 0).sum(axis=2).astype(float)
    p = y.sum(axis=2)
    n = y.shape[-1] - p
    return np.stack([tp, n - tn, tn, p - tp], axis=-1)


def _decrease(chart: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """``chart`` (batch, class) reduced by ``mode``, NaNs left out: (value, count kept)."""
    kept = (~np.isnan(chart)).astype(float)
    chart = np.where(np.isnan(chart), 0.0, chart)

    def mean(values: np.ndarray, counts: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
        total = counts.sum(axis=axis)
        return np.where(total > 0, values.sum(axis=axis) / np.maximum(total, 1), 0.0), total

    if mode == "none":
        return chart, kept
    if mode == "sum":
        return chart.sum(axis=(0, 1)), kept.sum(axis=(0, 1))
    if mode == "mean":
        per_sample, counts = mean(chart, kept, 1)
        return mean(per_sample, (counts > 0).astype(float), 0)
    axis = 0 if mode.endswith("batch") else 1
    if mode.startswith("sum"):
        return chart.sum(axis=axis), kept.sum(axis=axis)
    return mean(chart, kept, axis)


class ConfusionMatrixMetric(Metric):
    """A confusion-matrix ratio of binarized predictions (N, C, ...) against binarized labels of
    the same shape.

    Args:
        skip_channel: False leaves channel 0 (the background) out. Default True.
        metric_name: "sensitivity" (default), "specificity", "precision", "f1_score",
            "accuracy", "mcc" ... (MindSpore's names and aliases; case and spaces ignored).
        calculation_method: True: the metric of each sample and class, reduced by ``decrease``
            ("mean" or "sum") and averaged over the updates; False (default): the metric of the
            counts summed over everything.
        decrease: the reduction of the per-sample values: "mean" (default), "sum", "none",
            "mean_batch", "sum_batch", "mean_channel", "sum_channel" (``eval`` needs "mean" or
            "sum" with ``calculation_method``).
    """

    def __init__(
        self,
        skip_channel: bool = True,
        metric_name: str = "sensitivity",
        calculation_method: bool = False,
        decrease: str = "mean",
    ) -> None:
        super().__init__()
        for name, value in (
            ("skip_channel", skip_channel),
            ("calculation_method", calculation_method),
        ):
            if not isinstance(value, bool):
                raise TypeError(f"ConfusionMatrixMetric: {name} must be a bool. Received {value!r}")
        if not isinstance(metric_name, str):
            raise TypeError(
                f"ConfusionMatrixMetric: metric_name must be a str. Received {metric_name!r}"
            )
        if decrease not in _DECREASES:
            raise ValueError(
                f"ConfusionMatrixMetric: decrease must be one of {_DECREASES}. "
                f"Received {decrease!r}"
            )
        self._key = _canonical(metric_name)
        self.skip_channel, self.metric_name = skip_channel, metric_name
        self.calculation_method, self.decrease = calculation_method, decrease
        self.clear()

    def clear(self) -> None:
        self._total_num, self._class_num = 0.0, 0
        self._totals = np.zeros(4)

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        if len(inputs) != 2:
            raise ValueError(
                f"ConfusionMatrixMetric.update: needs 2 inputs (y_pred, y). Received {len(inputs)}"
            )
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if not np.all(y.astype(np.uint8) == y):
            raise ValueError("ConfusionMatrixMetric.update: y must be binarized (0/1)")
        if y_pred.ndim < 2:
            raise ValueError("ConfusionMatrixMetric.update: y_pred must have at least 2 dims")
        cm = _confusion(y_pred, y, self.skip_channel)
        flat = y_pred.ndim == 2 or (y_pred.ndim == 3 and y_pred.shape[-1] == 1)
        if self.calculation_method and not flat:
            score, kept = _decrease(_metric(self._key, cm), self.decrease)
            kept = int(np.asarray(kept).item())
            self._total_num += float(np.asarray(score).item()) * kept
            self._class_num += kept
        else:
            self._totals += cm.sum(axis=(0, 1))

    def eval(self) -> Any:
        if self.calculation_method and self._class_num:
            return self._total_num / self._class_num
        if self.calculation_method and not self._totals.any():
            raise RuntimeError("ConfusionMatrixMetric: no samples seen; call update() first")
        return _metric(self._key, self._totals)
