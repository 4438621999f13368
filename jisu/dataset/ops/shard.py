"""``Dataset.shard``: one of ``num_shards`` equal parts of the rows."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

import numpy as np

from ..core.access import is_random_access
from ..core.node import Dataset
from ..core.order import shard_stream
from ..core.validation import resolve_shards
from ..engine.context import ExecContext
from .index_map import IndexMapKernels


class _ShardKernels(IndexMapKernels):
    """Row ``i`` of the shard is the child's row ``shard_id + i * num_shards`` (wrapped)."""

    def child_indices(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> np.ndarray:
        n = self.children[0]._row_count()
        return (self.shard_id + self.num_shards * indices) % n


class ShardDataset(Dataset):
    """Shard ``shard_id`` of ``num_shards``; see :meth:`Dataset.shard`."""

    op_name = "shard"
    random_access_kernels = _ShardKernels

    def __init__(self, child: Dataset, num_shards: int, shard_id: int) -> None:
        super().__init__([child])
        self.num_shards, self.shard_id = resolve_shards("shard", num_shards, shard_id)
        self._columns = child._columns
        self._settle_kind(is_random_access(child))

    def _row_count(self) -> int | None:
        n = self.children[0]._row_count()
        return None if n is None else -(-n // self.num_shards)

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        rows = shard_stream(self.children[0]._stream(ctx, epoch, 0), self.num_shards, self.shard_id)
        yield from islice(rows, start, None)  # a stream restores its position by replaying
