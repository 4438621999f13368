"""MindSpore's ``Embedding`` as a subclass of torch's."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks
from ..cell import Cell
from .basic import init_parameter

__all__ = ["Embedding", "EmbeddingLookup"]


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


class EmbeddingLookup(Cell):
    """MindSpore's ``EmbeddingLookup``: rows of ``embedding_table`` (vocab_size x
    embedding_size) by index. MindSpore's host-side (``target="CPU"``) and sharding options
    (``slice_mode``, ``manual_shapes``, ``sparse``) are accepted and change nothing here: the
    table lives where the module is (``.to(device)``). An index outside [0, vocab_size) gives
    a zero row (MindSpore's CPU lookup). ``max_norm`` clips each looked-up row to that
    Euclidean norm.
    """

    BATCH_SLICE = "batch_slice"
    FIELD_SLICE = "field_slice"
    TABLE_ROW_SLICE = "table_row_slice"
    TABLE_COLUMN_SLICE = "table_column_slice"

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        param_init: Any = "normal",
        target: str = "CPU",
        slice_mode: str = "batch_slice",
        manual_shapes: Any = None,
        max_norm: float | None = None,
        sparse: bool = True,
        vocab_cache_size: int = 0,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        owner = "EmbeddingLookup"
        _checks.positive_int(owner, "vocab_size", vocab_size)
        _checks.positive_int(owner, "embedding_size", embedding_size)
        if target not in ("CPU", "DEVICE"):
            raise ValueError(f"{owner}: target must be 'CPU' or 'DEVICE'. Received {target!r}")
        if not sparse and target == "CPU":
            raise ValueError(f"{owner}: sparse must be True when target is 'CPU'")
        modes = (self.BATCH_SLICE, self.FIELD_SLICE, self.TABLE_ROW_SLICE, self.TABLE_COLUMN_SLICE)
        if slice_mode not in modes:
            raise ValueError(f"{owner}: slice_mode must be one of {modes}. Received {slice_mode!r}")
        if max_norm is not None:
            _checks.a_float(owner, "max_norm", max_norm, low=0.0)
        self.embedding_table = nn.Parameter(torch.empty(vocab_size, embedding_size, dtype=dtype))
        init_parameter(self.embedding_table, param_init, owner, "param_init", None)
        self.vocab_size, self.embedding_size, self.target = vocab_size, embedding_size, target
        self.slice_mode, self.max_norm, self.sparse = slice_mode, max_norm, sparse

    def construct(self, indices: torch.Tensor) -> torch.Tensor:
        indices = indices.long()
        inside = (indices >= 0) & (indices < self.vocab_size)
        out = F.embedding(torch.where(inside, indices, 0), self.embedding_table)
        out = out * inside.unsqueeze(-1).to(out.dtype)
        if self.max_norm is not None:
            norm = torch.linalg.vector_norm(out, dim=-1, keepdim=True)
            out = out * (self.max_norm / torch.clamp(norm, min=self.max_norm))
        return out
