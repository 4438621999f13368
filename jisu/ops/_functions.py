"""MindSpore's functional ``ops`` on arrays and math (``ops.reshape``, ``ops.matmul``, ...),
each one torch call, so they run under autograd, AMP and ``torch.compile`` like torch code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F


def _axes(axis: Any) -> tuple[int, ...] | None:
    if axis is None or axis == ():
        return None
    return (axis,) if isinstance(axis, int) else tuple(axis)


# ---------------------------------------------------------------------- shapes
def reshape(x: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    return torch.reshape(x, tuple(shape))


def transpose(x: torch.Tensor, perm: Sequence[int]) -> torch.Tensor:
    return x.permute(*perm)


def squeeze(x: torch.Tensor, axis: Any = None) -> torch.Tensor:
    axes = _axes(axis)
    return x.squeeze() if axes is None else x.squeeze(axes)


def expand_dims(x: torch.Tensor, axis: int) -> torch.Tensor:
    return x.unsqueeze(axis)


def concat(tensors: Sequence[torch.Tensor], axis: int = 0) -> torch.Tensor:
    return torch.cat(tuple(tensors), dim=axis)


cat = concat


def stack(tensors: Sequence[torch.Tensor], axis: int = 0) -> torch.Tensor:
    return torch.stack(tuple(tensors), dim=axis)


def flatten(x: torch.Tensor, start_dim: int = 1, end_dim: int = -1) -> torch.Tensor:
    return torch.flatten(x, start_dim, end_dim)


def tile(x: torch.Tensor, multiples: Sequence[int]) -> torch.Tensor:
    return x.tile(tuple(multiples))


def shape(x: torch.Tensor) -> tuple[int, ...]:
    return tuple(x.shape)


def cast(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return x.to(dtype)


# ---------------------------------------------------------------------- math
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a, b)


def mean(x: torch.Tensor, axis: Any = None, keep_dims: bool = False) -> torch.Tensor:
    axes = _axes(axis)
    return x.mean() if axes is None and not keep_dims else x.mean(dim=axes, keepdim=keep_dims)


def reduce_sum(x: torch.Tensor, axis: Any = None, keep_dims: bool = False) -> torch.Tensor:
    axes = _axes(axis)
    return x.sum() if axes is None and not keep_dims else x.sum(dim=axes, keepdim=keep_dims)


def reduce_max(x: torch.Tensor, axis: Any = None, keep_dims: bool = False) -> torch.Tensor:
    axes = _axes(axis)
    return x.amax() if axes is None and not keep_dims else x.amax(dim=axes, keepdim=keep_dims)


def softmax(x: torch.Tensor, axis: int = -1) -> torch.Tensor:
    return torch.softmax(x, dim=axis)


def log_softmax(x: torch.Tensor, axis: int = -1) -> torch.Tensor:
    return torch.log_softmax(x, dim=axis)


def argmax(x: torch.Tensor, axis: int | None = None, keepdims: bool = False) -> torch.Tensor:
    return torch.argmax(x, dim=axis, keepdim=keepdims)


def one_hot(indices: torch.Tensor, depth: int, on_value: Any = 1, off_value: Any = 0, axis=-1):
    hot = F.one_hot(indices.long(), depth).bool()
    on = torch.as_tensor(on_value)
    off = torch.as_tensor(off_value, dtype=on.dtype)
    out = torch.where(hot, on.to(hot.device), off.to(hot.device))
    return out if axis == -1 else out.movedim(-1, axis)


def relu(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x)


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x)


def tanh(x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x)


def clip_by_value(x: torch.Tensor, clip_value_min: Any = None, clip_value_max: Any = None):
    return torch.clamp(x, clip_value_min, clip_value_max)


def zeros(shape: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.zeros(shape, dtype=dtype)


def ones(shape: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.ones(shape, dtype=dtype)


# elementwise functions with torch's own names
add, sub, mul, div = torch.add, torch.sub, torch.mul, torch.div
sqrt, exp, log, pow, abs = torch.sqrt, torch.exp, torch.log, torch.pow, torch.abs
maximum, minimum, equal, select = torch.maximum, torch.minimum, torch.eq, torch.where
gather_elements = torch.gather


def gather(params: torch.Tensor, indices: torch.Tensor, axis: int = 0) -> torch.Tensor:
    """MindSpore's ``Gather``: ``params`` indexed by ``indices`` along ``axis``."""
    return torch.index_select(params, axis, indices.reshape(-1)).reshape(
        *params.shape[:axis], *indices.shape, *params.shape[axis + 1 :]
    )


def split(x: torch.Tensor, axis: int = 0, output_num: int = 1) -> tuple[torch.Tensor, ...]:
    if x.shape[axis] % output_num:
        raise ValueError(
            f"Split: axis {axis} of size {x.shape[axis]} is not divisible by {output_num}"
        )
    return torch.split(x, x.shape[axis] // output_num, dim=axis)


__all__ = [
    "abs",
    "add",
    "argmax",
    "cast",
    "cat",
    "clip_by_value",
    "concat",
    "div",
    "equal",
    "exp",
    "expand_dims",
    "flatten",
    "gather",
    "gather_elements",
    "log",
    "log_softmax",
    "matmul",
    "maximum",
    "mean",
    "minimum",
    "mul",
    "one_hot",
    "ones",
    "pow",
    "reduce_max",
    "reduce_sum",
    "relu",
    "reshape",
    "select",
    "shape",
    "sigmoid",
    "softmax",
    "split",
    "sqrt",
    "squeeze",
    "stack",
    "sub",
    "tanh",
    "tile",
    "transpose",
    "zeros",
]
