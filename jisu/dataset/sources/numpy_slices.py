"""NumpySlicesDataset: rows sliced from in-memory arrays, gathered a batch at a time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..engine.context import ExecContext
from .generator import Source, _SourceKernels
from .options import ReadOptions


def _column(value: Any, where: str) -> np.ndarray:
    try:
        return np.asarray(value)
    except ValueError as exc:  # NumPy 2 refuses ragged nested lists
        raise ValueError(
            f"NumpySlicesDataset: data{where} is ragged (its rows have different lengths), so "
            "it is not an array; pad the rows to one shape, or read them with "
            f"GeneratorDataset(list_of_rows, column_names) ({exc})"
        ) from None


def _columns_of(data: Any) -> tuple[list[str] | None, list[np.ndarray]]:
    if isinstance(data, dict):
        return [str(k) for k in data], [_column(v, f"[{k!r}]") for k, v in data.items()]
    if isinstance(data, tuple):
        return None, [_column(v, f"[{i}]") for i, v in enumerate(data)]
    if isinstance(data, (list, np.ndarray)):
        return None, [_column(data, "")]
    if hasattr(data, "__array__"):
        return None, [np.asarray(data)]
    raise TypeError(
        "NumpySlicesDataset: data must be an array, a list, a tuple of arrays or a dict of "
        f"columns. Received: {type(data).__name__}"
    )


class Slices:
    """Random-access rows of column arrays, possibly in several parts (one per file): row
    ``i`` is ``(column[i] for column in its part)``, parts one after another. Arrays may be
    memory-mapped files; a 1-D column gives 0-d views."""

    def __init__(self, parts: list[list[np.ndarray]]) -> None:
        self.parts = parts
        self.arrays = parts[0] if len(parts) == 1 else None  # the one part's columns
        self.offsets = np.cumsum([0] + [len(p[0]) for p in parts])

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def row(self, index: int) -> tuple:
        arrays = self.arrays
        if arrays is None:
            k = int(np.searchsorted(self.offsets, index, side="right")) - 1
            arrays, index = self.parts[k], index - int(self.offsets[k])
        # a[index] of a 1-D array is a NumPy scalar; rows hold arrays (here a 0-d view)
        return tuple(a[index] if a.ndim > 1 else a[index : index + 1].reshape(()) for a in arrays)

    __getitem__ = row

    def gather(self, indices: np.ndarray) -> list[np.ndarray]:
        """Rows ``indices`` as stacked columns: one fancy-index per column and part. Like
        NumPy's fancy indexing, the result keeps the arrays' memory layout."""
        if self.arrays is not None:
            return [a[indices] for a in self.arrays]
        owner = np.searchsorted(self.offsets, indices, side="right") - 1
        # in the parts' memory layout (a transposed view stays so: CIFAR's CHW bytes seen as
        # HWC), so that each part's rows are copied in blocks, not element by element
        out = [np.empty_like(a[:1], shape=(len(indices), *a.shape[1:])) for a in self.parts[0]]
        for k in np.unique(owner):
            mask = owner == k
            local = indices[mask] - self.offsets[k]
            for column, a in zip(out, self.parts[k]):
                column[mask] = a[local]
        return out


class _SlicesKernels(_SourceKernels):
    """Random access to slices, and a batch's rows gathered with one fancy-index per column."""

    def _fetch_columns(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> list | None:
        return self._finish(self.source.gather(self.epoch_order(ctx, epoch)[indices]))


class ArraySource(Source):
    """A source whose rows are slices of arrays (:class:`Slices`): read without a lock, and a
    batch directly above gathers all its rows at once."""

    random_access_kernels = _SlicesKernels
    serial_reads = False  # slicing arrays is thread-safe
    builds_indexed_source = True
    reads_can_fail = False  # slicing arrays: random access in "skip" mode too

    def _read(self, ctx: ExecContext, index: int) -> tuple:
        return self.source.row(index)

    def _finish(self, columns: list[np.ndarray]) -> list[np.ndarray]:
        """The gathered columns of a batch as the source hands them out (a layout change)."""
        return columns


class NumpySlicesDataset(ArraySource):
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
        if not arrays or lengths == {0}:  # MindSpore refuses it when built, as jisu does
            raise ValueError("NumpySlicesDataset: data is empty (no columns or no rows)")
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
            num_samples,
            num_parallel_workers,
            shuffle,
            sampler,
            num_shards,
            shard_id,
            list_num_samples=True,
        )
        super().__init__(Slices([arrays]), column_names, options)
