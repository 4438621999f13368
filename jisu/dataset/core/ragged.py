"""Ragged batch columns: rows whose first dimension differs, batched without padding.

``batch(..., ragged=["data"])`` turns a column of variable-length rows (raw JPEG or record
bytes, token ids, boxes per image) into one :class:`RaggedArray`: the rows concatenated along
axis 0 (``values``) and where each begins (``offsets``, ``n + 1`` int64). That is Arrow's list
layout and the layout of PyTorch's jagged nested tensors, so a batch crosses from a worker
process as two arrays and becomes a ``torch.nested`` tensor without a copy
(:meth:`RaggedArray.to_torch`, what the iterators hand out unless ``output_numpy``).

MindSpore has no such column (its ``batch`` pads with ``pad_info`` or fails), nor has
``tf.data.batch``; ``tf.data.Dataset.ragged_batch`` and DataLoader's list of tensors are the
models.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np


def _silence_fx_tracing_notice() -> None:
    """Spend torch's once-per-process warning that its nested tensors trigger on creation
    ("is_fx_tracing will return true for both fx.symbolic_trace and torch.export..."), a
    notice to torch's own developers, with its logger quiet, so users do not read it."""
    global _fx_notice_spent
    if _fx_notice_spent:
        return
    _fx_notice_spent = True
    try:
        from torch.fx import _symbolic_trace
    except ImportError:  # pragma: no cover - another torch layout
        return
    notice = getattr(_symbolic_trace, "is_fx_tracing_warning", None)
    if notice is None:
        return
    logger = logging.getLogger(_symbolic_trace.__name__)
    disabled, logger.disabled = logger.disabled, True
    try:
        notice()
    finally:
        logger.disabled = disabled


_fx_notice_spent = False
_warming = False  # RaggedArray.warm_torch started (once per process)
_warm_lock = threading.Lock()


class RaggedArray:
    """``len(offsets) - 1`` rows; row ``i`` is ``values[offsets[i]:offsets[i + 1]]``.

    Rows may differ in their first dimension only; their other dimensions and dtype are the
    column's. It behaves as a sequence of row arrays (``len``, indexing, iteration give views
    of ``values``), and its ``shape`` has None for the ragged dimension, as
    ``output_shapes(estimate=True)`` reports a dimension that varies.

    Args:
        values: the rows, concatenated along axis 0.
        offsets: non-decreasing int64 offsets into ``values``, first 0, last ``len(values)``.

    Raises:
        ValueError: offsets that do not describe ``values`` (the message says how).
    """

    __slots__ = ("offsets", "values")

    def __init__(self, values: np.ndarray, offsets: np.ndarray) -> None:
        values = np.asarray(values)
        offsets = np.asarray(offsets)
        if values.ndim < 1 or values.dtype.hasobject:
            raise ValueError(
                "RaggedArray: values must be an array of at least one dimension and a "
                f"non-object dtype. Received: shape {values.shape}, dtype {values.dtype}"
            )
        if offsets.ndim != 1 or offsets.size < 1 or offsets.dtype.kind not in "iu":
            raise ValueError(
                "RaggedArray: offsets must be a 1-D integer array of at least one entry. "
                f"Received: shape {offsets.shape}, dtype {offsets.dtype}"
            )
        offsets = offsets.astype(np.int64)  # signed before np.diff: unsigned would wrap
        if offsets[0] != 0 or offsets[-1] != len(values) or np.any(np.diff(offsets) < 0):
            raise ValueError(
                "RaggedArray: offsets must start at 0, never decrease and end at "
                f"len(values)={len(values)}. Received: first {offsets[0]}, last {offsets[-1]}"
            )
        self.values = values
        self.offsets = offsets

    @classmethod
    def from_rows(
        cls,
        rows: Sequence[np.ndarray],
        column: str = "",
        where: str = "batch",
        empty: Callable = np.empty,
    ) -> RaggedArray:
        """The rows concatenated into one new ``values`` array (allocated by ``empty``).

        Raises:
            ValueError: a 0-d row, or rows whose dimensions after the first differ (naming
                ``where`` and ``column``).
        """
        if isinstance(rows, RaggedArray):
            return rows
        if any(isinstance(r, RaggedArray) for r in rows):
            raise ValueError(
                f"{where}: column '{column}' holds ragged batches already (RaggedArray rows); "
                "a ragged column is batched once: batch the rows a single time, or turn it "
                "into arrays first (RaggedArray.to_padded)"
            )
        if isinstance(rows, np.ndarray) and rows.ndim >= 2 and not rows.dtype.hasobject:
            n, length = rows.shape[:2]  # a gathered batch of equal rows: one view, no copy
            return cls(rows.reshape(n * length, *rows.shape[2:]), np.arange(n + 1) * length)
        arrays = [np.asarray(r) for r in rows]
        if not arrays:
            return cls(np.empty(0), np.zeros(1, dtype=np.int64))
        for a in arrays:
            if a.ndim == 0:
                raise ValueError(
                    f"{where}: column '{column}' is ragged but a row is a scalar ({a!r}); "
                    "ragged rows need at least one dimension (bytes, lists, arrays)"
                )
        trailing = arrays[0].shape[1:]
        if any(a.shape[1:] != trailing for a in arrays):
            shapes = sorted({tuple(a.shape) for a in arrays})
            raise ValueError(
                f"{where}: ragged column '{column}' has rows {shapes}: only the first dimension "
                "may differ between rows; pad the others with pad_info instead"
            )
        dtype = arrays[0].dtype
        if any(a.dtype != dtype for a in arrays):
            dtype = np.result_type(*arrays)
        offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([len(a) for a in arrays], out=offsets[1:])
        values = empty((int(offsets[-1]), *trailing), dtype)
        np.concatenate(arrays, out=values, casting="unsafe")  # one pass (dtype: result_type)
        return cls(values, offsets)

    # ------------------------------------------------------------------ a sequence of rows
    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: int | slice) -> np.ndarray | RaggedArray:
        if isinstance(index, slice):
            begin, end, step = index.indices(len(self))
            if step != 1:
                picked = [self[i] for i in range(begin, end, step)]
                if not picked:
                    return RaggedArray(self.values[:0], np.zeros(1, dtype=np.int64))
                return RaggedArray.from_rows(picked)
            offsets = self.offsets[begin : max(begin, end) + 1]
            values = self.values[offsets[0] : offsets[-1]]
            return RaggedArray(values, offsets - offsets[0])
        n = len(self)
        i = int(index)
        if not -n <= i < n:
            raise IndexError(f"RaggedArray: row {index} out of range for {n} rows")
        i %= n
        return self.values[self.offsets[i] : self.offsets[i + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        for begin, end in zip(self.offsets[:-1].tolist(), self.offsets[1:].tolist()):
            yield self.values[begin:end]

    def tolist(self) -> list[np.ndarray]:
        """The rows, as views of ``values``."""
        return list(self)

    @property
    def lengths(self) -> np.ndarray:
        """Each row's first dimension (int64)."""
        return np.diff(self.offsets)

    @property
    def shape(self) -> tuple[int | None, ...]:
        return (len(self), None, *self.values.shape[1:])

    @property
    def ndim(self) -> int:
        return self.values.ndim + 1

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + self.offsets.nbytes

    # ------------------------------------------------------------------ conversions
    def to_padded(
        self, pad_value: Any = 0, length: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(padded, lengths)``: the rows in a ``(n, length, ...)`` array, filled with
        ``pad_value`` past each row's end (``length`` defaults to the longest row).

        Raises:
            ValueError: a row longer than ``length``.
        """
        lengths = self.lengths
        longest = int(lengths.max()) if len(lengths) else 0
        if length is None:
            length = longest
        elif longest > length:
            raise ValueError(
                f"RaggedArray.to_padded: a row has length {longest}, longer than length={length}"
            )
        out = np.full((len(self), length, *self.values.shape[1:]), pad_value, self.values.dtype)
        for i, row in enumerate(self):
            out[i, : len(row)] = row
        return out, lengths

    def to_torch(self) -> Any:
        """A jagged ``torch.nested`` tensor sharing ``values`` (copied when read-only)."""
        import torch

        _silence_fx_tracing_notice()
        values = np.ascontiguousarray(self.values)
        if not values.flags.writeable:
            values = values.copy()
        offsets = np.ascontiguousarray(self.offsets)
        if not offsets.flags.writeable:
            offsets = offsets.copy()
        return torch.nested.nested_tensor_from_jagged(
            torch.from_numpy(values), torch.from_numpy(offsets)
        )

    @staticmethod
    def warm_torch() -> None:
        """Make the first :meth:`to_torch` cheap: torch builds its first jagged tensor only
        after importing ~500 modules (its symbolic shapes, sympy), ~1.2 s, which would land on
        an iterator's first ragged batch. A daemon thread does it once per process, while the
        pipeline opens its sources and reads its first rows."""
        global _warming
        with _warm_lock:
            if _warming:
                return
            _warming = True

        def warm() -> None:
            try:
                RaggedArray(np.zeros(1, np.uint8), np.array([0, 1], np.int64)).to_torch()
            except Exception:  # the real first batch raises it, where it is reported
                pass

        threading.Thread(target=warm, name="jisu-warm-nested", daemon=True).start()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(
            "a RaggedArray (a batch column of rows of different lengths) has no single array "
            "shape: use .to_padded(), .values with .offsets, or iterate over its rows"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RaggedArray):
            return NotImplemented
        return (
            self.values.dtype == other.values.dtype
            and np.array_equal(self.offsets, other.offsets)
            and np.array_equal(self.values, other.values)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as an ndarray

    def __reduce__(self) -> tuple:
        return (RaggedArray, (self.values, self.offsets))

    def __repr__(self) -> str:
        return (
            f"RaggedArray({len(self)} rows, lengths {self.lengths.tolist()[:8]}"
            f"{'...' if len(self) > 8 else ''}, dtype={self.values.dtype})"
        )
