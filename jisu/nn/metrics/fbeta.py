"""MindSpore's ``Fbeta``, ``F1``, ``Precision`` and ``Recall`` metrics (per-class values of
argmax predictions, accumulated in NumPy)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .metric import EvaluationBase, Metric, check_onehot, rearrange_inputs

__all__ = ["F1", "Fbeta", "Precision", "Recall"]

_EPS = sys.float_info.min


def _one_hot_pair(owner: str, y_pred: np.ndarray, y: np.ndarray, classes: int):
    """Class-index labels and argmax predictions as one-hot rows (N·..., C)."""
    if y.max() + 1 > classes:
        raise ValueError(
            f"{owner}: the labels hold class {int(y.max())} but the predictions have {classes} "
            "classes"
        )
    eye = np.eye(classes)
    return eye[y_pred.argmax(axis=1).reshape(-1)], eye[y.reshape(-1).astype(np.int64)]


def _check_classes(owner: str, seen: int, y_pred: np.ndarray) -> int:
    if seen and y_pred.shape[1] != seen:
        raise ValueError(
            f"{owner}: the predictions had {seen} classes and now have {y_pred.shape[1]}"
        )
    return y_pred.shape[1]


def _check_average(owner: str, average: Any) -> None:
    if not isinstance(average, bool):
        raise TypeError(f"{owner}.eval: average must be a bool. Received {average!r}")


class Fbeta(Metric):
    """Per-class F-beta of argmax predictions (N, C) against class indices (N,) or one-hot
    labels: ``(1 + beta²)·tp / (beta²·actual + predicted)``; ``eval(average=True)`` gives the
    mean over classes."""

    def __init__(self, beta: float) -> None:
        super().__init__()
        if not beta > 0:
            raise ValueError(f"Fbeta: beta must be > 0. Received beta={beta}")
        self.beta, self.eps = beta, _EPS
        self.clear()

    def clear(self) -> None:
        self._true_positives, self._actual_positives, self._positives = 0, 0, 0
        self._class_num = 0

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        if len(inputs) != 2:
            raise ValueError(f"Fbeta.update: needs 2 inputs (y_pred, y). Received {len(inputs)}")
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if y_pred.ndim == y.ndim and check_onehot(y):
            y = y.argmax(axis=1)
        self._class_num = _check_classes("Fbeta.update", self._class_num, y_pred)
        pred, true = _one_hot_pair("Fbeta.update", y_pred, y, self._class_num)
        self._true_positives += (true * pred).sum(axis=0)
        self._positives += pred.sum(axis=0)
        self._actual_positives += true.sum(axis=0)

    def eval(self, average: bool = False) -> Any:
        _check_average("Fbeta", average)
        if self._class_num == 0:
            raise RuntimeError("Fbeta: no samples seen; call update() first")
        b2 = self.beta**2
        fbeta = (
            (1.0 + b2)
            * self._true_positives
            / (b2 * self._actual_positives + self._positives + self.eps)
        )
        return fbeta.mean() if average else fbeta


class F1(Fbeta):
    """:class:`Fbeta` with beta 1."""

    def __init__(self) -> None:
        super().__init__(1.0)


class _PrecisionRecall(EvaluationBase):
    """tp / (predicted positives) or tp / (actual positives), per class ("classification")
    or per sample ("multilabel", whose ``average`` is the mean of the per-sample values)."""

    _actual = False  # Recall: divide by the actual positives

    def __init__(self, eval_type: str = "classification") -> None:
        super().__init__(eval_type)
        self.eps = _EPS
        self.clear()

    def clear(self) -> None:
        self._class_num = 0
        multi = self._type == "multilabel"
        self._true_positives = np.empty(0) if multi else 0
        self._denominators = np.empty(0) if multi else 0
        self._ratio_sum, self._ratio_count = 0, 0

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        owner = f"{type(self).__name__}.update"
        if len(inputs) != 2:
            raise ValueError(f"{owner}: needs 2 inputs (y_pred, y). Received {len(inputs)}")
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if self._type == "classification" and y_pred.ndim == y.ndim and check_onehot(y):
            y = y.argmax(axis=1)
        self._check_shape(y_pred, y)
        self._check_value(y_pred, y)
        self._class_num = _check_classes(owner, self._class_num, y_pred)
        if self._type == "classification":
            y_pred, y = _one_hot_pair(owner, y_pred, y, self._class_num)
        else:
            y_pred = y_pred.swapaxes(1, 0).reshape(self._class_num, -1)
            y = y.swapaxes(1, 0).reshape(self._class_num, -1)
        denominator = (y if self._actual else y_pred).sum(axis=0)
        true_positives = (y * y_pred).sum(axis=0)
        if self._type == "multilabel":
            with np.errstate(invalid="ignore"):  # 0 / 0 (eps underflows in float32): NaN
                self._ratio_sum += np.sum(true_positives / (denominator + self.eps))
            self._ratio_count += len(denominator)
            self._true_positives = np.concatenate((self._true_positives, true_positives))
            self._denominators = np.concatenate((self._denominators, denominator))
        else:
            self._true_positives += true_positives
            self._denominators += denominator

    def eval(self, average: bool = False) -> Any:
        if self._class_num == 0:
            raise RuntimeError(f"{type(self).__name__}: no samples seen; call update() first")
        _check_average(type(self).__name__, average)
        result = self._true_positives / (self._denominators + self.eps)
        if average and self._type == "multilabel":
            return self._ratio_sum / (self._ratio_count + self.eps)
        return result.mean() if average else result


class Precision(_PrecisionRecall):
    """Precision, tp / predicted positives: per class of argmax predictions (N, C) against
    class indices or one-hot labels ("classification"), or per sample of 0/1 predictions
    ("multilabel"); ``eval(average=True)`` averages."""


class Recall(_PrecisionRecall):
    """Recall, tp / actual positives: per class of argmax predictions (N, C) against class
    indices or one-hot labels ("classification"), or per sample of 0/1 predictions
    ("multilabel"); ``eval(average=True)`` averages."""

    _actual = True
