"""MindSpore's loss primitives (``SoftmaxCrossEntropyWithLogits``,
``SparseSoftmaxCrossEntropyWithLogits``, ``SigmoidCrossEntropyWithLogits``, ``SmoothL1Loss``,
``BCEWithLogitsLoss``, ``BinaryCrossEntropy``, ``KLDivLoss``, ``NLLLoss``, ``L2Loss``,
``CTCLoss``) on torch, with MindSpore's inputs, reductions and tuple outputs."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ..primitive import Primitive

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(owner: str, reduction: Any, allowed: tuple[str, ...] = _REDUCTIONS) -> str:
    if reduction not in allowed:
        raise ValueError(
            f"{owner}: reduction must be one of {', '.join(map(repr, allowed))}. "
            f"Received reduction={reduction!r}"
        )
    return reduction


def _reduce(loss: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


class _Reduced(Primitive):
    _allowed = _REDUCTIONS

    def __init__(self, reduction: str = "mean") -> None:
        self.reduction = _reduction(type(self).__name__, reduction, self._allowed)


class L2Loss(Primitive):
    """``sum(x ** 2) / 2``, a scalar."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return (x * x).sum() / 2


class SoftmaxCrossEntropyWithLogits(Primitive):
    """Cross entropy of (N, C) logits against (N, C) label distributions: returns
    ``(loss, backprop)``, the (N,) losses and their gradient ``softmax(logits) - labels``."""

    def __call__(
        self, logits: torch.Tensor, labels: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if logits.dim() != 2 or logits.shape != labels.shape:
            raise ValueError(
                "SoftmaxCrossEntropyWithLogits: logits and labels must both be (N, C). "
                f"Received {tuple(logits.shape)} and {tuple(labels.shape)}"
            )
        logp = torch.log_softmax(logits, dim=-1)
        loss = -(labels * logp).sum(dim=-1)
        return loss, (logp.exp() - labels).detach()


class SparseSoftmaxCrossEntropyWithLogits(Primitive):
    """Mean cross entropy of (N, C) logits against (N,) class indices; with ``is_grad=True``
    the gradient ``(softmax(logits) - one_hot(labels)) / N`` instead."""

    def __init__(self, is_grad: bool = False) -> None:
        if not isinstance(is_grad, bool):
            raise TypeError(
                f"SparseSoftmaxCrossEntropyWithLogits: is_grad must be a bool. Received {is_grad!r}"
            )
        self.is_grad = is_grad

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        labels = labels.long()
        if not self.is_grad:
            return F.cross_entropy(logits, labels)
        hot = F.one_hot(labels, logits.shape[-1]).to(logits.dtype)
        return (torch.softmax(logits, dim=-1) - hot) / logits.shape[0]


class SigmoidCrossEntropyWithLogits(Primitive):
    """Element-wise ``-(y log sigmoid(x) + (1 - y) log(1 - sigmoid(x)))``."""

    def __call__(self, logits: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(logits, label.to(logits.dtype), reduction="none")


class SmoothL1Loss(_Reduced):
    """``0.5 d ** 2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` elsewhere (``d = logits
    - labels``): ``SmoothL1Loss(beta=1.0, reduction="none")(logits, labels)``."""

    def __init__(self, beta: float = 1.0, reduction: str = "none") -> None:
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or beta <= 0:
            raise ValueError(f"SmoothL1Loss: beta must be a float > 0. Received beta={beta!r}")
        super().__init__(reduction)
        self.beta = float(beta)

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.smooth_l1_loss(logits, labels, reduction=self.reduction, beta=self.beta)


class BCEWithLogitsLoss(_Reduced):
    """Binary cross entropy on logits with per-element ``weight`` and per-class
    ``pos_weight``: ``BCEWithLogitsLoss(reduction="mean")(logits, label, weight,
    pos_weight)``."""

    def __call__(
        self,
        logits: torch.Tensor,
        label: torch.Tensor,
        weight: torch.Tensor | None = None,
        pos_weight: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(
            logits, label, weight, reduction=self.reduction, pos_weight=pos_weight
        )


class BinaryCrossEntropy(_Reduced):
    """Binary cross entropy of probabilities ``logits`` against ``labels``:
    ``BinaryCrossEntropy(reduction="mean")(logits, labels, weight=None)``."""

    def __call__(
        self, logits: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor | None = None
    ) -> torch.Tensor:
        return F.binary_cross_entropy(logits, labels, weight, reduction=self.reduction)


class KLDivLoss(_Reduced):
    """``labels * (log(labels) - logits)`` (``logits`` are log-probabilities), reduced by
    "none", "mean" (over elements), "batchmean" or "sum"."""

    _allowed = ("none", "mean", "batchmean", "sum")

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        loss = torch.xlogy(labels, labels) - labels * logits
        if self.reduction == "batchmean":
            return loss.sum() / loss.shape[0]
        return _reduce(loss, self.reduction)


class NLLLoss(_Reduced):
    """Negative log likelihood of (N, C) log-probabilities at (N,) class indices with (C,)
    class ``weight``: returns ``(loss, total_weight)``, ``total_weight`` the summed weight of
    the counted samples (``ignore_index`` ones left out)."""

    def __init__(self, reduction: str = "mean", ignore_index: int = -100) -> None:
        super().__init__(reduction)
        self.ignore_index = ignore_index

    def __call__(
        self, logits: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        labels = labels.long()
        if weight is None:
            weight = torch.ones(logits.shape[-1], dtype=logits.dtype, device=logits.device)
        kept = labels != self.ignore_index
        safe = torch.where(kept, labels, torch.zeros_like(labels))
        w = weight[safe] * kept.to(weight.dtype)
        per = -logits.gather(-1, safe[:, None])[:, 0] * w
        total = w.sum()
        if self.reduction == "none":
            return per, total
        if self.reduction == "sum":
            return per.sum(), total
        return per.sum() / total, total


class CTCLoss(Primitive):
    """Connectionist temporal classification loss of (T, N, C) logits (blank = C - 1) against
    sparse labels: ``CTCLoss()(x, labels_indices, labels_values, sequence_length)`` returns
    ``(loss, gradient)``, the (N,) losses and their gradient with respect to ``x``."""

    def __init__(
        self,
        preprocess_collapse_repeated: bool = False,
        ctc_merge_repeated: bool = True,
        ignore_longer_outputs_than_inputs: bool = False,
    ) -> None:
        if not ctc_merge_repeated:
            raise NotImplementedError(
                "CTCLoss: ctc_merge_repeated=False is not provided by jisu (torch's CTC "
                "always merges repeated labels). Received ctc_merge_repeated=False"
            )
        self.preprocess_collapse_repeated = preprocess_collapse_repeated
        self.ctc_merge_repeated = ctc_merge_repeated
        self.ignore_longer_outputs_than_inputs = ignore_longer_outputs_than_inputs

    def _targets(
        self, indices: torch.Tensor, values: torch.Tensor, batch: int, blank: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Dense (batch, longest) targets and their lengths from the sparse labels. Values
        equal to the blank are padding, not labels (MindSpore drops them: mindocr pads each
        label to a fixed length with the blank)."""
        keep = values != blank
        indices, values = indices[keep], values[keep]
        if self.preprocess_collapse_repeated:
            return self._collapsed_targets(indices, values, batch)
        rows, cols = indices[:, 0].long(), indices[:, 1].long()
        width = int(cols.max().item()) + 1 if cols.numel() else 1  # host sync: a shape
        dense = torch.zeros(batch, width, dtype=torch.long, device=values.device)
        dense[rows, cols] = values.long()
        return dense, torch.bincount(rows, minlength=batch)

    def _collapsed_targets(
        self, indices: torch.Tensor, values: torch.Tensor, batch: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # host loop: repeated labels are merged before the loss, row by row
        rows: list[list[int]] = [[] for _ in range(batch)]
        for (b, _), v in sorted(zip(indices.tolist(), values.tolist())):
            if not rows[b] or rows[b][-1] != v:
                rows[b].append(v)
        width = max((len(r) for r in rows), default=0) or 1
        dense = torch.zeros(batch, width, dtype=torch.long)
        for b, r in enumerate(rows):
            dense[b, : len(r)] = torch.tensor(r, dtype=torch.long)
        lengths = torch.tensor([len(r) for r in rows], dtype=torch.long)
        return dense.to(values.device), lengths.to(values.device)

    def _loss(self, x: torch.Tensor, targets, lengths, seq) -> torch.Tensor:
        return F.ctc_loss(
            torch.log_softmax(x, dim=-1),
            targets,
            seq,
            lengths,
            blank=x.shape[-1] - 1,
            reduction="none",
            zero_infinity=self.ignore_longer_outputs_than_inputs,
        )

    def __call__(
        self,
        x: torch.Tensor,
        labels_indices: torch.Tensor,
        labels_values: torch.Tensor,
        sequence_length: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if x.dim() != 3:
            raise ValueError(f"CTCLoss: x must be (T, N, C). Received shape {tuple(x.shape)}")
        targets, lengths = self._targets(labels_indices, labels_values, x.shape[1], x.shape[-1] - 1)
        seq = sequence_length.long()
        if torch.is_grad_enabled() and x.requires_grad:
            # one pass: the gradient output comes from the graph the loss keeps for backward
            loss = self._loss(x, targets, lengths, seq)
            (grad,) = torch.autograd.grad(loss.sum(), x, retain_graph=True)
            return loss, grad
        with torch.enable_grad():
            leaf = x.detach().requires_grad_(True)
            loss = self._loss(leaf, targets, lengths, seq)
            (grad,) = torch.autograd.grad(loss.sum(), leaf)
        return loss.detach(), grad


__all__ = [
    "BCEWithLogitsLoss",
    "BinaryCrossEntropy",
    "CTCLoss",
    "KLDivLoss",
    "L2Loss",
    "NLLLoss",
    "SigmoidCrossEntropyWithLogits",
    "SmoothL1Loss",
    "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits",
]
