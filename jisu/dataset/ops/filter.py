"""``Dataset.filter``: keep the rows a predicate accepts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.node import Dataset
from ..core.operation import op_name
from ..core.position import position
from ..core.validation import check_columns
from ..engine.context import ExecContext
from ..engine.errors import raise_in_context
from ..engine.plan import FILTER


class FilterDataset(Dataset):
    """Rows for which ``predicate(*input_columns)`` is true. The count is unknown until run."""

    op_name = "filter"
    has_workers = True
    stream_stage = FILTER

    def __init__(
        self,
        child: Dataset,
        predicate: Callable,
        input_columns: str | Sequence[str] | None,
        num_parallel_workers: int | None,
    ) -> None:
        super().__init__([child], num_parallel_workers)
        if not callable(predicate):
            raise TypeError(f"filter: predicate must be callable. Received: {predicate!r}")
        self.predicate = predicate
        self.input_columns = check_columns(
            "filter", "input_columns", input_columns, child._columns
        ) or list(child._columns)
        self._in_idx = [child._columns.index(c) for c in self.input_columns]
        self._columns = child._columns
        self._workers()

    def functions(self) -> tuple[Any, ...]:
        return (self.predicate,)

    def _row_count(self) -> int | None:
        return None

    def _keep(self, epoch: int, index: int, row: tuple) -> bool:
        position().at(self, epoch, index, self.predicate)
        try:
            return bool(np.all(self.predicate(*(row[j] for j in self._in_idx))))
        except Exception as exc:
            raise_in_context(
                exc,
                f"filter: predicate {op_name(self.predicate)} failed on "
                f"column(s) {self.input_columns} at sample {index} of "
                f"epoch {epoch}",
            )

    def filter_rows(self, ctx: ExecContext, epoch: int, chunk: list[tuple[int, tuple]]) -> list:
        """Task of a filter stage: the rows of ``chunk`` the predicate keeps."""
        return [row for index, row in chunk if self._keep(epoch, index, row)]
