"""MindSpore's ``Embedding`` as a subclass of torch's."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks
from ..cell import Cell
from .basic import init_parameter

__all__ = ["Embedding"]


class Embedding(Cell, nn.Embedding):
    """A lookup table of ``vocab_size`` vectors of ``embedding_size``.

    Args:
        vocab_size, embedding_size: table shape.
        use_one_hot: look up by a one-hot matrix product instead of a gather (same values).
            Default False.
        embedding_table: initializer of the table. Default "normal" (N(0, 0.01²)).
        dtype: table dtype. Default float32.
        padding_idx: a row set to zero at construction. Unlike torch's, that row still
            receives gradients (MindSpore's behaviour). Default None.
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        use_one_hot: bool = False,
        embedding_table: Any = "normal",
        dtype: torch.dtype = torch.float32,
        padding_idx: int | None = None,
    ) -> None:
        _checks.positive_int("Embedding", "vocab_size", vocab_size)
        _checks.positive_int("Embedding", "embedding_size", embedding_size)
        _checks.a_bool("Embedding", "use_one_hot", use_one_hot)
        if padding_idx is not None and (
            isinstance(padding_idx, bool)
            or not isinstance(padding_idx, int)
            or not 0 <= padding_idx < vocab_size
        ):
            raise ValueError(
                f"Embedding: padding_idx must be an int in [0, vocab_size={vocab_size}). "
                f"Received padding_idx={padding_idx!r}"
            )
        nn.Embedding.__init__(self, vocab_size, embedding_size, dtype=dtype)
        self._auto_prefix = True
        init_parameter(self.weight, embedding_table, "Embedding", "embedding_table", None)
        if padding_idx is not None:
            with torch.no_grad():
                self.weight[padding_idx].zero_()
        # torch's own padding_idx (gradient masking) stays None; MindSpore's is recorded
        self.ms_padding_idx = padding_idx
        self.vocab_size, self.embedding_size, self.use_one_hot = (
            vocab_size, embedding_size, use_one_hot,
        )  # fmt: skip

    def construct(self, ids: torch.Tensor) -> torch.Tensor:
        if self.use_one_hot:
            hot = F.one_hot(ids.long(), self.vocab_size).to(self.weight.dtype)
            return hot @ self.weight
        return F.embedding(ids, self.weight)
