"""The array primitives of ``array_ops`` that take no constructor arguments, as a table
(MindSpore's name -> the function that computes it, its call signature and summary), from
which the classes are made; each class calls its function of :mod:`..function.array_func`.
"""

from __future__ import annotations

from typing import Any

import torch

from ..function import array_func as af
from ..function._utils import as_tensor, shape_of
from ..primitive import Primitive


def _zeros(shape: Any, dtype: torch.dtype) -> torch.Tensor:
    return torch.zeros(shape_of(shape), dtype=dtype)


def _ones(shape: Any, dtype: torch.dtype) -> torch.Tensor:
    return torch.ones(shape_of(shape), dtype=dtype)


def _eye(n: int, m: int, t: torch.dtype) -> torch.Tensor:
    return torch.eye(int(n), int(m), dtype=t)


def _diag_part(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[: x.dim() // 2]
    n = int(torch.tensor(half).prod()) if half else 1
    return torch.diagonal(x.reshape(n, n)).reshape(half)


def _diag(x: torch.Tensor) -> torch.Tensor:
    return torch.diag(x.reshape(-1)).reshape(*x.shape, *x.shape)


def _invert_permutation(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.argsort(x).to(x.dtype)
    out = [0] * len(x)
    for i, p in enumerate(x):
        out[p] = i
    return tuple(out)


def _scalar_to_array(x: Any) -> torch.Tensor:
    if isinstance(x, bool):
        return torch.tensor(x)
    return torch.tensor(x, dtype=torch.float32 if isinstance(x, float) else torch.int32)


def _linspace(start: Any, stop: Any, num: Any) -> torch.Tensor:
    out = af.linspace(start, stop, num)
    return out.to(start.dtype) if isinstance(start, torch.Tensor) else out


def _range(start: Any, limit: Any, delta: Any) -> torch.Tensor:
    return af.range(start, limit, delta)


def _select(cond: torch.Tensor, x: Any, y: Any) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        x, y = as_tensor(x), as_tensor(y)
    return torch.where(cond.bool(), x, y)


#: name -> (function, call signature, summary)
ARRAY: dict[str, tuple[Any, str, str]] = {
    "Reshape": (af.reshape, "x, shape", "``x`` with a new shape"),
    "Transpose": (af.transpose, "x, perm", "``x`` with its axes permuted"),
    "ExpandDims": (af.expand_dims, "x, axis", "``x`` with a size-1 axis inserted"),
    "Tile": (af.tile, "x, multiples", "``x`` repeated along each axis"),
    "Shape": (af.shape, "x", "the shape of ``x`` as a tuple"),
    "Size": (af.size, "x", "the number of elements of ``x`` (an int)"),
    "Rank": (af.rank, "x", "the number of axes of ``x`` (an int)"),
    "Cast": (af.cast, "x, dtype", "``x`` as ``dtype``"),
    "Gather": (af.gather, "params, indices, axis", "``params`` indexed along ``axis``"),
    "GatherV2": (af.gather, "params, indices, axis", "``params`` indexed along ``axis``"),
    "GatherD": (af.gather_d, "x, dim, index", "``x`` picked element-wise along ``dim``"),
    "GatherNd": (af.gather_nd, "x, indices", "``x`` at the index tuples of ``indices``"),
    "ScatterNd": (
        af.scatter_nd,
        "indices, updates, shape",
        "zeros of ``shape`` with ``updates`` added at ``indices``",
    ),
    "TensorScatterUpdate": (
        af.tensor_scatter_update,
        "x, indices, updates",
        "a copy of ``x`` with ``updates`` written at ``indices``",
    ),
    "TensorScatterAdd": (
        af.tensor_scatter_add,
        "x, indices, updates",
        "a copy of ``x`` with ``updates`` added at ``indices``",
    ),
    "TensorScatterElements": (
        af.tensor_scatter_elements,
        "x, indices, updates",
        "a copy of ``x`` with ``updates`` written element-wise",
    ),
    "ZerosLike": (torch.zeros_like, "x", "zeros like ``x``"),
    "OnesLike": (torch.ones_like, "x", "ones like ``x``"),
    "Fill": (af.fill, "dtype, shape, value", "a tensor of ``shape`` filled with ``value``"),
    "Zeros": (_zeros, "shape, dtype", "zeros of ``shape`` and ``dtype``"),
    "Ones": (_ones, "shape, dtype", "ones of ``shape`` and ``dtype``"),
    "Eye": (_eye, "n, m, dtype", "the ``n`` x ``m`` identity matrix"),
    "Unique": (
        af.unique,
        "x",
        "``(output, idx)``: the distinct values of the 1-D ``x`` in "
        "order of appearance, and each element's position in ``output`` (int32)",
    ),
    "Slice": (
        af.slice,
        "x, begin, size",
        "``x[begin : begin + size]`` per axis (size -1: the rest)",
    ),
    "LinSpace": (_linspace, "start, stop, num", "``num`` evenly spaced values"),
    "MaskedFill": (af.masked_fill, "x, mask, value", "``x`` with ``value`` where ``mask``"),
    "MaskedSelect": (af.masked_select, "x, mask", "the elements of ``x`` where ``mask``"),
    "Select": (_select, "condition, x, y", "``x`` where ``condition``, else ``y``"),
    "DiagPart": (_diag_part, "x", "the diagonal of ``x`` (of shape ``D + D``)"),
    "Diag": (_diag, "x", "the diagonal tensor of shape ``x.shape + x.shape``"),
    "InvertPermutation": (_invert_permutation, "x", "the inverse of the permutation ``x``"),
    "ScalarToArray": (_scalar_to_array, "x", "a Python scalar as a 0-d tensor"),
}


def _array_class(name: str, fn: Any, signature: str, summary: str) -> type:
    def call(self: Any, *args: Any) -> Any:
        return fn(*args)

    doc = f"MindSpore's ``{name}``: {summary}.\n\nCalled as ``{name}()({signature})``."
    return type(name, (Primitive,), {"__call__": call, "__doc__": doc, "__module__": __name__})


def make_classes() -> dict[str, type]:
    """The classes of the table, by MindSpore's name."""
    return {name: _array_class(name, *spec) for name, spec in ARRAY.items()}
