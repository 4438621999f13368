"""MindSpore's neural-network primitives (``mindspore.ops.operations.nn_ops``) on torch.

The families live in private modules (convolution and padding, pooling, activations and
dropout, losses, detection, optimizer updates, fused RNNs) and are re-exported here at
MindSpore's path."""

from __future__ import annotations

from typing import Any

import torch

from .._functions import flatten, log_softmax, one_hot, softmax
from ..primitive import Primitive
from ._detection_ops import *  # noqa: F403
from ._detection_ops import __all__ as _detection
from ._loss_ops import *  # noqa: F403
from ._loss_ops import __all__ as _losses
from ._nn_activation_ops import *  # noqa: F403
from ._nn_activation_ops import __all__ as _activations
from ._nn_conv_ops import *  # noqa: F403
from ._nn_conv_ops import __all__ as _convs
from ._nn_optim_ops import *  # noqa: F403
from ._nn_optim_ops import __all__ as _optims
from ._nn_pool_ops import *  # noqa: F403
from ._nn_pool_ops import __all__ as _pools
from ._nn_rnn_ops import *  # noqa: F403
from ._nn_rnn_ops import __all__ as _rnns


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


__all__ = [
    "Flatten",
    "LogSoftmax",
    "OneHot",
    "Softmax",
    *_activations,
    *_convs,
    *_detection,
    *_losses,
    *_optims,
    *_pools,
    *_rnns,
]
