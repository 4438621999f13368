"""MindSpore's math primitives (``mindspore.ops.operations.math_ops``) on torch.

The element-wise ops (``Add``, ``Sqrt``, ``Greater``, ``LogicalAnd``, ...) and the reductions
(``ReduceSum``, ``ReduceMin``, ...) are made from the tables of :mod:`._math_tables`; the
primitives with constructor arguments or tuple outputs are classes here. Index outputs are
int32, as in MindSpore 2.0.0 (the model zoo's release): ``ArgMaxWithValue`` returns
``(index, value)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..function import math_func as mf
from ..function._utils import INDEX_DTYPE, axes, float_of, operands
from ..primitive import Primitive
from ._math_tables import BINARY, REDUCE, UNARY, make_classes

_TABLE_CLASSES = make_classes()
for _cls in _TABLE_CLASSES.values():
    _cls.__module__ = __name__  # MindSpore's path; instances pickle by it
globals().update(_TABLE_CLASSES)


def _check_bool(op: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be a bool. Received: {name}={value!r}")


def _check_int(op: str, name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be an int. Received: {name}={value!r}")


class Argmax(Primitive):
    """MindSpore's ``Argmax(axis=-1, output_type=int32)``: indices of the maxima along
    ``axis``, as ``output_type``."""

    def __init__(self, axis: int = -1, output_type: torch.dtype = torch.int32) -> None:
        _check_int(type(self).__name__, "axis", axis)
        if output_type not in (torch.int32, torch.int64):
            raise TypeError(
                f"{type(self).__name__}: output_type must be int32 or int64. "
                f"Received: output_type={output_type}"
            )
        self.axis, self.output_type = axis, output_type

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.axis).to(self.output_type)


class Argmin(Argmax):
    """MindSpore's ``Argmin(axis=-1, output_type=int32)``: indices of the minima along
    ``axis``, as ``output_type``."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmin(x, dim=self.axis).to(self.output_type)


class ArgMaxWithValue(Primitive):
    """MindSpore's ``ArgMaxWithValue(axis=0, keep_dims=False)``: ``(index, value)`` of the
    maxima along ``axis``; int32 indices (MindSpore 2.0.0; 2.10 gives int64)."""

    _fn = staticmethod(torch.max)

    def __init__(self, axis: int = 0, keep_dims: bool = False) -> None:
        _check_int(type(self).__name__, "axis", axis)
        _check_bool(type(self).__name__, "keep_dims", keep_dims)
        self.axis, self.keep_dims = axis, keep_dims

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, index = type(self)._fn(x, dim=self.axis, keepdim=self.keep_dims)
        return index.to(INDEX_DTYPE), values


class ArgMinWithValue(ArgMaxWithValue):
    """MindSpore's ``ArgMinWithValue(axis=0, keep_dims=False)``: ``(index, value)`` of the
    minima along ``axis``; int32 indices."""

    _fn = staticmethod(torch.min)


class MatMul(Primitive):
    """MindSpore's ``MatMul(transpose_a=False, transpose_b=False)``: the matrix product, either
    operand transposed first (its last two axes)."""

    def __init__(self, transpose_a: bool = False, transpose_b: bool = False) -> None:
        _check_bool(type(self).__name__, "transpose_a", transpose_a)
        _check_bool(type(self).__name__, "transpose_b", transpose_b)
        self.transpose_a, self.transpose_b = transpose_a, transpose_b

    def __call__(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.transpose(-2, -1) if self.transpose_a else a
        b = b.transpose(-2, -1) if self.transpose_b else b
        return torch.matmul(a, b)


class BatchMatMul(MatMul):
    """MindSpore's ``BatchMatMul(transpose_a=False, transpose_b=False)``: the batched matrix
    product (leading axes broadcast)."""


class _Cumulative(Primitive):
    _fn: Any = None

    def __init__(self, exclusive: bool = False, reverse: bool = False) -> None:
        _check_bool(type(self).__name__, "exclusive", exclusive)
        _check_bool(type(self).__name__, "reverse", reverse)
        self.exclusive, self.reverse = exclusive, reverse

    def __call__(self, x: torch.Tensor, axis: int) -> torch.Tensor:
        axis = int(axis)
        y = x.flip(axis) if self.reverse else x
        out = type(self)._fn(y, axis, dtype=x.dtype)
        if self.exclusive:  # shift by one: the first is the identity of the op
            first = torch.full_like(out.narrow(axis, 0, 1), type(self)._identity)
            out = torch.cat([first, out.narrow(axis, 0, out.shape[axis] - 1)], axis)
        return out.flip(axis) if self.reverse else out


class CumSum(_Cumulative):
    """MindSpore's ``CumSum(exclusive=False, reverse=False)``: running sums along ``axis``, in
    the dtype of ``x``."""

    _fn, _identity = staticmethod(torch.cumsum), 0


class CumProd(_Cumulative):
    """MindSpore's ``CumProd(exclusive=False, reverse=False)``: running products along
    ``axis``, in the dtype of ``x``."""

    _fn, _identity = staticmethod(torch.cumprod), 1


class AddN(Primitive):
    """MindSpore's ``AddN``: the element-wise sum of a tuple of tensors."""

    def __call__(self, x: Sequence[torch.Tensor]) -> torch.Tensor:
        if not isinstance(x, (tuple, list)) or not x:
            raise TypeError(f"AddN: x must be a non-empty tuple or list. Received: {type(x)}")
        return mf.addn(x)


AccumulateNV2 = type("AccumulateNV2", (AddN,), {"__doc__": "MindSpore's ``AccumulateNV2``."})


class LpNorm(Primitive):
    """MindSpore's ``LpNorm(axis, p=2, keep_dims=False, epsilon=1e-12)``: the p-norm over
    ``axis``."""

    def __init__(
        self, axis: Any, p: int = 2, keep_dims: bool = False, epsilon: float = 1e-12
    ) -> None:
        _check_int("LpNorm", "p", p)
        _check_bool("LpNorm", "keep_dims", keep_dims)
        self.axis, self.p, self.keep_dims, self.epsilon = axis, p, keep_dims, epsilon

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(
            float_of(x), self.p, dim=axes(self.axis), keepdim=self.keep_dims
        )


class Lerp(Primitive):
    """MindSpore's ``Lerp``: ``start + weight * (end - start)``."""

    def __call__(self, start: torch.Tensor, end: torch.Tensor, weight: Any) -> torch.Tensor:
        return mf.lerp(start, end, weight)


class MatrixInverse(Primitive):
    """MindSpore's ``MatrixInverse(adjoint=False)``: the inverse of each matrix in the last two
    axes (of the conjugate transpose when ``adjoint``)."""

    def __init__(self, adjoint: bool = False) -> None:
        _check_bool("MatrixInverse", "adjoint", adjoint)
        self.adjoint = adjoint

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.inv(x.mH if self.adjoint else x)


class Einsum(Primitive):
    """MindSpore's ``Einsum(equation)``: Einstein summation of a tuple of tensors."""

    def __init__(self, equation: str) -> None:
        if not isinstance(equation, str):
            raise TypeError(f"Einsum: equation must be a str. Received: equation={equation!r}")
        self.equation = equation.replace(" ", "")

    def __call__(self, operands: Sequence[torch.Tensor]) -> torch.Tensor:
        return torch.einsum(self.equation, *operands)


class ApproximateEqual(Primitive):
    """MindSpore's ``ApproximateEqual(tolerance=1e-5)``: whether ``|x - y| < tolerance``."""

    def __init__(self, tolerance: float = 1e-5) -> None:
        self.tolerance = float(tolerance)

    def __call__(self, x: Any, y: Any) -> torch.Tensor:
        x, y = operands(x, y)
        return torch.abs(x - y) < self.tolerance


class Tanh(Primitive):
    """MindSpore's ``Tanh``: the hyperbolic tangent, element-wise."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x)


# activations kept here from before the split of jisu.ops (MindSpore has them in nn_ops)
class ReLU(Primitive):
    """MindSpore's ``ReLU``: ``max(x, 0)``, element-wise."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


class Sigmoid(Primitive):
    """MindSpore's ``Sigmoid``: ``1 / (1 + exp(-x))``, element-wise."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


__all__ = sorted(
    [
        *UNARY,
        *BINARY,
        *REDUCE,
        "AccumulateNV2",
        "AddN",
        "ApproximateEqual",
        "ArgMaxWithValue",
        "ArgMinWithValue",
        "Argmax",
        "Argmin",
        "BatchMatMul",
        "CumProd",
        "CumSum",
        "Einsum",
        "Lerp",
        "LpNorm",
        "MatMul",
        "MatrixInverse",
        "ReLU",
        "Sigmoid",
        "Tanh",
    ]
)
