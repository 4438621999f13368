"""MindSpore's functional ``ops`` on arrays and math (``ops.reshape``, ``ops.matmul``,
``ops.norm``, ...), from :mod:`.function` (MindSpore's ``mindspore.ops.function``), plus the
few activations the primitives of ``nn_ops`` share; each one a few torch calls, so they run
under autograd, AMP and ``torch.compile`` like torch code."""

from __future__ import annotations

import torch

from .function import __all__ as _FUNCTION_NAMES
from .function.array_func import *  # noqa: F403
from .function.array_func import flatten, one_hot  # noqa: F401 (nn_ops imports them here)
from .function.math_func import *  # noqa: F403


def softmax(x: torch.Tensor, axis: int = -1) -> torch.Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis``."""
    return torch.softmax(x, dim=axis)


def log_softmax(x: torch.Tensor, axis: int = -1) -> torch.Tensor:
    """``log(softmax(x))`` along ``axis``."""
    return torch.log_softmax(x, dim=axis)


def relu(x: torch.Tensor) -> torch.Tensor:
    """``max(x, 0)``."""
    return torch.relu(x)


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    """``1 / (1 + exp(-x))``."""
    return torch.sigmoid(x)


def tanh(x: torch.Tensor) -> torch.Tensor:
    """The hyperbolic tangent."""
    return torch.tanh(x)


__all__ = [*_FUNCTION_NAMES, "log_softmax", "relu", "sigmoid", "softmax", "tanh"]
