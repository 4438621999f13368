"""``mindspore.numpy``'s math, reduction and comparison functions on torch (NumPy's argument
names: ``axis``, ``keepdims``, ``dtype``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ._convert import as_tensor, dtype_of, operand

_F32 = torch.float32


def _dim(axis: Any) -> Any:
    return () if axis is None else axis


def _float(x: torch.Tensor) -> torch.Tensor:
    return x if x.is_floating_point() or x.is_complex() else x.to(_F32)


def sum(
    a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False, initial: Any = None
) -> torch.Tensor:
    """The sum over ``axis`` (all axes with None), plus ``initial``."""
    x = as_tensor(a, op="sum")
    out = torch.sum(x, _dim(axis), keepdims, dtype=dtype_of(dtype, "sum"))
    return out if initial is None else out + initial


def mean(a: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> torch.Tensor:
    """The mean over ``axis``; integer input gives the input's dtype (as MindSpore)."""
    x = as_tensor(a, op="mean")
    out = torch.mean(_float(x), _dim(axis), keepdims)
    want = dtype_of(dtype, "mean") or (x.dtype if not x.is_floating_point() else None)
    return out if want is None else out.to(want)


def prod(a: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> torch.Tensor:
    """The product over ``axis`` (an int or None)."""
    x = as_tensor(a, op="prod")
    want = dtype_of(dtype, "prod")
    if axis is None:
        out = torch.prod(x, dtype=want)
        return out.reshape([1] * x.dim()) if keepdims else out
    return torch.prod(x, axis, keepdims, dtype=want)


def _extreme(reduce: Callable, bound: Callable, name: str) -> Callable:
    def fn(
        a: Any, axis: Any = None, keepdims: bool = False, initial: Any = None, where: Any = True
    ) -> torch.Tensor:
        x = as_tensor(a, op=name)
        if where is not True:
            if initial is None:
                raise ValueError(f"{name}: where= needs initial=. Received: initial=None")
            x = torch.where(as_tensor(where, op=name), x, torch.as_tensor(initial, dtype=x.dtype))
        out = reduce(x, _dim(axis), keepdims)
        if initial is not None:
            out = bound(out, torch.as_tensor(initial, dtype=out.dtype))
        return out

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The {name[1:]}imum over ``axis`` (all axes with None), bounded by ``initial``."
    return fn


amax = _extreme(torch.amax, torch.maximum, "amax")
amin = _extreme(torch.amin, torch.minimum, "amin")
max = amax
min = amin


def argmax(a: Any, axis: int | None = None) -> torch.Tensor:
    """The index of the largest value (of the flattened tensor with ``axis=None``)."""
    return torch.argmax(as_tensor(a, op="argmax"), axis)


def argmin(a: Any, axis: int | None = None) -> torch.Tensor:
    """The index of the smallest value (of the flattened tensor with ``axis=None``)."""
    return torch.argmin(as_tensor(a, op="argmin"), axis)


def var(a: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> torch.Tensor:
    """The variance over ``axis`` (population variance unless ``ddof``)."""
    x = _float(as_tensor(a, op="var"))
    return torch.var(x, axis, correction=ddof, keepdim=keepdims)


def std(a: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> torch.Tensor:
    """The standard deviation over ``axis`` (population unless ``ddof``)."""
    x = _float(as_tensor(a, op="std"))
    return torch.std(x, axis, correction=ddof, keepdim=keepdims)


def cumsum(a: Any, axis: int | None = None, dtype: Any = None) -> torch.Tensor:
    """Cumulative sums along ``axis`` (of the flattened tensor with ``axis=None``)."""
    x = as_tensor(a, op="cumsum")
    if axis is None:
        x, axis = x.reshape(-1), 0
    return torch.cumsum(x, axis, dtype=dtype_of(dtype, "cumsum"))


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    """A vector or matrix norm (NumPy's ``linalg.norm``; MindSpore exports it as ``norm``)."""
    return torch.linalg.norm(_float(as_tensor(x, op="norm")), ord, axis, keepdims)


def clip(a: Any, a_min: Any, a_max: Any) -> torch.Tensor:
    """Values limited to ``[a_min, a_max]`` (either may be None)."""
    return torch.clamp(as_tensor(a, op="clip"), a_min, a_max)


def around(a: Any, decimals: int = 0) -> torch.Tensor:
    """Values rounded half to even, to ``decimals`` places."""
    return torch.round(as_tensor(a, op="around"), decimals=decimals)


round = around


def _unary(fn: Callable, name: str, floats: bool = False) -> Callable:
    def op(x: Any) -> torch.Tensor:
        t = as_tensor(x, op=name)
        return fn(_float(t) if floats else t)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Element-wise ``{name}`` (torch.{fn.__name__})."
    return op


def _scalar(number: Any, other: torch.Tensor) -> torch.Tensor:
    return torch.tensor(number, dtype=torch.result_type(other, number), device=other.device)


def _binary(fn: Callable, name: str) -> Callable:
    def op(x1: Any, x2: Any) -> torch.Tensor:
        a, b = operand(x1, name), operand(x2, name)
        if not isinstance(a, torch.Tensor):  # a number: a 0-d tensor promotes like one
            a = as_tensor(a, op=name) if not isinstance(b, torch.Tensor) else _scalar(a, b)
        if not isinstance(b, torch.Tensor):
            b = _scalar(b, a)
        return fn(a, b)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Element-wise ``{name}`` of two tensors or numbers (torch.{fn.__name__})."
    return op


log = _unary(torch.log, "log", floats=True)
log2 = _unary(torch.log2, "log2", floats=True)
log10 = _unary(torch.log10, "log10", floats=True)
log1p = _unary(torch.log1p, "log1p", floats=True)
exp = _unary(torch.exp, "exp", floats=True)
expm1 = _unary(torch.expm1, "expm1", floats=True)
sqrt = _unary(torch.sqrt, "sqrt", floats=True)
sin = _unary(torch.sin, "sin", floats=True)
cos = _unary(torch.cos, "cos", floats=True)
tan = _unary(torch.tan, "tan", floats=True)
arctan = _unary(torch.atan, "arctan", floats=True)
tanh = _unary(torch.tanh, "tanh", floats=True)
square = _unary(torch.square, "square")
absolute = _unary(torch.abs, "absolute")
abs = absolute
negative = _unary(torch.neg, "negative")
sign = _unary(torch.sign, "sign")
floor = _unary(torch.floor, "floor")
ceil = _unary(torch.ceil, "ceil")
reciprocal = _unary(torch.reciprocal, "reciprocal", floats=True)
isinf = _unary(torch.isinf, "isinf")
isnan = _unary(torch.isnan, "isnan")
isfinite = _unary(torch.isfinite, "isfinite")

add = _binary(torch.add, "add")
subtract = _binary(torch.sub, "subtract")
multiply = _binary(torch.mul, "multiply")
divide = _binary(torch.true_divide, "divide")
true_divide = divide
floor_divide = _binary(torch.floor_divide, "floor_divide")
mod = _binary(torch.remainder, "mod")
remainder = mod
power = _binary(torch.pow, "power")
maximum = _binary(torch.maximum, "maximum")
minimum = _binary(torch.minimum, "minimum")
greater = _binary(torch.gt, "greater")
greater_equal = _binary(torch.ge, "greater_equal")
less = _binary(torch.lt, "less")
less_equal = _binary(torch.le, "less_equal")
equal = _binary(torch.eq, "equal")
not_equal = _binary(torch.ne, "not_equal")
logical_and = _binary(torch.logical_and, "logical_and")
logical_or = _binary(torch.logical_or, "logical_or")


def _pair(x1: Any, x2: Any, op: str) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = as_tensor(x1, op=op), as_tensor(x2, op=op)
    dtype = torch.promote_types(a.dtype, b.dtype)
    return a.to(dtype), b.to(dtype)


def matmul(x1: Any, x2: Any) -> torch.Tensor:
    """The matrix product."""
    return torch.matmul(*_pair(x1, x2, "matmul"))


def dot(a: Any, b: Any) -> torch.Tensor:
    """NumPy's ``dot``: the matrix product, contracting the last axis of ``a`` with the
    second-to-last of ``b``."""
    x, y = _pair(a, b, "dot")
    if x.dim() == 0 or y.dim() == 0:
        return x * y
    if y.dim() == 1:
        return torch.tensordot(x, y, ([-1], [0]))
    return torch.tensordot(x, y, ([-1], [-2]))


def outer(a: Any, b: Any) -> torch.Tensor:
    """The outer product of two tensors (flattened first)."""
    x, y = _pair(a, b, "outer")
    return torch.outer(x.reshape(-1), y.reshape(-1))


def tensordot(a: Any, b: Any, axes: Any = 2) -> torch.Tensor:
    """Sums of products over ``axes`` (an int, or two sequences of axes)."""
    x, y = _pair(a, b, "tensordot")
    if not isinstance(axes, int):
        axes = tuple(tuple(ax) if isinstance(ax, (list, tuple)) else (ax,) for ax in axes)
    return torch.tensordot(x, y, axes)
