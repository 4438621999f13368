"""Batch assembly: rows into preallocated column arrays, with optional padding."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.packets import is_packet_column
from ..core.ragged import RaggedArray

PadInfo = dict[str, tuple[Sequence[int | None] | None, Any]]


class Deferred:
    """A column value whose last, elementwise op has not run yet.

    Inside a batch task, the elementwise tail of a map (``Rescale``, ``Normalize``,
    ``TypeCast``, with any ``HWC2CHW`` after it) is run by the batch assembly straight into the
    row's slot of the batch array: one pass over the data instead of one to compute and one to
    copy. The transposes are applied first, as views; ``perm`` tells per-channel ops where
    their channel axis went.
    """

    __slots__ = ("op", "perm", "value")

    def __init__(self, value: np.ndarray, op: Any, perm: tuple[int, ...] | None = None) -> None:
        self.value = value  # the op's input, already reindexed by the view ops after it
        self.op = op
        self.perm = perm  # axis i of ``value`` is axis perm[i] of the op's real input

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.op.output_dtype(self.value.dtype))

    def write(self, out: np.ndarray) -> None:
        self.op.apply_into(self.value, out, self.perm)

    def materialize(self) -> np.ndarray:
        out = np.empty(self.shape, dtype=self.dtype)
        self.write(out)
        return out


def _stack_deferred(
    values: Sequence[Any], column: str, where: str, empty: Callable = np.empty
) -> np.ndarray | None:
    """Stack rows some of which are :class:`Deferred`, writing each into its slot."""
    shape, dtype = values[0].shape, values[0].dtype
    if any(v.shape != shape or v.dtype != dtype for v in values):
        return None
    out = empty((len(values), *shape), dtype)
    for i, v in enumerate(values):
        slot = out[i : i + 1].reshape(shape)  # a view, also for 0-d rows
        if isinstance(v, Deferred):
            v.write(slot)
        else:
            slot[...] = v
    return out


def stack_column(
    values: Sequence[np.ndarray],
    column: str,
    pad: tuple[Sequence[int | None] | None, Any] | None = None,
    where: str = "batch",
    empty: Callable = np.empty,
) -> np.ndarray:
    """Stack one column of a batch into a new array of shape ``(len(values), *row_shape)``.

    Args:
        values: the column's value in each row.
        column: its name, for error messages.
        pad: ``(shape, pad_value)``; a None shape or a None dimension pads to the largest row.
        where: the op, for error messages.
        empty: allocates the batch array (``BufferPool.empty`` reuses freed ones).

    Raises:
        ValueError: rows of different shapes and no padding, or rows larger than a fixed pad.
    """
    if any(isinstance(v, Deferred) for v in values):
        if pad is None:
            out = _stack_deferred(values, column, where, empty)
            if out is not None:
                return out
        values = [v.materialize() if isinstance(v, Deferred) else v for v in values]
    if any(isinstance(v, RaggedArray) for v in values):
        raise ValueError(
            f"{where}: column '{column}' holds ragged batches (RaggedArray) already; batch a "
            "ragged column once, or turn it into arrays first (RaggedArray.to_padded)"
        )
    first = values[0]
    dtype = first.dtype
    if any(v.dtype != dtype for v in values):
        dtype = np.result_type(*values)
    same_shape = all(v.shape == first.shape for v in values)
    if pad is None and not same_shape and is_packet_column(values):
        pad = (None, 0)  # JPEG bytes for the device (device_decode): padded, lengths inside
    if pad is None:
        shape = first.shape
        if not same_shape:
            shapes = sorted({tuple(v.shape) for v in values})
            raise ValueError(
                f"{where}: cannot batch column '{column}': rows have different shapes {shapes}. "
                f"Pass pad_info={{'{column}': (None, 0)}} (or use padded_batch) to pad them, "
                f"ragged=['{column}'] to batch them unpadded (rows of different lengths), "
                "or resize them before batching."
            )
        out = empty((len(values), *shape), dtype)
        if dtype == first.dtype:
            return np.stack(values, out=out)
        for i, v in enumerate(values):
            out[i] = v
        return out
    pad_shape, pad_value = pad
    ndim = first.ndim
    if any(v.ndim != ndim for v in values):
        raise ValueError(f"{where}: cannot pad column '{column}': rows have different ranks")
    largest = [max(v.shape[d] for v in values) for d in range(ndim)]
    if pad_shape is None:
        target = largest
    else:
        if len(pad_shape) != ndim:
            raise ValueError(
                f"{where}: pad_info shape for column '{column}' has {len(pad_shape)} dims but "
                f"rows have {ndim}. Received: pad_shape={list(pad_shape)}"
            )
        target = [largest[d] if s is None else int(s) for d, s in enumerate(pad_shape)]
        for v in values:
            if any(v.shape[d] > target[d] for d in range(ndim)):
                raise ValueError(
                    f"{where}: a row of column '{column}' has shape {v.shape}, larger than "
                    f"the pad shape {target}"
                )
    out = np.full((len(values), *target), pad_value, dtype=dtype)
    for i, v in enumerate(values):
        out[(i, *tuple(slice(0, n) for n in v.shape))] = v
    return out
