"""MindSpore 2.0's ``parallel._transformer.loss.CrossEntropyLoss``: the masked mean of the
per-token cross entropy, computed as MindSpore does (softmax in float32, ``-log(p + 1e-24)``
of the label's probability, ``sum(loss * mask) / (sum(mask) + 1e-5)``)."""

from __future__ import annotations

from typing import Any

import torch

from ...nn.cell import Cell
from .op_parallel_config import OpParallelConfig, default_dpmp_config

__all__ = ["CrossEntropyLoss"]


class CrossEntropyLoss(Cell):
    """``construct(logits (N, C), label (N,), input_mask)`` -> the masked mean loss.

    Raises:
        TypeError: ``parallel_config`` is not an :class:`OpParallelConfig`.
    """

    def __init__(self, parallel_config: Any = default_dpmp_config) -> None:
        super().__init__()
        if not isinstance(parallel_config, OpParallelConfig):
            raise TypeError(
                "CrossEntropyLoss: parallel_config must be an OpParallelConfig. "
                f"Received: {type(parallel_config).__name__}"
            )

    def construct(self, logits: torch.Tensor, label: torch.Tensor,
                  input_mask: torch.Tensor) -> torch.Tensor:  # fmt: skip
        probs = torch.softmax(logits.float(), dim=-1)
        picked = probs.gather(-1, label.long().reshape(-1, 1)).squeeze(-1)
        loss = -torch.log(picked + 1e-24)
        mask = input_mask.reshape(-1).float()
        return (loss * mask).sum() / (mask.sum() + 1e-5)
