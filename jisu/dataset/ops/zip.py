"""``zip``: rows of several datasets side by side."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from ..core.access import RandomAccess, is_random_access
from ..core.node import Dataset
from ..engine.context import ExecContext
from .map import check_unique


def _check_datasets(op: str, datasets: Sequence[Dataset]) -> list[Dataset]:
    datasets = list(datasets)
    for k, d in enumerate(datasets):
        if not isinstance(d, Dataset):
            raise TypeError(f"{op}: datasets[{k}] is not a jisu Dataset. Received: {d!r}")
    if len(datasets) < 2:
        raise ValueError(f"{op}: needs at least two datasets. Received: {len(datasets)}")
    return datasets


class _ZipKernels(RandomAccess):
    """Random access: row ``i`` of every input, side by side."""

    def _fetch(self, ctx: ExecContext, epoch: int, index: int) -> tuple:
        return tuple(v for d in self.children for v in d._fetch(ctx, epoch, index))

    def _fetch_columns(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> list | None:
        parts = [d._fetch_columns(ctx, epoch, indices) for d in self.children]
        if any(p is None for p in parts):
            return None
        return [c for part in parts for c in part]


class ZipDataset(Dataset):
    """Row ``i`` is the concatenation of row ``i`` of every input; ends with the shortest."""

    op_name = "zip"
    random_access_kernels = _ZipKernels

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        datasets = _check_datasets("zip", datasets)
        super().__init__(datasets)
        self._columns = tuple(c for d in datasets for c in d._columns)
        check_unique("zip", self._columns)
        self._settle_kind(all(is_random_access(d) for d in datasets))

    def _row_count(self) -> int | None:
        counts = [d._row_count() for d in self.children]
        known = [c for c in counts if c is not None]
        if len(known) < len(counts):
            return None
        return min(known)

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        streams = [d._stream(ctx, epoch, start) for d in self.children]
        try:
            for rows in zip(*streams):
                yield tuple(v for row in rows for v in row)
        finally:
            for s in streams:
                s.close()


def zip_datasets(datasets: tuple[Dataset, ...]) -> Dataset:
    """``ds.zip((d1, d2, ...))``: zip datasets with distinct column names.

    Raises:
        TypeError: ``datasets`` is no tuple (a list, one dataset), as in MindSpore 2.10.
    """
    if not isinstance(datasets, tuple):
        raise TypeError(
            "zip: datasets must be a tuple of datasets. Received: "
            f"{type(datasets).__name__} {datasets!r:.80}"
        )
    return ZipDataset(datasets)
