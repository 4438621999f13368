"""MindSpore's neural-network primitives (``mindspore.ops.operations.nn_ops``) on torch."""

from __future__ import annotations

from typing import Any

import torch

from .._functions import flatten, log_softmax, one_hot, softmax
from ..primitive import Primitive


class Flatten(Primitive):
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return flatten(x, 1)


class Softmax(Primitive):
    def __init__(self, axis: int = -1) -> None:
        self.axis = axis[0] if isinstance(axis, (tuple, list)) else axis

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return softmax(x, self.axis)


class LogSoftmax(Softmax):
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return log_softmax(x, self.axis)


class OneHot(Primitive):
    def __init__(self, axis: int = -1) -> None:
        self.axis = axis

    def __call__(self, indices, depth: int, on_value: Any, off_value: Any) -> torch.Tensor:
        return one_hot(indices, depth, on_value, off_value, self.axis)


__all__ = ["Flatten", "LogSoftmax", "OneHot", "Softmax"]
