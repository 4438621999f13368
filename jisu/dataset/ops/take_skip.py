"""``Dataset.take`` and ``Dataset.skip``."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

import numpy as np

from ..core.access import is_random_access
from ..core.node import Dataset
from ..core.validation import check_int
from ..engine.context import ExecContext
from .index_map import IndexMapKernels


class _TakeKernels(IndexMapKernels):
    """The first rows: the child's rows at the same indices."""

    def child_indices(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> np.ndarray:
        return indices


class TakeDataset(Dataset):
    """The first ``count`` rows of each epoch (-1: all)."""

    op_name = "take"
    random_access_kernels = _TakeKernels

    def __init__(self, child: Dataset, count: int) -> None:
        super().__init__([child])
        self.count = check_int("take", "count", count, minimum=-1)
        if self.count == 0:
            raise ValueError("take: count must be -1 (all) or >= 1. Received: count=0")
        self._columns = child._columns
        self._settle_kind(is_random_access(child))

    def _row_count(self) -> int | None:
        n = self.children[0]._row_count()
        if self.count < 0 or n is None:
            return n
        return min(n, self.count)

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        rows = self.children[0]._stream(ctx, epoch, start)
        yield from rows if self.count < 0 else islice(rows, max(0, self.count - start))


class _SkipKernels(IndexMapKernels):
    """Row ``i`` is the child's row ``i + count``."""

    def child_indices(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> np.ndarray:
        return indices + self.count


class SkipDataset(Dataset):
    """All rows of each epoch but the first ``count``."""

    op_name = "skip"
    random_access_kernels = _SkipKernels

    def __init__(self, child: Dataset, count: int) -> None:
        super().__init__([child])
        self.count = check_int("skip", "count", count, minimum=0)
        self._columns = child._columns
        self._settle_kind(is_random_access(child))

    def _row_count(self) -> int | None:
        n = self.children[0]._row_count()
        return None if n is None else max(0, n - self.count)

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        yield from self.children[0]._stream(ctx, epoch, start + self.count)
