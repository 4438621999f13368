"""MindSpore's math primitives (``mindspore.ops.operations.math_ops``) on torch."""

from __future__ import annotations

from typing import Any

import torch

from .._functions import mean, reduce_max, reduce_sum
from ..primitive import Primitive


class _Reduce(Primitive):
    _fn: Any = None

    def __init__(self, keep_dims: bool = False) -> None:
        if not isinstance(keep_dims, bool):
            raise TypeError(f"{type(self).__name__}: keep_dims must be a bool")
        self.keep_dims = keep_dims

    def __call__(self, x: torch.Tensor, axis: Any = ()) -> torch.Tensor:
        return type(self)._fn(x, axis, self.keep_dims)


class ReduceMean(_Reduce):
    _fn = staticmethod(mean)


class ReduceSum(_Reduce):
    _fn = staticmethod(reduce_sum)


class ReduceMax(_Reduce):
    _fn = staticmethod(reduce_max)


class Argmax(Primitive):
    """Indices of the maxima along ``axis`` as ``output_type`` (MindSpore: int32)."""

    def __init__(self, axis: int = -1, output_type: torch.dtype = torch.int32) -> None:
        self.axis, self.output_type = axis, output_type

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.axis).to(self.output_type)


class MatMul(Primitive):
    def __init__(self, transpose_a: bool = False, transpose_b: bool = False) -> None:
        self.transpose_a, self.transpose_b = transpose_a, transpose_b

    def __call__(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.transpose(-2, -1) if self.transpose_a else a
        b = b.transpose(-2, -1) if self.transpose_b else b
        return torch.matmul(a, b)


BatchMatMul = MatMul


def _elementwise(name: str, fn: Any) -> type:
    def call(self: Any, *args: Any) -> torch.Tensor:
        return fn(*args)

    return type(name, (Primitive,), {"__call__": call, "__doc__": f"MindSpore's ``{name}``."})


Add = _elementwise("Add", torch.add)
Sub = _elementwise("Sub", torch.sub)
Mul = _elementwise("Mul", torch.mul)
Div = _elementwise("Div", torch.div)
RealDiv = _elementwise("RealDiv", torch.div)
Sqrt = _elementwise("Sqrt", torch.sqrt)
Exp = _elementwise("Exp", torch.exp)
Log = _elementwise("Log", torch.log)
Pow = _elementwise("Pow", torch.pow)
Abs = _elementwise("Abs", torch.abs)
Maximum = _elementwise("Maximum", torch.maximum)
Minimum = _elementwise("Minimum", torch.minimum)
Equal = _elementwise("Equal", torch.eq)
Select = _elementwise("Select", torch.where)
ReLU = _elementwise("ReLU", torch.relu)
Sigmoid = _elementwise("Sigmoid", torch.sigmoid)
Tanh = _elementwise("Tanh", torch.tanh)

__all__ = [
    "Abs",
    "Add",
    "Argmax",
    "BatchMatMul",
    "Div",
    "Equal",
    "Exp",
    "Log",
    "MatMul",
    "Maximum",
    "Minimum",
    "Mul",
    "Pow",
    "ReLU",
    "RealDiv",
    "ReduceMax",
    "ReduceMean",
    "ReduceSum",
    "Select",
    "Sigmoid",
    "Sqrt",
    "Sub",
    "Tanh",
]
