"""MindSpore's functional math ops (``mindspore.ops.function.math_func``: ``ops.norm``,
``ops.bmm``, ``ops.tensor_dot``, ``ops.logical_and``, ``ops.cumsum``, ...) on torch.

Reductions keep the input's dtype as MindSpore does (a sum of int32 is int32, a mean of ints
is truncated), element-wise ops take Python scalars on either side with MindSpore's promotion
(int32 tensor + 2.5 is float32, float16 tensor + 2.5 stays float16).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ._utils import as_tensor, axes, float_of, operands


# ---------------------------------------------------------------------- products
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The matrix product of ``a`` and ``b`` (batched and broadcast as ``torch.matmul``)."""
    return torch.matmul(a, b)


def bmm(input_x: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    """The batched matrix product (leading axes broadcast)."""
    return torch.matmul(input_x, mat2)


def dot(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """MindSpore's ``dot``: the last axis of ``input`` contracted with the second-to-last of
    ``other`` (the last when ``other`` is 1-D); every other axis kept."""
    if other.dim() == 1:
        return torch.tensordot(input, other, dims=([-1], [0]))
    return torch.tensordot(input, other, dims=([input.dim() - 1], [other.dim() - 2]))


def tensor_dot(x1: torch.Tensor, x2: torch.Tensor, axes: Any) -> torch.Tensor:
    """``x1`` and ``x2`` contracted over ``axes`` (an int, or two sequences of axes)."""
    if isinstance(axes, int):
        return torch.tensordot(x1, x2, dims=axes)
    first, second = axes
    first = [first] if isinstance(first, int) else list(first)
    second = [second] if isinstance(second, int) else list(second)
    return torch.tensordot(x1, x2, dims=(first, second))


def einsum(equation: str, *operands: torch.Tensor) -> torch.Tensor:
    """Einstein summation of ``operands`` by ``equation``."""
    return torch.einsum(equation, *operands)


# ---------------------------------------------------------------------- reductions
def _reduce(fn: Any, x: torch.Tensor, axis: Any, keep_dims: bool) -> torch.Tensor:
    dims = axes(axis)
    if dims is None:
        dims = tuple(range(x.dim()))
    return fn(x, dim=dims, keepdim=keep_dims) if dims else x.clone()


def reduce_sum(x: torch.Tensor, axis: Any = (), keep_dims: bool = False) -> torch.Tensor:
    """The sum over ``axis`` (all axes for ``()``), in the dtype of ``x``."""
    return _reduce(torch.sum, x, axis, keep_dims).to(x.dtype)


def mean(x: torch.Tensor, axis: Any = None, keep_dims: bool = False) -> torch.Tensor:
    """The mean over ``axis`` (all axes for None), in the dtype of ``x`` (truncated for
    ints, as MindSpore)."""
    if x.is_floating_point() or x.is_complex():
        return _reduce(torch.mean, x, axis, keep_dims)
    return _reduce(torch.mean, x.double(), axis, keep_dims).to(x.dtype)


def reduce_mean(x: torch.Tensor, axis: Any = ()) -> torch.Tensor:
    """``mean`` without kept axes."""
    return mean(x, axis)


def reduce_max(x: torch.Tensor, axis: Any = (), keep_dims: bool = False) -> torch.Tensor:
    """The maximum over ``axis`` (all axes for ``()``)."""
    return _reduce(torch.amax, x, axis, keep_dims)


def reduce_min(x: torch.Tensor, axis: Any = (), keep_dims: bool = False) -> torch.Tensor:
    """The minimum over ``axis`` (all axes for ``()``)."""
    return _reduce(torch.amin, x, axis, keep_dims)


def _prod(x: torch.Tensor, dim: tuple[int, ...], keepdim: bool) -> torch.Tensor:
    for d in sorted((d % x.dim() for d in dim), reverse=True):  # torch.prod takes one axis
        x = torch.prod(x, d, keepdim=keepdim)
    return x


def reduce_prod(x: torch.Tensor, axis: Any = (), keep_dims: bool = False) -> torch.Tensor:
    """The product over ``axis`` (all axes for ``()``), in the dtype of ``x``."""
    return _reduce(_prod, x, axis, keep_dims).to(x.dtype)


def reduce_all(x: torch.Tensor, axis: Any = (), keep_dims: bool = False) -> torch.Tensor:
    """Whether every element over ``axis`` is True."""
    return _reduce(torch.all, x.bool(), axis, keep_dims)


def reduce_any(x: torch.Tensor, axis: Any = (), keep_dims: bool = False) -> torch.Tensor:
    """Whether any element over ``axis`` is True."""
    return _reduce(torch.any, x.bool(), axis, keep_dims)


def sum(
    input: torch.Tensor,
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The sum over ``dim`` (all axes for None), as ``dtype`` if given."""
    x = input if dtype is None else input.to(dtype)
    return reduce_sum(x, dim, keepdim)


def norm(
    A: torch.Tensor,
    ord: Any = None,
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
    axis: Any = None,
    p: Any = None,
    keep_dims: bool | None = None,
) -> torch.Tensor:
    """The vector norm (``ord`` a number or None for 2) over ``dim``, or the matrix norm for
    ``ord`` "fro"/"nuc" (MindSpore 2.x); MindSpore 1.x's ``norm(x, axis, p=2,
    keep_dims=False)`` keywords are taken too (used by the zoo)."""
    if axis is not None:
        dim = axis
    if p is not None:
        ord = p
    if keep_dims is not None:
        keepdim = keep_dims
    x = float_of(A) if dtype is None else A.to(dtype)
    dims = axes(dim)
    if isinstance(ord, str) or (dims is not None and len(dims) == 2 and ord is not None):
        return torch.linalg.matrix_norm(x, ord, dim=dims or (-2, -1), keepdim=keepdim)
    return torch.linalg.vector_norm(x, 2 if ord is None else ord, dim=dims, keepdim=keepdim)


def cumsum(x: torch.Tensor, axis: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Running sums along ``axis``, in the dtype of ``x`` (or ``dtype``)."""
    return torch.cumsum(x, int(axis), dtype=dtype or x.dtype)


def addn(x: Sequence[torch.Tensor]) -> torch.Tensor:
    """The element-wise sum of the tensors in ``x``."""
    out = x[0]
    for t in x[1:]:
        out = out + t
    return out


# ---------------------------------------------------------------------- element-wise
def add(x: Any, y: Any) -> torch.Tensor:
    """``x + y`` (either may be a Python scalar)."""
    return torch.add(*operands(x, y))


def sub(x: Any, y: Any) -> torch.Tensor:
    """``x - y`` (either may be a Python scalar)."""
    return torch.sub(*operands(x, y))


def mul(x: Any, y: Any) -> torch.Tensor:
    """``x * y`` (either may be a Python scalar)."""
    return torch.mul(*operands(x, y))


def div(input: Any, other: Any, rounding_mode: str | None = None) -> torch.Tensor:
    """``input / other``, true division (``rounding_mode`` "floor"/"trunc" to round)."""
    return torch.div(*operands(input, other), rounding_mode=rounding_mode)


def pow(x: Any, y: Any) -> torch.Tensor:
    """``x ** y`` (either may be a Python scalar)."""
    x, y = operands(x, y)
    return torch.pow(x, y)


tensor_add = add
pows = pow


def _unary(name: str, fn: Any, to_float: bool = False) -> Any:
    def op(input: Any) -> torch.Tensor:
        x = as_tensor(input)
        return fn(float_of(x) if to_float else x)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"MindSpore's ``ops.{name}``, element-wise."
    return op


def _binary(name: str, fn: Any) -> Any:
    def op(input: Any, other: Any) -> torch.Tensor:
        return fn(*operands(input, other))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"MindSpore's ``ops.{name}``, element-wise (either side may be a scalar)."
    return op


abs = absolute = _unary("abs", torch.abs)
neg = _unary("neg", torch.neg)
square = _unary("square", torch.square)
sqrt = _unary("sqrt", torch.sqrt, to_float=True)
rsqrt = _unary("rsqrt", torch.rsqrt, to_float=True)
reciprocal = _unary("reciprocal", torch.reciprocal, to_float=True)
exp = _unary("exp", torch.exp, to_float=True)
log = _unary("log", torch.log, to_float=True)
log1p = _unary("log1p", torch.log1p, to_float=True)
floor = _unary("floor", torch.floor)
ceil = _unary("ceil", torch.ceil)
round = _unary("round", torch.round)
sign = _unary("sign", torch.sign)
sin = _unary("sin", torch.sin, to_float=True)
cos = _unary("cos", torch.cos, to_float=True)
tan = _unary("tan", torch.tan, to_float=True)
atan = _unary("atan", torch.atan, to_float=True)
erf = _unary("erf", torch.erf, to_float=True)
isnan = _unary("isnan", torch.isnan)
isinf = _unary("isinf", torch.isinf)
isfinite = _unary("isfinite", torch.isfinite)
logical_not = _unary("logical_not", torch.logical_not)
atan2 = _binary("atan2", lambda a, b: torch.atan2(float_of(a), float_of(b)))
maximum = _binary("maximum", torch.maximum)
minimum = _binary("minimum", torch.minimum)
equal = _binary("equal", torch.eq)
not_equal = ne = _binary("not_equal", torch.ne)
greater = gt = _binary("greater", torch.gt)
greater_equal = ge = _binary("greater_equal", torch.ge)
less = lt = _binary("less", torch.lt)
less_equal = le = _binary("less_equal", torch.le)
logical_and = _binary("logical_and", torch.logical_and)
logical_or = _binary("logical_or", torch.logical_or)
logical_xor = _binary("logical_xor", torch.logical_xor)
floor_div = _binary("floor_div", torch.floor_divide)
truncate_div = _binary("truncate_div", lambda a, b: torch.div(a, b, rounding_mode="trunc"))
bitwise_and = _binary("bitwise_and", torch.bitwise_and)
bitwise_or = _binary("bitwise_or", torch.bitwise_or)
bitwise_xor = _binary("bitwise_xor", torch.bitwise_xor)
log2 = _unary("log2", torch.log2, to_float=True)
floor_mod = _binary("floor_mod", torch.remainder)


def amax(input: torch.Tensor, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    """The maximum over ``axis`` (all axes for None)."""
    return _reduce(torch.amax, input, axis, keepdims)


def amin(input: torch.Tensor, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    """The minimum over ``axis`` (all axes for None)."""
    return _reduce(torch.amin, input, axis, keepdims)


def count_nonzero(
    x: torch.Tensor, axis: Any = (), keep_dims: bool = False, dtype: torch.dtype = torch.int32
) -> torch.Tensor:
    """The number of non-zero elements over ``axis`` (all axes for ``()``), as ``dtype``."""
    return _reduce(torch.sum, x != 0, axis, keep_dims).to(dtype)


def clamp(input: torch.Tensor, min: Any = None, max: Any = None) -> torch.Tensor:
    """``input`` clamped to ``[min, max]`` (either may be None or a tensor)."""
    return torch.clamp(input, min, max)


clip = clamp


def ger(input: torch.Tensor, vec2: torch.Tensor) -> torch.Tensor:
    """The outer product of two 1-D tensors."""
    return torch.outer(input, vec2)


def lerp(input: torch.Tensor, end: torch.Tensor, weight: Any) -> torch.Tensor:
    """``input + weight * (end - input)``."""
    return torch.lerp(input, end.to(input.dtype), weight)


def clip_by_value(x: torch.Tensor, clip_value_min: Any = None, clip_value_max: Any = None):
    """``x`` clamped to ``[clip_value_min, clip_value_max]`` (either may be None)."""
    return torch.clamp(x, clip_value_min, clip_value_max)


__all__ = [
    "abs",
    "absolute",
    "add",
    "addn",
    "amax",
    "amin",
    "atan",
    "atan2",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bmm",
    "ceil",
    "clamp",
    "clip",
    "clip_by_value",
    "cos",
    "count_nonzero",
    "cumsum",
    "div",
    "dot",
    "einsum",
    "equal",
    "erf",
    "exp",
    "floor",
    "floor_div",
    "floor_mod",
    "ge",
    "ger",
    "greater",
    "greater_equal",
    "gt",
    "isfinite",
    "isinf",
    "isnan",
    "le",
    "lerp",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "lt",
    "matmul",
    "maximum",
    "mean",
    "minimum",
    "mul",
    "multiply",
    "ne",
    "neg",
    "norm",
    "not_equal",
    "pow",
    "pows",
    "reciprocal",
    "reduce_all",
    "reduce_any",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "round",
    "rsqrt",
    "sign",
    "sin",
    "sqrt",
    "square",
    "sub",
    "subtract",
    "sum",
    "tan",
    "tensor_add",
    "tensor_dot",
    "tensor_mul",
    "tensor_pow",
    "truncate_div",
]

tensor_mul = multiply = mul
subtract = sub
tensor_pow = pow
