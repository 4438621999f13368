"""MindSpore's ``mindspore.ops.functional`` (imported ``as F``): ready-made primitive
instances (``F.cast``, ``F.shape``, ``F.reshape``, ``F.square`` ...) and the graph helpers
(``F.depend``, ``F.partial``, ``F.identity``, ``F.stop_gradient``, ``F.tuple_to_array``,
``F.assign`` ...), eager on torch.

As in MindSpore, every function of ``jisu.ops`` is reachable here too (``F.cross_entropy``,
``F.tile``, ...). The instances are jisu's primitives of :mod:`.operations` where they
exist, else a thin torch call with MindSpore's signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from . import operations as P
from ._graph import *  # noqa: F403
from ._graph import __all__ as _GRAPH_NAMES
from .composite import clip_by_global_norm, clip_by_value  # noqa: F401
from .composite.hyper_map import partial  # noqa: F401


def _prim(name: str, fallback: Any) -> Any:
    """An instance of jisu's primitive ``name``, or ``fallback`` where jisu has none."""
    cls = P.__dict__.get(name)
    if cls is None or getattr(cls, "_jisu_unprovided", False):
        return fallback
    try:
        return cls()
    except TypeError:  # a primitive that needs constructor arguments
        return fallback


def _fill(type: torch.dtype, shape: Sequence[int], value: Any) -> torch.Tensor:
    if isinstance(shape, int):
        shape = (shape,)
    return torch.full(tuple(shape), value, dtype=type)


def _addn(inputs: Sequence[torch.Tensor]) -> torch.Tensor:
    if not isinstance(inputs, (tuple, list)) or not inputs:
        raise TypeError("addn: inputs must be a non-empty tuple or list of tensors")
    out = inputs[0]
    for x in inputs[1:]:
        out = out + x
    return out


def _reduce(fn: Any) -> Any:
    def reduce(x: torch.Tensor, axis: Any = (), keep_dims: bool = False) -> torch.Tensor:
        dims = None if axis in ((), [], None) else axis
        if dims is None:
            out = fn(x)
            return out.reshape([1] * x.ndim) if keep_dims else out
        return fn(x, dim=dims, keepdim=keep_dims)

    return reduce


shape = _prim("Shape", lambda x: tuple(x.shape))
cast = _prim("Cast", lambda x, t: x.to(t))
reshape = _prim("Reshape", lambda x, s: x.reshape(tuple(s)))
expand_dims = _prim("ExpandDims", lambda x, axis: x.unsqueeze(axis))
transpose = _prim("Transpose", lambda x, perm: x.permute(tuple(perm)))
fill = _prim("Fill", _fill)
square = _prim("Square", torch.square)
sqrt = _prim("Sqrt", torch.sqrt)
sin = _prim("Sin", torch.sin)
cos = _prim("Cos", torch.cos)
exp = _prim("Exp", torch.exp)
log = _prim("Log", torch.log)
absolute = _prim("Abs", torch.abs)
floor = _prim("Floor", torch.floor)
minimum = _prim("Minimum", torch.minimum)
maximum = _prim("Maximum", torch.maximum)
not_equal = _prim("NotEqual", torch.ne)
equal = _prim("Equal", torch.eq)
select = _prim("Select", torch.where)
addn = _prim("AddN", _addn)
zeros_like = _prim("ZerosLike", torch.zeros_like)
ones_like = _prim("OnesLike", torch.ones_like)
tensor_add = _prim("Add", torch.add)
tensor_sub = _prim("Sub", torch.sub)
tensor_mul = _prim("Mul", torch.mul)
tensor_div = _prim("RealDiv", torch.div)
tensor_pow = _prim("Pow", torch.pow)
tensor_floordiv = _prim("FloorDiv", torch.floor_divide)
mul = tensor_mul
reduce_sum = _prim("ReduceSum", _reduce(torch.sum))
reduce_mean = _prim("ReduceMean", _reduce(torch.mean))
reciprocal = _prim("Reciprocal", torch.reciprocal)
size = _prim("Size", lambda x: x.numel())
scalar_to_array = tuple_to_array  # noqa: F405 (from _graph)


def __getattr__(name: str) -> Any:
    """Every other function of ``jisu.ops`` (MindSpore's ``F`` re-exports them)."""
    from .. import ops

    if name.startswith("__") or not hasattr(ops, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(ops, name)


__all__ = [*_GRAPH_NAMES]
