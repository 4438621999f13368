"""Base of random-access ops whose rows are rows of their child at other indices."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..core.access import RandomAccess
from ..core.node import Dataset
from ..engine.context import ExecContext
from ..engine.tasks import walk


def stream_row_count(node: Dataset) -> int | None:
    """Rows ``node``'s stream delivers per epoch, when known without running it.

    That is ``_row_count()``, unless a node below may drop rows it counts (a source or a map in
    error samples mode "skip": the count is the rows they would deliver if nothing failed). Ops
    that place a position by counting their child's rows (concat, repeat) must then replay.
    """
    if any(n.skip_errors for n in walk(node)):
        return None
    return node._row_count()


def join_parts(parts: Iterable[list | None]) -> list | None:
    """Concatenate the column lists gathered from several parts (None if any part could not
    gather its rows at once)."""
    gathered = []
    for part in parts:
        if part is None:
            return None
        gathered.append(part)
    if len(gathered) == 1:
        return gathered[0]
    return [np.concatenate(columns) for columns in zip(*gathered)]


class IndexMapKernels(RandomAccess):
    """Random access for an op whose row ``i`` is its child's row ``child_indices([i])[0]`` in
    the same epoch.

    Subclasses define :meth:`child_indices`, vectorized, so a batch above can gather many rows
    of a slicing source (NumPy arrays) in one call.
    """

    def child_indices(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # each index-mapping op defines its mapping

    def _fetch(self, ctx: ExecContext, epoch: int, index: int) -> tuple:
        mapped = self.child_indices(ctx, epoch, np.array([index], dtype=np.int64))
        return self.children[0]._fetch(ctx, epoch, int(mapped[0]))

    def _fetch_columns(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> list | None:
        return self.children[0]._fetch_columns(ctx, epoch, self.child_indices(ctx, epoch, indices))
