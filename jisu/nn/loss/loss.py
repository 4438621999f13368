"""MindSpore's losses with MindSpore 2.10's arguments and defaults, as torch modules.

Each is a :class:`~jisu.nn.Cell` (so a ``torch.nn.Module``): it moves with ``.to()``, its class
weights are buffers, and gradients flow through torch's autograd. Inputs are upcast to float32
before the loss is computed, so a float16/bfloat16 network (``to_float``, autocast) gets a
float32 loss, as torch's autocast gives its own losses. Labels are taken as MindSpore takes
them: class indices of any integer dtype, or float one-hot / probability rows.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ..cell import Cell

REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(owner: str, reduction: Any) -> str:
    if reduction not in REDUCTIONS:
        raise ValueError(
            f"{owner}: reduction must be one of 'mean', 'sum', 'none'. Received {reduction!r}"
        )
    return reduction


def _as_weight(owner: str, name: str, value: Any) -> torch.Tensor | None:
    """An optional weight as a float32 tensor (MindSpore takes a Tensor; numbers and arrays
    convert too)."""
    if value is None:
        return None
    if isinstance(value, torch.nn.Parameter):  # MindSpore: weights are constants, not trained
        raise TypeError(f"{owner}: {name} cannot be a Parameter. Received a Parameter")
    try:
        return torch.as_tensor(value).detach().to(torch.float32)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(
            f"{owner}: {name} must be a tensor. Received {type(value).__name__}"
        ) from err


def _float32(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype == torch.float32 else x.to(torch.float32)


class LossBase(Cell):
    """MindSpore's base of losses: holds ``reduction`` and applies it in :meth:`get_loss`.

    Subclasses implement ``construct(logits, labels)`` and return ``self.get_loss(x)``.

    Args:
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: ``reduction`` is not one of the three.
    """

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _check_reduction(type(self).__name__, reduction)
        self.average = reduction == "mean"
        self.reduce = reduction != "none"
        # MindSpore's LossBase holds these primitives; model-zoo losses call them as its own
        from ...ops import operations as P  # the ops package builds on jisu.nn: import late

        self.reduce_mean, self.reduce_sum = P.ReduceMean(), P.ReduceSum()
        self.mul, self.cast = P.Mul(), P.Cast()

    def get_axis(self, x: torch.Tensor) -> tuple[int, ...]:
        """Every axis of ``x`` (what MindSpore's reductions reduce over)."""
        return tuple(range(x.ndim))

    def get_loss(self, x: torch.Tensor, weights: Any = 1.0) -> torch.Tensor:
        """``weights * x`` in float32, reduced by ``reduction`` over every axis, in ``x``'s
        dtype (MindSpore's rule; jisu's losses hand it float32).

        Args:
            x: the unreduced loss.
            weights: a number, or a tensor broadcastable to ``x``. Default 1.0.
        """
        dtype = x.dtype
        weights = torch.as_tensor(weights, dtype=torch.float32, device=x.device)
        out = weights * _float32(x)
        if self.reduce:
            out = out.mean() if self.average else out.sum()
        return out.to(dtype)

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement construct")


class _Loss(LossBase):
    """MindSpore's old name of :class:`LossBase` (``mindspore.nn.loss.loss._Loss``, the base of
    many model-zoo losses): the same ``reduction`` and ``get_loss(x, weights)``."""


class SoftmaxCrossEntropyWithLogits(LossBase):
    """Softmax cross entropy of each row of ``logits`` (the class axis is the last): ``-sum(
    labels * log_softmax(logits))``.

    Args:
        sparse: labels are class indices (``(N,)``, any integer dtype) rather than one-hot or
            probability rows of ``logits``' shape. Default False.
        reduction: ``"none"`` (default: one loss per row), ``"mean"`` or ``"sum"``.

    Inputs:
        logits ``(N, C)``; labels ``(N,)`` indices (sparse) or ``(N, C)`` floats.

    A sparse label outside ``[0, C)`` is a zero one-hot row: its loss is 0 (MindSpore's
    one-hot rule).

    Example:
        >>> loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        >>> loss(torch.randn(8, 10), torch.randint(0, 10, (8,)))
    """

    def __init__(self, sparse: bool = False, reduction: str = "none") -> None:
        super().__init__(reduction)
        if not isinstance(sparse, bool):
            raise TypeError(
                f"SoftmaxCrossEntropyWithLogits: sparse must be a bool. Received {sparse!r}"
            )
        self.sparse = sparse

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        log_probs = torch.log_softmax(_float32(logits), dim=-1)
        if self.sparse:
            if labels.is_floating_point() or labels.dtype == torch.bool:
                raise TypeError(
                    "SoftmaxCrossEntropyWithLogits: sparse labels must be integer class "
                    f"indices. Received dtype {labels.dtype}"
                )
            classes = torch.arange(log_probs.shape[-1], device=labels.device)
            one_hot = labels.unsqueeze(-1) == classes  # out of range: a zero row
            x = -torch.where(one_hot, log_probs, 0.0).sum(-1)
        else:
            x = -(_float32(labels) * log_probs).sum(-1)
        return self.get_loss(x)


class CrossEntropyLoss(LossBase):
    """Cross entropy of ``logits`` (the class axis is 1, or 0 for a single ``(C,)`` row)
    against class indices or class probabilities, with MindSpore's (= torch's) rules for
    class weights, ``ignore_index`` and label smoothing.

    Args:
        weight: a ``(C,)`` weight per class, or None. Default None.
        ignore_index: a class index whose targets count for nothing (not in the mean's
            denominator either). Default -100.
        reduction: ``"mean"`` (default; weighted by the targets' class weights),
            ``"sum"`` or ``"none"``.
        label_smoothing: a float in [0, 1]. Default 0.0.

    Inputs:
        logits ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``; labels: indices of the shape without
        ``C`` (any integer dtype), or float probabilities of ``logits``' shape.

    Example:
        >>> loss = nn.CrossEntropyLoss(label_smoothing=0.1)
        >>> loss(torch.randn(8, 10), torch.randint(0, 10, (8,)))
    """

    def __init__(
        self,
        weight: Any = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(reduction)
        if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
            raise TypeError(
                f"CrossEntropyLoss: ignore_index must be an int. Received {ignore_index!r}"
            )
        if not isinstance(label_smoothing, float):
            raise TypeError(
                f"CrossEntropyLoss: label_smoothing must be a float. Received {label_smoothing!r}"
            )
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(
                "CrossEntropyLoss: label_smoothing must be in [0.0, 1.0]. Received "
                f"{label_smoothing}"
            )
        self.register_buffer("weight", _as_weight("CrossEntropyLoss", "weight", weight))
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        # class indices as torch wants them (int64); probabilities in float32
        labels = _float32(labels) if labels.is_floating_point() else labels.long()
        return F.cross_entropy(
            _float32(logits),
            labels,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class MSELoss(LossBase):
    """Mean squared error: ``(logits - labels)^2``, reduced (the two broadcast).

    Args:
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
    """

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.get_loss(torch.square(_float32(logits) - _float32(labels)))


class L1Loss(LossBase):
    """Mean absolute error: ``|logits - labels|``, reduced (the two broadcast).

    Args:
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
    """

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.get_loss(torch.abs(_float32(logits) - _float32(labels)))


class BCEWithLogitsLoss(LossBase):
    """Binary cross entropy of ``sigmoid(input)`` against ``target`` in [0, 1], computed from
    the logits (stable)::

        loss = -weight * (pos_weight * target * log(sigmoid(input))
                          + (1 - target) * log(1 - sigmoid(input)))

    Args:
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        weight: a weight broadcastable to ``input``, or None. Default None.
        pos_weight: the positive targets' weight, broadcastable to ``input`` (one per class
            on the last axis), or None. Default None.
    """

    def __init__(self, reduction: str = "mean", weight: Any = None, pos_weight: Any = None) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", _as_weight("BCEWithLogitsLoss", "weight", weight))
        self.register_buffer(
            "pos_weight", _as_weight("BCEWithLogitsLoss", "pos_weight", pos_weight)
        )

    def construct(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(
            _float32(input),
            _float32(target),
            weight=self.weight,
            pos_weight=self.pos_weight,
            reduction=self.reduction,
        )
