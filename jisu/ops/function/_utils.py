"""Argument helpers shared by jisu's functional ops: MindSpore's axes, shapes, dtypes and
Python scalars as torch wants them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

#: MindSpore's index outputs (TopK, Sort, Unique, Argmax, ArgMaxWithValue in 2.0.0)
INDEX_DTYPE = torch.int32


def as_tensor(x: Any, like: torch.Tensor | None = None) -> torch.Tensor:
    """``x`` as a tensor: tensors pass through; Python and NumPy scalars, lists and arrays become
    tensors (on ``like``'s device), with MindSpore's dtypes for Python values (int -> int64,
    float -> float32, bool -> bool)."""
    if isinstance(x, torch.Tensor):
        return x
    device = like.device if like is not None else None
    if isinstance(x, (np.ndarray, np.generic)):
        return torch.as_tensor(np.asarray(x), device=device)
    return torch.as_tensor(x, device=device)


def operands(x: Any, y: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Two operands of a binary op as tensors: a Python scalar becomes a 0-d tensor of the
    dtype torch's promotion gives it against the other operand, so the result has MindSpore's
    dtype (int32 tensor + 2.5 -> float32, float16 tensor + 2.5 -> float16, int32 + 2 ->
    int32); arrays and lists become tensors."""
    numbers = (bool, int, float)
    if not isinstance(x, (torch.Tensor, *numbers)):
        x = as_tensor(x, y if isinstance(y, torch.Tensor) else None)
    if not isinstance(y, (torch.Tensor, *numbers)):
        y = as_tensor(y, x if isinstance(x, torch.Tensor) else None)
    if isinstance(x, torch.Tensor) and not isinstance(y, torch.Tensor):
        y = torch.tensor(y, dtype=scalar_dtype(x.dtype, y), device=x.device)
    elif isinstance(y, torch.Tensor) and not isinstance(x, torch.Tensor):
        x = torch.tensor(x, dtype=scalar_dtype(y.dtype, x), device=y.device)
    elif not isinstance(x, torch.Tensor):
        x, y = as_tensor(x), as_tensor(y)
    return x, y


def scalar_dtype(dtype: torch.dtype, value: bool | int | float) -> torch.dtype:
    """The dtype a Python scalar takes against a tensor of ``dtype`` (torch's and MindSpore's
    rule: it keeps the tensor's dtype unless it is of a higher kind: an int against bool is
    int64, a float against ints or bool float32). ``torch.result_type`` would do, but it
    breaks a ``torch.compile`` graph."""
    if isinstance(value, bool) or dtype.is_floating_point or dtype.is_complex:
        return dtype
    if isinstance(value, int):
        return torch.int64 if dtype == torch.bool else dtype
    return torch.float32


def axes(axis: Any) -> tuple[int, ...] | None:
    """MindSpore's ``axis`` (int, tuple, list, ``()`` or None for all) as a tuple or None."""
    if isinstance(axis, torch.Tensor):
        axis = axis.tolist()  # host sync: an axis is a shape-level constant in MindSpore
    if axis is None or axis == () or axis == []:
        return None
    return (int(axis),) if isinstance(axis, int) else tuple(int(a) for a in axis)


def shape_of(shape: Any) -> tuple[int, ...]:
    """A shape given as an int, a sequence or a 1-D tensor, as a tuple of ints."""
    if isinstance(shape, torch.Tensor):
        shape = shape.tolist()  # host sync: a shape is a constant in MindSpore
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def ints(values: Sequence[Any] | torch.Tensor) -> list[int]:
    """Begin/size/stride lists given as tuples or tensors, as Python ints."""
    if isinstance(values, torch.Tensor):
        return [int(v) for v in values.tolist()]  # host sync: slicing bounds are constants
    return [int(v) for v in values]


def scalar(x: Any) -> Any:
    """A Python number from a number or a one-element tensor."""
    if isinstance(x, torch.Tensor):
        return x.item()  # host sync: MindSpore needs these values on the host too
    return x


def float_of(x: torch.Tensor) -> torch.Tensor:
    """``x`` itself if floating, else as float32 (MindSpore's result dtype for int inputs)."""
    return x if x.is_floating_point() or x.is_complex() else x.to(torch.float32)
