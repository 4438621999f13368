"""MindSpore's functional array ops (``mindspore.ops.function.array_func``: ``ops.reshape``,
``ops.broadcast_to``, ``ops.gather_nd``, ``ops.sort``, ``ops.range``, ...) on torch.

Each is a few torch calls, so it runs under autograd, AMP and ``torch.compile``. Outputs follow
MindSpore's dtype rules: index outputs are int32 (``sort``, ``top_k``, ``unique``), Python
ints give int64 and Python floats float32 (``range``, ``arange``), constructors default to
float32.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import torch

from ._utils import INDEX_DTYPE, as_tensor, axes, ints, scalar, shape_of


# ---------------------------------------------------------------------- shapes
def reshape(x: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """``x`` with ``shape`` (one entry may be -1)."""
    return torch.reshape(x, shape_of(shape))


def transpose(x: torch.Tensor, perm: Sequence[int]) -> torch.Tensor:
    """``x`` with its axes permuted by ``perm``."""
    return x.permute(*perm)


def squeeze(x: torch.Tensor, axis: Any = None) -> torch.Tensor:
    """``x`` without its size-1 axes (all of them, or those in ``axis``)."""
    dims = axes(axis)
    return x.squeeze() if dims is None else x.squeeze(dims)


def expand_dims(x: torch.Tensor, axis: int) -> torch.Tensor:
    """``x`` with a new size-1 axis at ``axis``."""
    return x.unsqueeze(axis)


unsqueeze = expand_dims


def concat(tensors: Sequence[torch.Tensor], axis: int = 0) -> torch.Tensor:
    """The tensors joined along ``axis``."""
    return torch.cat(tuple(tensors), dim=axis)


cat = concat


def stack(tensors: Sequence[torch.Tensor], axis: int = 0) -> torch.Tensor:
    """The tensors stacked along a new ``axis``."""
    return torch.stack(tuple(tensors), dim=axis)


def unstack(input_x: torch.Tensor, axis: int = 0) -> tuple[torch.Tensor, ...]:
    """The slices of ``input_x`` along ``axis``, as a tuple."""
    return torch.unbind(input_x, dim=axis)


def flatten(x: torch.Tensor, start_dim: int = 1, end_dim: int = -1) -> torch.Tensor:
    """``x`` with the axes ``start_dim..end_dim`` merged (MindSpore keeps axis 0)."""
    return torch.flatten(x, start_dim, end_dim)


def tile(x: torch.Tensor, multiples: Sequence[int]) -> torch.Tensor:
    """``x`` repeated ``multiples`` times along each axis."""
    return x.tile(shape_of(multiples))


def broadcast_to(input: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """``input`` broadcast to ``shape`` (-1 keeps that axis's size)."""
    return input.expand(*shape_of(shape))


def repeat_elements(x: torch.Tensor, rep: int, axis: int = 0) -> torch.Tensor:
    """Each element of ``x`` repeated ``rep`` times along ``axis``."""
    return torch.repeat_interleave(x, rep, dim=axis)


def shape(x: torch.Tensor) -> tuple[int, ...]:
    """The shape of ``x`` as a tuple of ints."""
    return tuple(x.shape)


def size(x: torch.Tensor) -> int:
    """The number of elements of ``x``."""
    return x.numel()


def rank(x: torch.Tensor) -> int:
    """The number of axes of ``x``."""
    return x.dim()


def cast(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` as ``dtype``."""
    return as_tensor(x).to(dtype)


def split(
    tensor: torch.Tensor,
    split_size_or_sections: int | Sequence[int] | None = None,
    axis: int = 0,
    output_num: int | None = None,
) -> tuple[torch.Tensor, ...]:
    """``tensor`` cut along ``axis``: into chunks of ``split_size_or_sections`` (an int) or
    sections of the given sizes (MindSpore 2.x), or into ``output_num`` equal parts (MindSpore
    1.x's ``split(x, axis=, output_num=)``, still used by the model zoo)."""
    if output_num is not None:
        if split_size_or_sections is not None:
            raise ValueError("split: give split_size_or_sections or output_num, not both")
        if tensor.shape[axis] % output_num:
            raise ValueError(
                f"Split: the size of axis {axis} ({tensor.shape[axis]}) must be divisible by "
                f"output_num. Received: output_num={output_num}"
            )
        split_size_or_sections = tensor.shape[axis] // output_num
    if split_size_or_sections is None:
        raise ValueError("split: split_size_or_sections is required")
    if not isinstance(split_size_or_sections, int):
        split_size_or_sections = list(split_size_or_sections)
    return torch.split(tensor, split_size_or_sections, dim=axis)


def chunk(input: torch.Tensor, chunks: int, axis: int = 0) -> tuple[torch.Tensor, ...]:
    """``input`` cut into ``chunks`` pieces along ``axis`` (the last may be smaller)."""
    return torch.chunk(input, chunks, dim=axis)


def reverse(x: torch.Tensor, axis: Sequence[int]) -> torch.Tensor:
    """``x`` reversed along the axes in ``axis``."""
    return torch.flip(x, axes(axis) or ())


def flip(input: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    """``input`` reversed along ``dims``."""
    return torch.flip(input, axes(dims) or ())


def tril(input: torch.Tensor, diagonal: int = 0) -> torch.Tensor:
    """The lower triangle of the last two axes (above ``diagonal`` zeroed)."""
    return torch.tril(input, diagonal)


def triu(input: torch.Tensor, diagonal: int = 0) -> torch.Tensor:
    """The upper triangle of the last two axes (below ``diagonal`` zeroed)."""
    return torch.triu(input, diagonal)


# ---------------------------------------------------------------------- constructors
def _dtype(dtype: torch.dtype | None, default: torch.dtype = torch.float32) -> torch.dtype:
    return default if dtype is None else dtype


def zeros(size: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A tensor of zeros of shape ``size`` (float32 unless ``dtype``)."""
    return torch.zeros(shape_of(size), dtype=_dtype(dtype))


def ones(shape: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A tensor of ones of ``shape`` (float32 unless ``dtype``)."""
    return torch.ones(shape_of(shape), dtype=_dtype(dtype))


def zeros_like(input: torch.Tensor, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Zeros with the shape (and the dtype, unless ``dtype``) of ``input``."""
    return torch.zeros_like(input, dtype=dtype)


def ones_like(input: torch.Tensor, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Ones with the shape (and the dtype, unless ``dtype``) of ``input``."""
    return torch.ones_like(input, dtype=dtype)


def fill(type: torch.dtype, shape: Any, value: Any) -> torch.Tensor:
    """A tensor of ``shape`` and dtype ``type`` filled with ``value``."""
    return torch.full(shape_of(shape), scalar(value), dtype=type)


def fills(x: torch.Tensor, value: Any) -> torch.Tensor:
    """A tensor like ``x`` filled with ``value``."""
    return torch.full_like(x, scalar(value))


def eye(n: int, m: int | None = None, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The ``n`` x ``m`` identity matrix (float32 unless ``dtype``)."""
    return torch.eye(int(n), int(n if m is None else m), dtype=_dtype(dtype))


def _number_dtype(*values: Any) -> torch.dtype:
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    if tensors:
        return tensors[0].dtype
    if any(isinstance(v, float) for v in values):
        return torch.float32
    return torch.int64


def range(start: Any, end: Any, step: Any) -> torch.Tensor:
    """``start, start + step, ...`` up to ``end`` (excluded): the dtype of tensor arguments
    (the zoo passes int32 tensors), else int64 for ints and float32 for floats."""
    dtype = _number_dtype(start, end, step)
    # host sync: the length of the output is a shape, which MindSpore also needs on the host
    return torch.arange(scalar(start), scalar(end), scalar(step), dtype=dtype)


def arange(
    start: Any = 0, end: Any = None, step: Any = 1, *, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """``range`` with ``end`` optional (``arange(n)`` is ``0..n-1``) and a ``dtype``."""
    if end is None:
        start, end = 0, start
    return torch.arange(
        scalar(start), scalar(end), scalar(step), dtype=dtype or _number_dtype(start, end, step)
    )


def linspace(start: Any, end: Any, steps: Any) -> torch.Tensor:
    """``steps`` evenly spaced float32 values from ``start`` to ``end``, both included."""
    return torch.linspace(scalar(start), scalar(end), int(scalar(steps)), dtype=torch.float32)


def meshgrid(*inputs: torch.Tensor, indexing: str = "xy") -> tuple[torch.Tensor, ...]:
    """Coordinate grids from 1-D tensors (``indexing`` "xy" or "ij")."""
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)):
        inputs = tuple(inputs[0])
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij'. Received: indexing={indexing}")
    return torch.meshgrid(*inputs, indexing=indexing)


# ---------------------------------------------------------------------- selection
def select(cond: torch.Tensor, x: Any, y: Any) -> torch.Tensor:
    """``x`` where ``cond`` holds, else ``y`` (either may be a Python scalar)."""
    return torch.where(cond.bool(), x, y)


where = select


def masked_fill(input_x: torch.Tensor, mask: torch.Tensor, value: Any) -> torch.Tensor:
    """``input_x`` with ``value`` where ``mask`` is True."""
    if isinstance(value, torch.Tensor):
        value = value.to(input_x.dtype)
    return torch.masked_fill(input_x, mask.bool(), value)


def masked_select(input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The 1-D tensor of ``input``'s elements where ``mask`` (broadcast) is True."""
    return torch.masked_select(input, mask.bool())


def gather(params: torch.Tensor, indices: torch.Tensor, axis: int = 0) -> torch.Tensor:
    """MindSpore's ``Gather``: ``params`` indexed by ``indices`` along ``axis`` (the output's
    shape is ``params.shape[:axis] + indices.shape + params.shape[axis + 1:]``)."""
    indices = as_tensor(indices).long()
    axis = axis % params.dim()
    return torch.index_select(params, axis, indices.reshape(-1)).reshape(
        *params.shape[:axis], *indices.shape, *params.shape[axis + 1 :]
    )


def gather_elements(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    """``input`` picked element-wise along ``dim`` by ``index`` (``torch.gather``)."""
    return torch.gather(input, dim, index.long())


gather_d = gather_elements


def gather_nd(input_x: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """``input_x`` at the index tuples in the last axis of ``indices``."""
    return input_x[tuple(indices.long().movedim(-1, 0))]


def scatter_nd(indices: torch.Tensor, updates: torch.Tensor, shape: Any) -> torch.Tensor:
    """Zeros of ``shape`` with ``updates`` added at the index tuples of ``indices``
    (repeated indices add up, as in MindSpore)."""
    out = torch.zeros(shape_of(shape), dtype=updates.dtype, device=updates.device)
    return out.index_put(tuple(indices.long().movedim(-1, 0)), updates, accumulate=True)


def tensor_scatter_update(
    input_x: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor
) -> torch.Tensor:
    """A copy of ``input_x`` with ``updates`` written at the index tuples of ``indices``."""
    return input_x.index_put(tuple(indices.long().movedim(-1, 0)), updates.to(input_x.dtype))


def tensor_scatter_add(
    input_x: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor
) -> torch.Tensor:
    """A copy of ``input_x`` with ``updates`` added at the index tuples of ``indices``."""
    idx = tuple(indices.long().movedim(-1, 0))
    return input_x.index_put(idx, updates.to(input_x.dtype), accumulate=True)


def tensor_scatter_elements(
    input_x: torch.Tensor,
    indices: torch.Tensor,
    updates: torch.Tensor,
    axis: int = 0,
    reduction: str = "none",
) -> torch.Tensor:
    """A copy of ``input_x`` with ``updates`` written (``reduction="none"``) or added
    (``"add"``) element-wise along ``axis`` at ``indices``."""
    if reduction == "none":
        return torch.scatter(input_x, axis, indices.long(), updates)
    if reduction == "add":
        return torch.scatter_add(input_x, axis, indices.long(), updates)
    raise ValueError(
        f"tensor_scatter_elements: reduction must be 'none' or 'add'. Received: "
        f"reduction={reduction!r}"
    )


def one_hot(indices: torch.Tensor, depth: int, on_value: Any = 1, off_value: Any = 0, axis=-1):
    """``on_value`` at each index along a new axis of size ``depth``, ``off_value`` elsewhere
    (the dtype of ``on_value``)."""
    hot = torch.nn.functional.one_hot(indices.long(), int(depth)).bool()
    on = torch.as_tensor(on_value, device=hot.device)
    off = torch.as_tensor(off_value, dtype=on.dtype, device=hot.device)
    out = torch.where(hot, on, off)
    return out if axis == -1 else out.movedim(-1, axis)


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


__all__ = [
    "arange", "argmax", "argmin", "broadcast_to", "cast", "cat", "chunk", "concat",
    "expand_dims", "eye", "fill", "fills", "flatten", "flip", "gather", "gather_d",
    "gather_elements", "gather_nd", "linspace", "masked_fill", "masked_select", "meshgrid",
    "one_hot", "ones", "ones_like", "range", "rank", "repeat_elements", "reshape", "reverse",
    "scatter_nd", "select", "shape", "size", "slice", "sort", "split", "squeeze", "stack",
    "strided_slice", "tensor_scatter_add", "tensor_scatter_elements", "tensor_scatter_update",
    "tile", "top_k", "topk", "transpose", "tril", "triu", "unique", "unsqueeze", "unstack",
    "where", "zeros", "zeros_like",
]  # fmt: skip
