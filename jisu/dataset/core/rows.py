"""Rows and values: what a source may yield and how it becomes NumPy."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .ragged import RaggedArray

# torch is imported where used: a worker process whose stage never meets a tensor does not
# pay for importing it (a value can only be a tensor once its creator has imported torch)

Row = tuple  # a tuple of np.ndarray, one per column


def to_numpy_dtype(dtype: Any) -> np.dtype:
    """Normalize a dtype given as NumPy dtype, torch dtype, type or string."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dtype, torch.dtype):
        return torch.empty((), dtype=dtype).numpy().dtype if dtype != torch.bfloat16 else _bf16()
    try:
        return np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"not a data type: {dtype!r}") from exc


def _bf16() -> np.dtype:
    raise TypeError("bfloat16 has no NumPy equivalent; cast on the device instead")


def to_array(value: Any) -> np.ndarray:
    """Convert one column value to a NumPy array without copying where possible."""
    if isinstance(value, (np.ndarray, RaggedArray)):
        return value
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(value, dtype=np.uint8)
    return np.asarray(value)


def as_columns(value: Any) -> tuple:
    """An op's return value as a tuple of arrays (an op may return one value or a tuple)."""
    if isinstance(value, tuple):
        return tuple(to_array(v) for v in value)
    return (to_array(value),)


def to_output(array: np.ndarray, output_numpy: bool) -> Any:
    """Hand one column to the user: a torch tensor sharing memory, or a contiguous array.

    Strings and other non-numeric columns stay NumPy arrays (torch has no string tensors).
    Read-only arrays (rows mapped from record files) stay views as NumPy output; a tensor gets
    a copy, since torch would let a write reach read-only memory. A ragged column
    (:class:`.ragged.RaggedArray`) becomes a jagged ``torch.nested`` tensor.
    """
    if isinstance(array, RaggedArray):
        if output_numpy or array.dtype.kind not in "biufc":
            return array
        return array.to_torch()
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)  # a scalar, a transposed view, negative strides
    if output_numpy or array.dtype.kind not in "biufc":
        return array
    if not array.flags.writeable:
        array = array.copy()
    import torch

    return torch.from_numpy(array)
