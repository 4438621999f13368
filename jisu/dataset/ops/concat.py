"""``concat`` / ``+``: the rows of several datasets one after another."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from itertools import accumulate, islice

import numpy as np

from ..datasets import Dataset
from ..engine.access import RandomAccess, is_random_access
from ..engine.context import ExecContext
from .index_map import join_parts, stream_row_count
from .zip import _check_datasets


class _ConcatKernels(RandomAccess):
    """Random access: row ``i`` is found in the input whose rows span it."""

    def _fetch(self, ctx: ExecContext, epoch: int, index: int) -> tuple:
        offsets = self._offsets()
        k = bisect.bisect_right(offsets, index) - 1
        return self.children[k]._fetch(ctx, epoch, index - offsets[k])

    def _fetch_columns(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> list | None:
        offsets = np.asarray(self._offsets())
        owner = np.searchsorted(offsets, indices, side="right") - 1
        if np.any(np.diff(owner) < 0):
            return None  # rows of several inputs interleaved: gather row by row instead
        return join_parts(
            self.children[k]._fetch_columns(ctx, epoch, indices[owner == k] - offsets[k])
            for k in np.unique(owner)
        )


class ConcatDataset(Dataset):
    """All rows of the first dataset, then of the second, ...; all with the same columns."""

    op_name = "concat"
    random_access_kernels = _ConcatKernels

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        datasets = _check_datasets("concat", datasets)
        super().__init__(datasets)
        for k, d in enumerate(datasets[1:], 1):
            if d._columns != datasets[0]._columns:
                raise ValueError(
                    f"concat: datasets[{k}] has columns {list(d._columns)} but datasets[0] "
                    f"has {list(datasets[0]._columns)}; use rename/project to align them"
                )
        self._columns = datasets[0]._columns
        self._settle_kind(all(is_random_access(d) for d in datasets))

    def _counts(self) -> list[int] | None:
        counts = [d._row_count() for d in self.children]
        return None if any(c is None for c in counts) else counts

    def _row_count(self) -> int | None:
        counts = self._counts()
        return None if counts is None else sum(counts)

    def _offsets(self) -> list[int]:
        return [0, *accumulate(self._counts())]

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        counts = [stream_row_count(d) for d in self.children]
        if None in counts:  # row ``start`` cannot be placed without running: replay
            yield from islice(self._chain(ctx, epoch), start, None)
            return
        for child, n in zip(self.children, counts):
            if start >= n:
                start -= n
                continue
            yield from child._stream(ctx, epoch, start)
            start = 0

    def _chain(self, ctx: ExecContext, epoch: int) -> Iterator[tuple]:
        for child in self.children:
            yield from child._stream(ctx, epoch, 0)
