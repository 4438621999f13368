"""MindSpore's metric base (``mindspore.nn.metrics.metric`` / ``mindspore.train.metrics.metric``
path): :class:`Metric` with ``clear``/``update``/``eval``, input re-ordering by ``set_indexes``
and :func:`rearrange_inputs`, and the classification-or-multilabel base
:class:`EvaluationBase`. Metrics accumulate on the host, in NumPy, as MindSpore's do."""

from __future__ import annotations

import functools
from abc import ABCMeta, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = ["EvaluationBase", "Metric", "rearrange_inputs"]


def rearrange_inputs(func: Callable) -> Callable:
    """Decorate a metric's ``update`` so that its inputs are taken in the order of the metric's
    ``indexes`` (set by :meth:`Metric.set_indexes`; None keeps them)."""

    @functools.wraps(func)
    def wrapper(self: Any, *inputs: Any) -> Any:
        indexes = self.indexes
        inputs = inputs if not indexes else [inputs[i] for i in indexes]
        return func(self, *inputs)

    return wrapper


class Metric(metaclass=ABCMeta):
    """Base of metrics: subclasses define ``clear`` (reset the sums), ``update(*inputs)``
    (accumulate a batch) and ``eval()`` (the value). ``metric(*inputs)`` is clear, update,
    eval. The base's ``__init__`` does not call ``clear`` (MindSpore's neither: a subclass
    calls it once its own attributes exist)."""

    def __init__(self) -> None:
        self._indexes: list[int] | None = None

    def _convert_data(self, data: Any) -> np.ndarray:
        """``data`` (a tensor, list or array) as a NumPy array."""
        if isinstance(data, torch.Tensor):
            return data.detach().cpu().numpy()
        if isinstance(data, list):
            return np.array(data)
        if isinstance(data, np.ndarray):
            return data
        raise TypeError(
            f"{type(self).__name__}: inputs must be tensors, lists or numpy arrays. "
            f"Received {type(data).__name__}"
        )

    @property
    def indexes(self) -> list[int] | None:
        """Which inputs ``update`` takes, in order (None: all, as given)."""
        return getattr(self, "_indexes", None)

    def set_indexes(self, indexes: list[int]) -> Metric:
        """Make ``update`` (decorated with :func:`rearrange_inputs`) take
        ``inputs[indexes[0]], inputs[indexes[1]], ...``; returns the metric."""
        if not isinstance(indexes, list) or not all(isinstance(i, int) for i in indexes):
            raise ValueError(f"set_indexes: indexes must be a list of ints. Received {indexes!r}")
        self._indexes = indexes
        return self

    def __call__(self, *inputs: Any) -> Any:
        self.clear()
        self.update(*inputs)
        return self.eval()

    @abstractmethod
    def clear(self) -> None:
        """Reset the accumulated sums."""

    @abstractmethod
    def update(self, *inputs: Any) -> None:
        """Accumulate one batch."""

    @abstractmethod
    def eval(self) -> Any:
        """The metric's value over what ``update`` saw."""


_EVAL_TYPES = ("classification", "multilabel")


def check_onehot(data: np.ndarray) -> bool:
    """Whether ``data`` (N, C, ...) holds one-hot rows along axis 1."""
    if data.ndim > 1 and np.equal(data**2, data).all():
        return bool(np.equal(data.sum(axis=1), 1).all())
    return False


class EvaluationBase(Metric):
    """A metric of ``eval_type`` "classification" (scores (N, C, ...) against class indices
    (N, ...) or one-hot labels) or "multilabel" (0/1 predictions against 0/1 labels of the
    same shape)."""

    def __init__(self, eval_type: str) -> None:
        super().__init__()
        if eval_type not in _EVAL_TYPES:
            raise TypeError(f"eval_type must be in {_EVAL_TYPES}. Received {eval_type!r}")
        self._type = eval_type

    def _check_shape(self, y_pred: np.ndarray, y: np.ndarray) -> None:
        if self._type == "classification":
            if y_pred.ndim != y.ndim + 1 or y.shape != (y_pred.shape[0], *y_pred.shape[2:]):
                raise ValueError(
                    f"{type(self).__name__}: classification labels must have the predictions' "
                    f"shape without axis 1. Received y_pred {y_pred.shape}, y {y.shape}"
                )
        elif y_pred.shape != y.shape:
            raise ValueError(
                f"{type(self).__name__}: {self._type} predictions and labels must have the same "
                f"shape. Received y_pred {y_pred.shape}, y {y.shape}"
            )

    def _check_value(self, y_pred: np.ndarray, y: np.ndarray) -> None:
        if self._type != "classification" and not (
            np.equal(y_pred**2, y_pred).all() and np.equal(y**2, y).all()
        ):
            raise ValueError(f"{type(self).__name__}: multilabel inputs must all be 0 or 1")

    def clear(self) -> None:
        raise NotImplementedError

    def update(self, *inputs: Any) -> None:
        raise NotImplementedError

    def eval(self) -> Any:
        raise NotImplementedError
