"""Batch assembly: rows into preallocated column arrays, with optional padding."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.packets import is_packet_column
from ..core.ragged import RaggedArray

PadInfo = dict[str, tuple[Sequence[int | None] | None, Any]]


class _Zero:
    """The pad value of a column that ``pad_info`` does not name (MindSpore's): 0, or the
    empty string in a string or bytes column. One instance, :data:`ZERO`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "0"

    def __reduce__(self) -> str:
        return "ZERO"  # pickled by name: the same instance in a worker process


ZERO = _Zero()
_KINDS = {"U": "string", "S": "bytes"}


def _pad_fill(value: Any, dtype: np.dtype, column: str, where: str) -> Any:
    """What padding writes into a column of ``dtype``: ``value`` itself, or for :data:`ZERO`
    0 / ``""`` / ``b""``. A text value pads only a column of its own kind, and a number only a
    numeric column, as in MindSpore (NumPy would turn 0 into ``"0"`` and ``"7"`` into 7)."""
    if value is ZERO:
        return {"U": "", "S": b""}.get(dtype.kind, 0)
    kind = "U" if isinstance(value, str) else "S" if isinstance(value, bytes) else None
    if kind != dtype.kind and (kind is not None or dtype.kind in _KINDS):
        wanted = {"U": "a string", "S": "bytes"}.get(dtype.kind, "a number")
        name = _KINDS.get(dtype.kind, dtype.name)
        raise ValueError(
            f"{where}: cannot pad {name} column '{column}' with {value!r}: its pad value must be "
            f"{wanted}. Received: pad_info['{column}'] = (shape, {value!r})"
        )
    return value


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
            A string pad value widens a string column's dtype rather than being cut to it;
            :data:`ZERO` pads with 0, or ``""`` in a string column.
        where: the op, for error messages.
        empty: allocates the batch array (``BufferPool.empty`` reuses freed ones).

    Raises:
        ValueError: rows of different shapes and no padding, rows larger than a fixed pad, or
            a pad value of another kind than the column (text for numbers, or the reverse).
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
            zero = {"U": "''", "S": "b''"}.get(dtype.kind, "0")
            raise ValueError(
                f"{where}: cannot batch column '{column}': rows have different shapes {shapes}. "
                f"Pass pad_info={{'{column}': (None, {zero})}} (or use padded_batch) to pad them, "
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
    fill = _pad_fill(pad_value, np.dtype(dtype), column, where)
    if isinstance(fill, (str, bytes)) and any(list(v.shape) != target for v in values):
        dtype = np.result_type(dtype, np.array(fill).dtype)  # wide enough: never cut the pad
    out = np.full((len(values), *target), fill, dtype=dtype)
    for i, v in enumerate(values):
        out[(i, *tuple(slice(0, n) for n in v.shape))] = v
    return out
