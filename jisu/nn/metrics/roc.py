"""MindSpore's ``ROC`` metric (false/true positive rates per threshold, of the last
``update``) and ``auc`` (the area under a curve by the trapezoid rule), in NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np

from .metric import Metric, rearrange_inputs

__all__ = ["ROC", "auc"]


def _curve_inputs(y_pred: np.ndarray, y: np.ndarray, class_num: Any, pos_label: Any):
    """Scores and labels flattened: binary (same shapes; ``class_num`` 1, ``pos_label``
    default 1) or one score column per class (scores with one more axis, axis 1)."""
    if y_pred.ndim == y.ndim:
        if class_num is not None and class_num != 1:
            raise ValueError(f"ROC: same-shape inputs need class_num 1. Received {class_num}")
        return y_pred.flatten(), y.flatten(), 1, 1 if pos_label is None else pos_label
    if y_pred.ndim == y.ndim + 1:
        if pos_label is not None:
            raise ValueError("ROC: pos_label must be None when the scores have a class axis")
        if class_num != y_pred.shape[1]:
            raise ValueError(
                f"ROC: class_num must be the scores' classes ({y_pred.shape[1]}). "
                f"Received class_num={class_num}"
            )
        scores = np.moveaxis(y_pred, 1, -1).reshape(-1, class_num)
        return scores, y.flatten(), class_num, None
    raise ValueError(
        "ROC: the scores must have the labels' dims, or one more. Received "
        f"{y_pred.shape} and {y.shape}"
    )


def _binary_roc(scores: np.ndarray, labels: np.ndarray, pos_label: int):
    order = np.argsort(-scores, kind="stable")
    scores, hits = scores[order], (labels[order] == pos_label).astype(np.int64)
    last = np.r_[np.where(np.diff(scores))[0], hits.shape[0] - 1]  # end of each score's run
    tps = np.r_[0, np.cumsum(hits)[last]]
    fps = np.r_[0, 1 + last - tps[1:]]
    thresholds = np.r_[scores[last][0] + 1, scores[last]]
    if fps[-1] <= 0:
        raise ValueError("ROC.eval: no negative samples among the labels")
    if tps[-1] <= 0:
        raise ValueError("ROC.eval: no positive samples among the labels")
    return fps / fps[-1], tps / tps[-1], thresholds


class ROC(Metric):
    """The receiver operating characteristic of the last ``update(y_pred, y)``: ``eval()``
    gives (fpr, tpr, thresholds), thresholds decreasing (the first is the top score + 1), or
    lists of them, one per class, for scores (N, C) against class indices (N,).

    Args:
        class_num: the classes of scores with a class axis (None: binary). Default None.
        pos_label: the positive label of binary scores (default 1).
    """

    def __init__(self, class_num: int | None = None, pos_label: int | None = None) -> None:
        super().__init__()
        for name, value in (("class_num", class_num), ("pos_label", pos_label)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"ROC: {name} must be an int or None. Received {value!r}")
        self.class_num, self.pos_label = class_num, pos_label
        self.clear()

    def clear(self) -> None:
        self.y_pred, self.y, self._is_update = 0, 0, False

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        if len(inputs) != 2:
            raise ValueError(f"ROC.update: needs 2 inputs (y_pred, y). Received {len(inputs)}")
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        self.y_pred, self.y, self.class_num, self.pos_label = _curve_inputs(
            y_pred, y, self.class_num, self.pos_label
        )
        self._is_update = True

    def eval(self) -> Any:
        if not self._is_update:
            raise RuntimeError("ROC: call update() before eval()")
        y_pred, y = np.squeeze(self.y_pred), np.squeeze(self.y)
        if self.class_num == 1:
            return _binary_roc(y_pred, y, self.pos_label)
        curves = [_binary_roc(y_pred[:, c], y, c) for c in range(self.class_num)]
        return tuple(list(part) for part in zip(*curves))


def auc(x: np.ndarray, y: np.ndarray, reorder: bool = False) -> float:
    """The area under the curve through the points (x, y) by the trapezoid rule; ``x`` must be
    monotonic unless ``reorder`` sorts the points by x (then y)."""
    if not isinstance(x, np.ndarray) or not isinstance(y, np.ndarray):
        raise TypeError(f"auc: x and y must be numpy arrays. Received {type(x)}, {type(y)}")
    x, y = _column(x), _column(y)
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"auc: x and y have {x.shape[0]} and {y.shape[0]} points")
    if x.shape[0] < 2:
        raise ValueError(f"auc: at least 2 points are needed. Received {x.shape[0]}")
    direction = 1
    if reorder:
        order = np.lexsort((y, x))
        x, y = x[order], y[order]
    else:
        dx = np.diff(x)
        if np.any(dx < 0):
            if not np.all(dx <= 0):
                raise ValueError(f"auc: x must be increasing or decreasing. Received {x}")
            direction = -1
    trapezoid = getattr(np, "trapezoid", None) or np.trapz
    return direction * trapezoid(y, x)


def _column(values: np.ndarray) -> np.ndarray:
    if values.ndim == 1 or (values.ndim == 2 and values.shape[1] == 1):
        return values.ravel()
    raise ValueError(f"auc: x and y must be 1-d (or (n, 1)). Received shape {values.shape}")
