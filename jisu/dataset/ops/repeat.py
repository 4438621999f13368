"""``Dataset.repeat``: the child's epochs one after another."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count as counter
from itertools import islice

import numpy as np

from ..core.access import RandomAccess, is_random_access
from ..core.node import Dataset
from ..core.validation import check_int
from ..engine.context import ExecContext
from .index_map import join_parts, stream_row_count


class _RepeatKernels(RandomAccess):
    """Random access to the passes: row ``index`` is row ``index % n`` of pass ``index // n``."""

    def _fetch(self, ctx: ExecContext, epoch: int, index: int) -> tuple:
        n = self.children[0]._row_count()
        return self.children[0]._fetch(ctx, self.child_epoch(epoch, index // n), index % n)

    def _fetch_columns(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> list | None:
        n = self.children[0]._row_count()
        reps = indices // n
        return join_parts(  # a batch may span two passes
            self.children[0]._fetch_columns(
                ctx, self.child_epoch(epoch, int(rep)), indices[reps == rep] % n
            )
            for rep in np.unique(reps)
        )


class RepeatDataset(Dataset):
    """``count`` passes over the child (-1: forever); each pass is a child epoch of its own."""

    op_name = "repeat"
    random_access_kernels = _RepeatKernels

    @classmethod
    def _random_access(cls, child: Dataset, count: int | None = None) -> bool:
        return is_random_access(child) and isinstance(count, int) and count > 0

    def __init__(self, child: Dataset, count: int | None) -> None:
        super().__init__([child])
        count = -1 if count is None else check_int("repeat", "count", count)
        if count == 0 or count < -1:
            raise ValueError(f"repeat: count must be -1, None or >= 1. Received: count={count}")
        self.count = count
        self._columns = child._columns
        self._settle_kind(is_random_access(child) and count > 0)

    @property
    def epoch_fold(self) -> int:
        """How the child's epochs fold back into this node's: ``count`` passes per epoch
        (-1: endless, see :meth:`child_epoch`). The engine reads it to count skipped samples
        in the iterator's epoch."""
        return self.count

    def _own_repeat_count(self) -> int | None:
        return self.count

    def child_epoch(self, epoch: int, repetition: int) -> int:
        if self.count < 0:
            return (epoch << 32) + repetition
        return epoch * self.count + repetition

    def _row_count(self) -> int | None:
        n = self.children[0]._row_count()
        if n is None or self.count < 0:
            return n  # infinite repeat: MindSpore reports one pass
        return n * self.count

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        child = self.children[0]
        n = stream_row_count(child)  # unknown: the passes are replayed up to ``start``
        first_rep, skip = (start // n, start % n) if n else (0, start)
        reps = counter(first_rep) if self.count < 0 else range(first_rep, self.count)

        def rows() -> Iterator[tuple]:
            for rep in reps:
                first = skip if n and rep == first_rep else 0
                yield from child._stream(ctx, self.child_epoch(epoch, rep), first)

        yield from rows() if n else islice(rows(), skip, None)
