"""``Dataset.shard``: one of ``num_shards`` equal parts of the rows."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

import numpy as np

from ..datasets import Dataset
from ..engine.access import is_random_access
from ..engine.context import ExecContext
from ..validation import resolve_shards
from .index_map import IndexMapKernels


def shard_positions(n: int, num_shards: int, shard_id: int) -> np.ndarray:
    """Positions of shard ``shard_id``: round-robin, wrapped to the first rows when short.

    Every shard gets ``ceil(n / num_shards)`` rows (MindSpore's rule), so ranks agree on the
    number of steps.
    """
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    count = -(-n // num_shards)
    return (shard_id + num_shards * np.arange(count, dtype=np.int64)) % n


def shard_stream(rows: Iterator[tuple], num_shards: int, shard_id: int) -> Iterator[tuple]:
    """:func:`shard_positions` on a stream of unknown length: round-robin, then wrap around."""
    head: list[tuple] = []  # the first num_shards rows, for wrapping short shards around
    produced = total = 0
    for total, row in enumerate(rows, 1):
        if len(head) < num_shards:
            head.append(row)
        if (total - 1) % num_shards == shard_id:
            produced += 1
            yield row
    if total:
        for g in shard_positions(total, num_shards, shard_id)[produced:]:
            yield head[g]


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
