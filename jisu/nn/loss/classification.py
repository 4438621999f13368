"""MindSpore's other classification and embedding losses: ``BCELoss``, ``NLLLoss``,
``FocalLoss``, ``SoftMarginLoss``, ``KLDivLoss`` and ``CosineEmbeddingLoss``, with MindSpore's
arguments and defaults (inputs upcast to float32, as :mod:`jisu.nn.loss.loss`'s)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from .loss import LossBase, _as_weight, _check_reduction, _float32

__all__ = [
    "BCELoss",
    "CTCLoss",
    "CosineEmbeddingLoss",
    "FocalLoss",
    "KLDivLoss",
    "NLLLoss",
    "SoftMarginLoss",
]


class BCELoss(LossBase):
    """Binary cross entropy of probabilities ``logits`` in [0, 1] against ``labels``:
    ``-weight · (labels · log(logits) + (1 - labels) · log(1 - logits))`` (each log clamped at
    -100, torch's rule).

    Args:
        weight: a weight broadcastable to the input, or None. Default None.
        reduction: "mean" (default), "sum" or "none".
    """

    def __init__(self, weight: Any = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.register_buffer("weight", _as_weight("BCELoss", "weight", weight))

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits, labels = _float32(logits), _float32(labels)
        weight = None if self.weight is None else self.weight.expand_as(logits)
        return F.binary_cross_entropy(logits, labels, weight=weight, reduction=self.reduction)


class NLLLoss(LossBase):
    """Negative log likelihood of log-probabilities ``logits`` (N, C) or (N, C, d1, ...)
    at the class indices ``labels`` (torch's ``nll_loss``: class ``weight``, ``ignore_index``,
    the mean weighted by the targets' weights).

    Args:
        weight: a (C,) float weight per class, or None. Default None.
        ignore_index: a label that counts for nothing. Default -100.
        reduction: "mean" (default), "sum" or "none".
    """

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(reduction)
        if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
            raise TypeError(f"NLLLoss: ignore_index must be an int. Received {ignore_index!r}")
        self.register_buffer("weight", _as_weight("NLLLoss", "weight", weight))
        self.ignore_index = ignore_index

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.nll_loss(
            _float32(logits),
            labels.long(),
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
        )


class FocalLoss(LossBase):
    """Focal loss of class scores ``logits`` (N, C) or (N, C, d1, ...), MindSpore's form:
    ``p = softmax(logits)`` over axis 1, ``loss = -(1 - p)^gamma · weight · log p``, averaged
    over the classes against one-hot ``labels`` of ``logits``' shape, or taken at the class
    of ``labels`` of shape (N, 1, d1, ...) (then averaged over the spatial positions), one
    value per sample before ``reduction``.

    Args:
        weight: a (C,) weight per class, or None. Default None.
        gamma: the focusing exponent, a float. Default 2.0.
        reduction: "mean" (default), "sum" or "none".
    """

    def __init__(self, weight: Any = None, gamma: float = 2.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        if not isinstance(gamma, float):
            raise TypeError(f"FocalLoss: gamma must be a float. Received gamma={gamma!r}")
        weight = _as_weight("FocalLoss", "weight", weight)
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"FocalLoss: weight must be 1-d. Received shape={tuple(weight.shape)}")
        self.register_buffer("weight", weight)
        self.gamma = gamma

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if logits.dim() < 2 or labels.dim() < 2:
            raise ValueError("FocalLoss: logits and labels must be at least 2-d")
        if labels.shape[1] not in (1, logits.shape[1]):
            raise ValueError(
                "FocalLoss: labels' axis 1 must be 1 (class indices) or C (one-hot). Received "
                f"logits {tuple(logits.shape)}, labels {tuple(labels.shape)}"
            )
        n, c = logits.shape[:2]
        log_p = torch.log_softmax(_float32(logits).reshape(n, c, -1), dim=1)
        labels = labels.reshape(n, labels.shape[1], -1)
        sparse = labels.shape[1] == 1
        if sparse:
            log_p = log_p.gather(1, labels.long()).squeeze(1)
        p = torch.exp(log_p)
        if self.weight is not None:
            w = self.weight.view(1, -1, 1).expand(n, c, log_p.shape[-1])
            log_p = log_p * (w.gather(1, labels.long()).squeeze(1) if sparse else w)
        focus = torch.pow(1.0 - p, self.gamma)
        if sparse:
            loss = (-focus * log_p).mean(dim=1)
        else:
            loss = (-focus * _float32(labels) * log_p).mean(dim=-1)
        return self.get_loss(loss)


class SoftMarginLoss(LossBase):
    """``log(1 + exp(-labels · logits))`` with labels in {-1, 1}, reduced.

    Args:
        reduction: "mean" (default), "sum" or "none".
    """

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.soft_margin_loss(_float32(logits), _float32(labels), reduction=self.reduction)


class KLDivLoss(LossBase):
    """Kullback-Leibler divergence ``labels · (log(labels) - logits)`` of log-probabilities
    ``logits`` from probabilities ``labels`` (0 where a label is 0).

    Args:
        reduction: "mean" (default: over every element), "batchmean" (sum / batch size),
            "sum" or "none".
    """

    def __init__(self, reduction: str = "mean") -> None:
        if reduction == "batchmean":
            super().__init__("sum")
        else:
            super().__init__(_check_reduction("KLDivLoss", reduction))
        self.reduction = reduction

    def construct(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.reduction == "mean":  # over every element (torch warns on its own "mean")
            return F.kl_div(_float32(logits), _float32(labels), reduction="none").mean()
        return F.kl_div(_float32(logits), _float32(labels), reduction=self.reduction)


class CosineEmbeddingLoss(LossBase):
    """Per row of (N, D) ``logits_x1``, ``logits_x2``: ``1 - cos`` where ``labels`` is 1,
    ``max(0, cos - margin)`` where it is -1 (0 otherwise), reduced.

    Args:
        margin: a float in [-1, 1]. Default 0.0.
        reduction: "mean" (default), "sum" or "none".
    """

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        if not isinstance(margin, float):
            raise TypeError(f"CosineEmbeddingLoss: margin must be a float. Received {margin!r}")
        if not -1.0 <= margin <= 1.0:
            raise ValueError(f"CosineEmbeddingLoss: margin must be in [-1, 1]. Received {margin}")
        self.margin = margin

    def construct(
        self, logits_x1: torch.Tensor, logits_x2: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        if logits_x1.shape != logits_x2.shape:
            raise ValueError(
                "CosineEmbeddingLoss: logits_x1 and logits_x2 must have the same shape. Received "
                f"{tuple(logits_x1.shape)} and {tuple(logits_x2.shape)}"
            )
        x1, x2 = _float32(logits_x1), _float32(logits_x2)
        cosine = (x1 * x2).sum(1) / (x1.square().sum(1).sqrt() * x2.square().sum(1).sqrt())
        zeros = torch.zeros_like(cosine)
        pos = torch.where(labels == 1, 1.0 - cosine, zeros)
        neg = torch.where(labels == -1, torch.clamp(cosine - self.margin, min=0.0), zeros)
        return self.get_loss(pos + neg)


class CTCLoss(LossBase):
    """Connectionist temporal classification loss (torch's ``ctc_loss``, whose arguments
    MindSpore 2.x's ``CTCLoss`` takes): ``log_probs`` (T, N, C) or (T, C), ``targets``,
    ``input_lengths``, ``target_lengths``.

    Args:
        blank: the blank label. Default 0.
        reduction: "mean" (default: each loss divided by its target length, then averaged),
            "sum" or "none".
        zero_infinity: make infinite losses (and their gradients) zero. Default False.
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction)
        if isinstance(blank, bool) or not isinstance(blank, int) or blank < 0:
            raise ValueError(f"CTCLoss: blank must be an int >= 0. Received blank={blank!r}")
        if not isinstance(zero_infinity, bool):
            raise TypeError(f"CTCLoss: zero_infinity must be a bool. Received {zero_infinity!r}")
        self.blank, self.zero_infinity = blank, zero_infinity

    def construct(
        self,
        log_probs: torch.Tensor,
        targets: torch.Tensor,
        input_lengths: Any,
        target_lengths: Any,
    ) -> torch.Tensor:
        def lengths(value: Any) -> Any:
            return value.long() if isinstance(value, torch.Tensor) else value

        return F.ctc_loss(
            _float32(log_probs),
            targets.long(),
            lengths(input_lengths),
            lengths(target_lengths),
            blank=self.blank,
            reduction=self.reduction,
            zero_infinity=self.zero_infinity,
        )
