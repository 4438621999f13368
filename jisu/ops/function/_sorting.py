"""MindSpore's sorting and slicing functions (``ops.sort``, ``ops.top_k``, ``ops.unique``,
``ops.argmin``, strided slices), re-exported by :mod:`.array_func`. Index outputs are int32,
as MindSpore's."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import torch

from ._utils import INDEX_DTYPE, ints, scalar


# ---------------------------------------------------------------------- sorting
def sort(
    input_x: torch.Tensor, axis: int = -1, descending: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(values, indices)`` of ``input_x`` sorted along ``axis``; int32 indices."""
    values, indices = torch.sort(input_x, dim=axis, descending=descending, stable=True)
    return values, indices.to(INDEX_DTYPE)


def top_k(input_x: torch.Tensor, k: int, sorted: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """``(values, indices)`` of the ``k`` largest entries along the last axis; int32
    indices."""
    values, indices = torch.topk(input_x, int(scalar(k)), dim=-1, largest=True, sorted=True)
    return values, indices.to(INDEX_DTYPE)


def topk(
    input: torch.Tensor, k: int, dim: int | None = None, largest: bool = True, sorted: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(values, indices)`` of the ``k`` largest (or smallest) entries along ``dim``."""
    dim = -1 if dim is None else dim
    values, indices = torch.topk(input, int(scalar(k)), dim=dim, largest=largest, sorted=True)
    return values, indices.to(INDEX_DTYPE)


def unique(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(output, idx)``: the distinct values of ``input`` in their order of first appearance
    (MindSpore's order, not sorted) and, for each element, the position of its value in
    ``output`` (int32; int64 for an int64 ``input``)."""
    x = input.reshape(-1)
    values, inverse = torch.unique(x, sorted=True, return_inverse=True)
    first = torch.full(values.shape, x.numel(), dtype=torch.long, device=x.device)
    first = first.scatter_reduce(0, inverse, torch.arange(x.numel(), device=x.device), "amin")
    order = torch.argsort(first)
    rank = torch.empty_like(order).scatter_(0, order, torch.arange(len(order), device=x.device))
    index_dtype = torch.int64 if input.dtype == torch.int64 else INDEX_DTYPE
    return values[order], rank[inverse].reshape(input.shape).to(index_dtype)


def argmax(x: torch.Tensor, axis: int | None = None, keepdims: bool = False) -> torch.Tensor:
    """Indices of the maxima along ``axis`` (of the flattened ``x`` when None)."""
    return torch.argmax(x, dim=axis, keepdim=keepdims)


def argmin(x: torch.Tensor, axis: int | None = None, keepdims: bool = False) -> torch.Tensor:
    """Indices of the minima along ``axis`` (of the flattened ``x`` when None), int32."""
    return torch.argmin(x, dim=axis, keepdim=keepdims).to(INDEX_DTYPE)


def strided_slice(
    x: torch.Tensor,
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int],
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
) -> torch.Tensor:
    """MindSpore's (and TensorFlow's) strided slice: ``x[begin:end:strides]`` per axis, with
    bit masks that ignore a begin or an end, expand an ellipsis, insert an axis or drop one."""
    begin, end, strides = ints(begin), ints(end), ints(strides)
    consumes = [not (new_axis_mask >> i) & 1 for i in builtins.range(len(begin))]
    out, p = x, 0
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        if (ellipsis_mask >> i) & 1:
            p = out.dim() - sum(consumes[i + 1 :])
            continue
        if (new_axis_mask >> i) & 1:
            out, p = out.unsqueeze(p), p + 1
            continue
        n = out.shape[p]
        if (shrink_axis_mask >> i) & 1:
            out = out.select(p, b + n if b < 0 else b)
            continue
        bounds = builtins.slice(
            None if (begin_mask >> i) & 1 else b, None if (end_mask >> i) & 1 else e, s
        )
        start, stop, step = bounds.indices(n)
        if step > 0:
            out = out[(builtins.slice(None),) * p + (builtins.slice(start, stop, step),)]
        else:  # torch has no negative steps: pick the indices
            out = out.index_select(p, torch.arange(start, stop, step, device=out.device))
        p += 1
    return out


def slice(x: torch.Tensor, begin: Sequence[int], size: Sequence[int]) -> torch.Tensor:
    """``x[begin[i] : begin[i] + size[i]]`` on every axis (a size of -1 takes the rest)."""
    out = x
    for axis, (b, n) in enumerate(zip(ints(begin), ints(size))):
        out = out.narrow(axis, b, out.shape[axis] - b if n == -1 else n)
    return out
