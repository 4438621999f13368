"""``Dataset.shuffle``: a per-epoch permutation (random access) or a seeded buffer shuffle."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

import numpy as np

from ..core.access import is_random_access
from ..core.node import Dataset
from ..core.order import buffer_shuffle
from ..core.rng import epoch_rng
from ..core.validation import INT32_MAX, check_int
from ..engine.context import ExecContext
from .index_map import IndexMapKernels


def epoch_permutation(ctx: ExecContext, node: Dataset, epoch: int, n: int) -> np.ndarray:
    """The permutation ``node`` uses in ``epoch``: computed once per epoch, shared by workers."""
    key = ctx.node_id(node)
    return ctx.cached((key, "perm", epoch), lambda: epoch_rng(ctx.seed, epoch, key).permutation(n))


class _ShuffleKernels(IndexMapKernels):
    """Row ``i`` is the child's row ``permutation[i]``, a new permutation every epoch."""

    def child_indices(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> np.ndarray:
        return epoch_permutation(ctx, self, epoch, self._row_count())[indices]


class ShuffleDataset(Dataset):
    """Rows in a new random order every epoch; see :meth:`Dataset.shuffle`."""

    op_name = "shuffle"
    random_access_kernels = _ShuffleKernels

    def __init__(self, child: Dataset, buffer_size: int) -> None:
        super().__init__([child])
        self.buffer_size = check_int("shuffle", "buffer_size", buffer_size, minimum=2)
        if self.buffer_size > INT32_MAX:  # MindSpore 2.10's bound
            raise ValueError(
                f"shuffle: buffer_size must be at most {INT32_MAX}. Received: {buffer_size}"
            )
        self._columns = child._columns
        self._settle_kind(is_random_access(child))

    def _row_count(self) -> int | None:
        return self.children[0]._row_count()

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        rng = epoch_rng(ctx.seed, epoch, ctx.node_id(self))
        rows = buffer_shuffle(self.children[0]._stream(ctx, epoch, 0), self.buffer_size, rng)
        yield from islice(rows, start, None)  # a stream restores its position by replaying
