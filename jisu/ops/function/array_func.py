"""MindSpore's functional array ops (``mindspore.ops.function.array_func``: ``ops.reshape``,
``ops.broadcast_to``, ``ops.gather_nd``, ``ops.sort``, ``ops.range``, ...) on torch.

Each is a few torch calls, so it runs under autograd, AMP and ``torch.compile``. Outputs follow
MindSpore's dtype rules: index outputs are int32 (``sort``, ``top_k``, ``unique``), Python
ints give int64 and Python floats float32 (``range``, ``arange``), constructors default to
float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ._sorting import argmax, argmin, slice, sort, strided_slice, top_k, topk, unique
from ._utils import as_tensor, axes, scalar, shape_of


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
    if isinstance(split_size_or_sections, torch.Tensor):  # a 0-d size or a 1-d list of them
        split_size_or_sections = split_size_or_sections.tolist()
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


def full(size: Any, fill_value: Any, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A tensor of shape ``size`` filled with ``fill_value`` (a number, or a string such as
    ``"-inf"``); float32 for a float and int64 for an int unless ``dtype`` (MindSpore gives
    int64 for a float without ``dtype``, truncating it: jisu keeps the value)."""
    value = scalar(fill_value)
    value = float(value) if isinstance(value, str) else value
    if dtype is None:
        dtype = torch.float32 if isinstance(value, float) else None
    return torch.full(shape_of(size), value, dtype=dtype)


def full_like(input: torch.Tensor, fill_value: Any, *, dtype: torch.dtype | None = None):
    """A tensor like ``input`` filled with ``fill_value``."""
    return torch.full_like(input, scalar(fill_value), dtype=dtype)


def roll(input: torch.Tensor, shifts: Any, dims: Any = None) -> torch.Tensor:
    """``input`` rolled by ``shifts`` along ``dims`` (flattened when None)."""
    return torch.roll(input, shifts, dims)


def repeat_interleave(input: torch.Tensor, repeats: Any, axis: int | None = None):
    """Each element of ``input`` repeated ``repeats`` times along ``axis``."""
    return torch.repeat_interleave(input, repeats, dim=axis)


def nonzero(input: torch.Tensor) -> torch.Tensor:
    """The indices of the non-zero elements, one row each (int64)."""
    return torch.nonzero(input)


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is a tensor."""
    return isinstance(obj, torch.Tensor)


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
    (the dtype of ``on_value``); an index outside [0, depth) (an ignore label such as 255, or
    -1) gives a row of ``off_value``, as MindSpore's OneHot does."""
    classes = torch.arange(int(depth), device=indices.device)
    hot = indices.long()[..., None] == classes
    on = torch.as_tensor(on_value, device=hot.device)
    off = torch.as_tensor(off_value, dtype=on.dtype, device=hot.device)
    out = torch.where(hot, on, off)
    return out if axis == -1 else out.movedim(-1, axis)


__all__ = [
    "arange",
    "argmax",
    "argmin",
    "broadcast_to",
    "cast",
    "cat",
    "chunk",
    "concat",
    "expand_dims",
    "eye",
    "fill",
    "fills",
    "flatten",
    "flip",
    "full",
    "full_like",
    "gather",
    "gather_d",
    "gather_elements",
    "gather_nd",
    "is_tensor",
    "linspace",
    "masked_fill",
    "masked_select",
    "meshgrid",
    "nonzero",
    "one_hot",
    "ones",
    "ones_like",
    "range",
    "rank",
    "repeat_elements",
    "repeat_interleave",
    "reshape",
    "reverse",
    "roll",
    "scatter_nd",
    "select",
    "shape",
    "size",
    "slice",
    "sort",
    "split",
    "squeeze",
    "stack",
    "strided_slice",
    "tensor_scatter_add",
    "tensor_scatter_elements",
    "tensor_scatter_update",
    "tile",
    "top_k",
    "topk",
    "transpose",
    "tril",
    "triu",
    "unique",
    "unsqueeze",
    "unstack",
    "where",
    "zeros",
    "zeros_like",
]
