"""MindSpore's regression and overlap losses: ``SmoothL1Loss``, ``RMSELoss``, ``MAELoss``,
``DiceLoss`` and ``MultiClassDiceLoss``, with MindSpore's arguments and defaults."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..layer.activation import get_activation
from .loss import LossBase, _float32

__all__ = ["DiceLoss", "MAELoss", "MultiClassDiceLoss", "RMSELoss", "SmoothL1Loss"]


class SmoothL1Loss(LossBase):
    """``0.5 · d² / beta`` where ``|d| < beta``, else ``|d| - 0.5 · beta`` (``d = logits -
    labels``; torch's ``smooth_l1_loss``).

    Args:
        beta: the switch point, a float > 0. Default 1.0.
        reduction: "none" (MindSpore's default here: one loss per element), "mean" or "sum".
    """

    def __init__(self, beta: float = 1.0, reduction: str = "none") -> None:
        super().__init__(reduction)
        if isinstance(beta, bool) or not isinstance(beta, (int, float)):
            raise TypeError(f"SmoothL1Loss: beta must be a float. Received beta={beta!r}")
        if beta <= 0:
            raise ValueError(f"SmoothL1Loss: beta must be > 0. Received beta={beta}")
        self.beta = float(beta)

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if logits.shape != labels.shape:
            raise ValueError(
                "SmoothL1Loss: logits and labels must have the same shape. Received "
                f"{tuple(logits.shape)} and {tuple(labels.shape)}"
            )
        return F.smooth_l1_loss(
            _float32(logits), _float32(labels), reduction=self.reduction, beta=self.beta
        )


class RMSELoss(LossBase):
    """``sqrt(mean((logits - labels)²))`` (the two broadcast)."""

    def __init__(self) -> None:
        super().__init__()

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(torch.square(_float32(logits) - _float32(labels)).mean())


class MAELoss(LossBase):
    """``|logits - labels|``, reduced (the two broadcast).

    Args:
        reduction: "mean" (default), "sum" or "none".
    """

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.get_loss(torch.abs(_float32(logits) - _float32(labels)))


class DiceLoss(LossBase):
    """``1 - 2·Σ(logits·labels) / (Σ logits² + Σ labels² + smooth)`` over all elements: one
    value for the batch.

    Args:
        smooth: added to the denominator, a float > 0. Default 1e-5.
    """

    def __init__(self, smooth: float = 1e-5) -> None:
        super().__init__()
        if not isinstance(smooth, float) or smooth <= 0:
            raise ValueError(f"DiceLoss: smooth must be a float > 0. Received smooth={smooth!r}")
        self.smooth = smooth

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if logits.shape != labels.shape:
            raise ValueError(
                "DiceLoss: logits and labels must have the same shape. Received "
                f"{tuple(logits.shape)} and {tuple(labels.shape)}"
            )
        x, y = _float32(logits).reshape(-1), _float32(labels).reshape(-1)
        union = (x * x).sum() + (y * y).sum()
        return 1 - 2 * (x * y).sum() / (union + self.smooth)


_DICE_ACTIVATIONS = ("softmax", "logsoftmax", "relu", "relu6", "tanh", "sigmoid")


class MultiClassDiceLoss(LossBase):
    """The mean over the classes (axis 1) of :class:`DiceLoss` between ``activation(logits)``
    and one-hot ``labels`` of the same shape (N, C, ...), each class's loss times its weight.

    Args:
        weights: a 2-d tensor whose rows weigh the classes (``weights[i]``), or None.
        ignore_indiex: a class left out (MindSpore's spelling), or None.
        activation: "softmax" (default), "logsoftmax", "relu", "relu6", "tanh", "sigmoid",
            a cell, or None.
    """

    def __init__(
        self, weights: Any = None, ignore_indiex: int | None = None, activation: Any = "softmax"
    ) -> None:
        super().__init__()
        if weights is not None:
            weights = torch.as_tensor(weights, dtype=torch.float32)
            if weights.dim() != 2:
                shape = tuple(weights.shape)
                raise ValueError(f"MultiClassDiceLoss: weights must be 2-d. Received shape={shape}")
        self.register_buffer("weights", weights)
        if ignore_indiex is not None and (
            isinstance(ignore_indiex, bool) or not isinstance(ignore_indiex, int)
        ):
            raise TypeError(
                f"MultiClassDiceLoss: ignore_indiex must be an int. Received {ignore_indiex!r}"
            )
        self.ignore_indiex = ignore_indiex
        if isinstance(activation, str):
            if activation not in _DICE_ACTIVATIONS:
                raise ValueError(
                    f"MultiClassDiceLoss: activation must be one of {list(_DICE_ACTIVATIONS)}. "
                    f"Received {activation!r}"
                )
            activation = get_activation(activation)  # softmax: over the last axis (MindSpore's)
        elif activation is not None and not isinstance(activation, nn.Module):
            raise TypeError(
                f"MultiClassDiceLoss: activation must be a str or a Cell. Received {activation!r}"
            )
        self.activation = activation
        self.binarydiceloss = DiceLoss(smooth=1e-5)

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if logits.shape != labels.shape or logits.dim() < 2:
            raise ValueError(
                "MultiClassDiceLoss: logits and labels must have the same shape, at least 2-d. "
                f"Received {tuple(logits.shape)} and {tuple(labels.shape)}"
            )
        if self.activation is not None:
            logits = self.activation(logits)
        total = 0
        for i in range(labels.shape[1]):
            if i == self.ignore_indiex:
                continue
            loss = self.binarydiceloss(logits[:, i], labels[:, i])
            if self.weights is not None:
                loss = loss * self.weights[i]
            total = total + loss
        return total / labels.shape[1]
