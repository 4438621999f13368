"""Conversions shared by :mod:`jisu.numpy`: inputs to tensors and dtype names to torch dtypes,
with ``mindspore.numpy``'s defaults (Python ints -> int32, Python floats -> float32)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..common.tensor_methods import to_torch_dtype


def dtype_of(dtype: Any, op: str) -> torch.dtype | None:
    """A torch dtype from a dtype, a NumPy dtype or a name; None stays None."""
    return None if dtype is None else to_torch_dtype(dtype, op)


def as_tensor(obj: Any, dtype: Any = None, op: str = "asarray") -> torch.Tensor:
    """A tensor from a tensor (as it is), a NumPy array (its dtype kept) or Python data
    (ints -> int32, floats -> float32, bools -> bool, as ``mindspore.numpy`` makes them)."""
    want = dtype_of(dtype, op)
    if isinstance(obj, torch.Tensor):
        return obj if want is None else obj.to(want)
    if isinstance(obj, np.ndarray):
        out = torch.from_numpy(np.ascontiguousarray(obj))
    elif isinstance(obj, (list, tuple)) and any(isinstance(e, torch.Tensor) for e in obj):
        out = torch.stack([as_tensor(e, op=op) for e in obj])
    else:
        array = np.asarray(obj)
        if array.dtype.kind not in "biuf":
            raise TypeError(
                f"{op}: input must be numbers, lists, tuples or tensors. Received: {type(obj)}"
            )
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        elif array.dtype == np.int64:
            array = array.astype(np.int32)
        out = torch.from_numpy(array)
    return out if want is None else out.to(want)


def operand(obj: Any, op: str) -> Any:
    """A tensor or a Python number (left as it is, so torch's scalar promotion keeps the
    tensor's dtype, as MindSpore does)."""
    if isinstance(obj, (torch.Tensor, bool, int, float)):
        return obj
    return as_tensor(obj, op=op)
