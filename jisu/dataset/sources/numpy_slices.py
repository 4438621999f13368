"""NumpySlicesDataset: rows sliced from in-memory arrays, gathered a batch at a time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..engine.context import ExecContext
from .generator import Source, _SourceKernels
from .options import ReadOptions


def _columns_of(data: Any) -> tuple[list[str] | None, list[np.ndarray]]:
    if isinstance(data, dict):
        return [str(k) for k in data], [np.asarray(v) for v in data.values()]
    if isinstance(data, tuple):
        return None, [np.asarray(v) for v in data]
    if isinstance(data, (list, np.ndarray)):
        return None, [np.asarray(data)]
    if hasattr(data, "__array__"):
        return None, [np.asarray(data)]
    raise TypeError(
        "NumpySlicesDataset: data must be an array, a list, a tuple of arrays or a dict of "
        f"columns. Received: {type(data).__name__}"
    )


class _Slices:
    """Random-access view of column arrays: item ``i`` is ``(col[i] for col in columns)``."""

    def __init__(self, arrays: list[np.ndarray]) -> None:
        self.arrays = arrays

    def __len__(self) -> int:
        return len(self.arrays[0])

    def __getitem__(self, index: int) -> tuple:
        return tuple(a[index] for a in self.arrays)


class _SlicesKernels(_SourceKernels):
    """Random access to slices, and a batch's rows gathered with one fancy-index per column."""

    def _fetch_columns(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> list | None:
        order = self.epoch_order(ctx, epoch)[indices]
        return [a[order] for a in self.source.arrays]


class NumpySlicesDataset(Source):
    """Rows are slices along axis 0 of in-memory data.

    Args:
        data: an array or list (one column), a tuple of arrays (one column each) or a dict
            ``{name: array}``. All columns must have the same length.
        column_names: names (default: the dict's keys, else ``column_0``, ``column_1``, ...).
        shuffle: a new permutation each epoch (default True, as in MindSpore).
        num_samples, num_shards, shard_id, sampler: as in :class:`GeneratorDataset`.

    Rows are views of ``data`` (no copy); a batch directly above gathers all its rows with one
    fancy-index per column instead of one read per row.
    """

    random_access_kernels = _SlicesKernels
    serial_reads = False  # slicing arrays is thread-safe
    builds_indexed_source = True

    reads_can_fail = False  # slicing in-memory arrays: random access in "skip" mode too

    def __init__(
        self,
        data: Any,
        column_names: str | Sequence[str] | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
    ) -> None:
        names, arrays = _columns_of(data)
        if any(a.ndim == 0 for a in arrays):
            raise ValueError(
                "NumpySlicesDataset: data must have at least one dimension "
                "(rows are slices along axis 0)"
            )
        lengths = {len(a) for a in arrays}
        if len(lengths) != 1:
            raise ValueError(
                f"NumpySlicesDataset: all columns must have the same length. "
                f"Received lengths: {[len(a) for a in arrays]}"
            )
        if column_names is None:
            column_names = names or [f"column_{i}" for i in range(len(arrays))]
        if isinstance(column_names, str):
            column_names = [column_names]
        if len(column_names) != len(arrays):
            raise ValueError(
                f"NumpySlicesDataset: data has {len(arrays)} column(s) but column_names has "
                f"{len(column_names)}. Received: column_names={list(column_names)}"
            )
        options = ReadOptions(
            num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id
        )
        super().__init__(_Slices(arrays), column_names, options)

    def _read(self, ctx: ExecContext, index: int) -> tuple:
        # a[index] of a 1-D array is a NumPy scalar; rows hold arrays (here a 0-d view)
        return tuple(
            a[index] if a.ndim > 1 else a[index : index + 1].reshape(()) for a in self.source.arrays
        )
