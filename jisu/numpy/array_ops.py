"""``mindspore.numpy``'s array manipulation functions on torch (NumPy's argument names)."""

from __future__ import annotations

from typing import Any

import torch

from ._convert import as_tensor


def _axes(axis: Any) -> tuple[int, ...]:
    return (axis,) if isinstance(axis, int) else tuple(axis)


def reshape(x: Any, new_shape: Any) -> torch.Tensor:
    """``x`` with a new shape (one dimension may be -1)."""
    shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    return as_tensor(x, op="reshape").reshape(shape)


def ravel(x: Any) -> torch.Tensor:
    """``x`` flattened to one dimension."""
    return as_tensor(x, op="ravel").reshape(-1)


def expand_dims(a: Any, axis: Any) -> torch.Tensor:
    """``a`` with new axes of size 1 at ``axis`` (an int or a tuple, positions in the result)."""
    out = as_tensor(a, op="expand_dims")
    ndim = out.dim() + len(_axes(axis))
    for ax in sorted(ax % ndim for ax in _axes(axis)):
        out = out.unsqueeze(ax)
    return out


def squeeze(a: Any, axis: Any = None) -> torch.Tensor:
    """``a`` without its axes of size 1 (those in ``axis`` only, which must have size 1)."""
    x = as_tensor(a, op="squeeze")
    if axis is None:
        return x.squeeze()
    for ax in _axes(axis):
        if x.shape[ax] != 1:
            raise ValueError(f"squeeze: axis {ax} has size {x.shape[ax]}, not 1")
    return x.squeeze(_axes(axis))


def transpose(a: Any, axes: Any = None) -> torch.Tensor:
    """``a`` with its axes reversed, or permuted by ``axes``."""
    x = as_tensor(a, op="transpose")
    perm = tuple(range(x.dim() - 1, -1, -1)) if axes is None else tuple(axes)
    return x.permute(perm)


def swapaxes(x: Any, axis1: int, axis2: int) -> torch.Tensor:
    """``x`` with two axes swapped."""
    return as_tensor(x, op="swapaxes").transpose(axis1, axis2)


def moveaxis(a: Any, source: Any, destination: Any) -> torch.Tensor:
    """``a`` with axes moved to new positions."""
    return torch.movedim(as_tensor(a, op="moveaxis"), source, destination)


def broadcast_to(array: Any, shape: Any) -> torch.Tensor:
    """``array`` broadcast to ``shape``."""
    return as_tensor(array, op="broadcast_to").broadcast_to(tuple(shape))


def _tensors(arrays: Any, op: str) -> list[torch.Tensor]:
    if isinstance(arrays, torch.Tensor):
        return list(arrays.unbind(0))
    return [as_tensor(a, op=op) for a in arrays]


def concatenate(arrays: Any, axis: int | None = 0) -> torch.Tensor:
    """Tensors joined along ``axis`` (flattened first with ``axis=None``)."""
    tensors = _tensors(arrays, "concatenate")
    if axis is None:
        return torch.cat([t.reshape(-1) for t in tensors])
    return torch.cat(tensors, axis)


def stack(arrays: Any, axis: int = 0) -> torch.Tensor:
    """Tensors joined along a new axis."""
    return torch.stack(_tensors(arrays, "stack"), axis)


def vstack(tup: Any) -> torch.Tensor:
    """Tensors stacked row-wise (1-D ones become rows)."""
    return torch.vstack(_tensors(tup, "vstack"))


def hstack(tup: Any) -> torch.Tensor:
    """Tensors stacked column-wise."""
    return torch.hstack(_tensors(tup, "hstack"))


def dstack(tup: Any) -> torch.Tensor:
    """Tensors stacked along the third axis."""
    return torch.dstack(_tensors(tup, "dstack"))


def column_stack(tup: Any) -> torch.Tensor:
    """1-D tensors as the columns of a 2-D tensor."""
    return torch.column_stack(_tensors(tup, "column_stack"))


def split(x: Any, indices_or_sections: Any, axis: int = 0) -> tuple[torch.Tensor, ...]:
    """``x`` split into equal sections (an int, which must divide the axis) or at indices."""
    t = as_tensor(x, op="split")
    if isinstance(indices_or_sections, int) and t.shape[axis] % indices_or_sections:
        raise ValueError(
            f"split: {indices_or_sections} sections do not divide an axis of size "
            f"{t.shape[axis]}; use array_split"
        )
    return array_split(t, indices_or_sections, axis)


def array_split(x: Any, indices_or_sections: Any, axis: int = 0) -> tuple[torch.Tensor, ...]:
    """``x`` split into sections (sizes may differ by one) or at indices."""
    sections = indices_or_sections
    if not isinstance(sections, int):
        sections = [int(i) for i in sections]
    return torch.tensor_split(as_tensor(x, op="array_split"), sections, axis)


def tile(a: Any, reps: Any) -> torch.Tensor:
    """``a`` repeated ``reps`` times along each axis."""
    return as_tensor(a, op="tile").tile(_axes(reps))


def repeat(a: Any, repeats: Any, axis: int | None = None) -> torch.Tensor:
    """Each element repeated (flattened first with ``axis=None``)."""
    x = as_tensor(a, op="repeat")
    if axis is None:
        x, axis = x.reshape(-1), 0
    if isinstance(repeats, (list, tuple)):
        repeats = repeats[0] if len(repeats) == 1 else torch.tensor(repeats, device=x.device)
    return x.repeat_interleave(repeats, dim=axis)


def roll(a: Any, shift: Any, axis: Any = None) -> torch.Tensor:
    """Elements shifted along ``axis`` (of the flattened tensor with ``axis=None``)."""
    return torch.roll(as_tensor(a, op="roll"), shift, axis)


def flip(m: Any, axis: Any = None) -> torch.Tensor:
    """Elements reversed along ``axis`` (every axis with ``axis=None``)."""
    x = as_tensor(m, op="flip")
    return x.flip(tuple(range(x.dim())) if axis is None else _axes(axis))


def flipud(m: Any) -> torch.Tensor:
    """Rows reversed."""
    return flip(m, 0)


def fliplr(m: Any) -> torch.Tensor:
    """Columns reversed."""
    return flip(m, 1)


def rot90(a: Any, k: int = 1, axes: Any = (0, 1)) -> torch.Tensor:
    """``a`` rotated by 90 degrees ``k`` times in the plane of ``axes``."""
    return torch.rot90(as_tensor(a, op="rot90"), k, list(axes))


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """Elements of ``x`` where ``condition`` holds, else of ``y``; with the condition alone,
    the indices where it holds (a tuple, one tensor per axis: NumPy's meaning)."""
    cond = as_tensor(condition, op="where")
    if x is None and y is None:
        return torch.where(cond)
    if x is None or y is None:
        raise ValueError("where: give both x and y, or neither")
    x = x if isinstance(x, (torch.Tensor, int, float, bool)) else as_tensor(x, op="where")
    y = y if isinstance(y, (torch.Tensor, int, float, bool)) else as_tensor(y, op="where")
    return torch.where(cond.to(torch.bool), x, y)


def take_along_axis(arr: Any, indices: Any, axis: int | None) -> torch.Tensor:
    """Values at ``indices`` along ``axis`` (of the flattened tensor with ``axis=None``)."""
    x, idx = as_tensor(arr, op="take_along_axis"), as_tensor(indices, op="take_along_axis")
    if axis is None:
        x, axis = x.reshape(-1), 0
    return torch.take_along_dim(x, idx.long(), axis)


def take(a: Any, indices: Any, axis: int | None = None) -> torch.Tensor:
    """Elements at ``indices`` along ``axis`` (of the flattened tensor with ``axis=None``)."""
    x, idx = as_tensor(a, op="take"), as_tensor(indices, op="take").long()
    if axis is None:
        return x.reshape(-1)[idx]
    return x.index_select(axis, idx.reshape(-1)).reshape(
        *x.shape[: axis % x.dim()], *idx.shape, *x.shape[axis % x.dim() + 1 :]
    )


def unravel_index(indices: Any, shape: Any, order: str = "C") -> tuple[torch.Tensor, ...]:
    """Flat indices as a tuple of coordinate tensors for an array of ``shape``."""
    if order not in ("C", "F"):
        raise ValueError(f"unravel_index: order must be 'C' or 'F'. Received: order={order!r}")
    idx = as_tensor(indices, op="unravel_index")
    dims = tuple(shape) if order == "C" else tuple(reversed(tuple(shape)))
    coords = torch.unravel_index(idx, dims)
    return coords if order == "C" else tuple(reversed(coords))


def atleast_1d(*arys: Any) -> Any:
    """Each input with at least one dimension."""
    out = [torch.atleast_1d(as_tensor(a, op="atleast_1d")) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys: Any) -> Any:
    """Each input with at least two dimensions."""
    out = [torch.atleast_2d(as_tensor(a, op="atleast_2d")) for a in arys]
    return out[0] if len(out) == 1 else out


def size(a: Any, axis: int | None = None) -> int:
    """The number of elements (along ``axis`` when given)."""
    x = as_tensor(a, op="size")
    return x.numel() if axis is None else x.shape[axis]


def shape(a: Any) -> tuple[int, ...]:
    """The shape as a tuple (NumPy's ``shape``)."""
    return tuple(as_tensor(a, op="shape").shape)


def ndim(a: Any) -> int:
    """The number of dimensions."""
    return as_tensor(a, op="ndim").dim()
