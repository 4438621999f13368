"""``Dataset.project`` and ``Dataset.rename``: select, reorder and rename columns."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from ..core.access import RandomAccess, is_random_access
from ..core.node import Dataset
from ..core.validation import check_columns
from ..engine.context import ExecContext
from .map import check_unique


class _ColumnSelectKernels(RandomAccess):
    """Random access: the child's row at the same index, its columns picked."""

    def _fetch(self, ctx: ExecContext, epoch: int, index: int) -> tuple:
        row = self.children[0]._fetch(ctx, epoch, index)
        return tuple(row[j] for j in self._pick)

    def _fetch_columns(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> list | None:
        columns = self.children[0]._fetch_columns(ctx, epoch, indices)
        return None if columns is None else [columns[j] for j in self._pick]


class _ColumnSelect(Dataset):
    """Rows made of the child's columns ``self._pick`` (in that order)."""

    random_access_kernels = _ColumnSelectKernels
    _pick: list[int]

    def _row_count(self) -> int | None:
        return self.children[0]._row_count()

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        pick = self._pick
        for row in self.children[0]._stream(ctx, epoch, start):
            yield tuple(row[j] for j in pick)


class ProjectDataset(_ColumnSelect):
    """Only ``columns``, in the given order."""

    op_name = "project"

    def __init__(self, child: Dataset, columns: str | Sequence[str]) -> None:
        super().__init__([child])
        names = check_columns("project", "columns", columns, child._columns)
        self._pick = [child._columns.index(c) for c in names]
        self._columns = tuple(names)
        self._settle_kind(is_random_access(child))


class RenameDataset(_ColumnSelect):
    """The same columns with ``input_columns`` renamed to ``output_columns``."""

    op_name = "rename"

    def __init__(self, child: Dataset, input_columns, output_columns) -> None:
        super().__init__([child])
        inputs = check_columns("rename", "input_columns", input_columns, child._columns)
        outputs = check_columns("rename", "output_columns", output_columns)
        if outputs is None or len(inputs) != len(outputs):
            raise ValueError(
                "rename: input_columns and output_columns must have the same length. "
                f"Received: input_columns={inputs}, output_columns={outputs}"
            )
        renames = dict(zip(inputs, outputs))
        self._columns = tuple(renames.get(c, c) for c in child._columns)
        check_unique("rename", self._columns)
        self._pick = list(range(len(child._columns)))
        self._settle_kind(is_random_access(child))
