"""MindSpore's array primitives (``mindspore.ops.operations.array_ops``) on torch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .._functions import (
    cast,
    concat,
    expand_dims,
    gather,
    reshape,
    shape,
    split,
    squeeze,
    stack,
    tile,
    transpose,
)
from ..primitive import Primitive


class Reshape(Primitive):
    def __call__(self, x: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
        return reshape(x, shape)


class Transpose(Primitive):
    def __call__(self, x: torch.Tensor, perm: Sequence[int]) -> torch.Tensor:
        return transpose(x, perm)


class Squeeze(Primitive):
    def __init__(self, axis: Any = ()) -> None:
        self.axis = axis

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return squeeze(x, self.axis)


class ExpandDims(Primitive):
    def __call__(self, x: torch.Tensor, axis: int) -> torch.Tensor:
        return expand_dims(x, axis)


class Concat(Primitive):
    def __init__(self, axis: int = 0) -> None:
        self.axis = axis

    def __call__(self, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
        return concat(tensors, self.axis)


class Stack(Primitive):
    def __init__(self, axis: int = 0) -> None:
        self.axis = axis

    def __call__(self, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
        return stack(tensors, self.axis)


class Tile(Primitive):
    def __call__(self, x: torch.Tensor, multiples: Sequence[int]) -> torch.Tensor:
        return tile(x, multiples)


class Shape(Primitive):
    def __call__(self, x: torch.Tensor) -> tuple[int, ...]:
        return shape(x)


class Cast(Primitive):
    def __call__(self, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return cast(x, dtype)


class Gather(Primitive):
    def __call__(self, params: torch.Tensor, indices: torch.Tensor, axis: int) -> torch.Tensor:
        return gather(params, indices, axis)


class Split(Primitive):
    def __init__(self, axis: int = 0, output_num: int = 1) -> None:
        self.axis, self.output_num = axis, output_num

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return split(x, self.axis, self.output_num)


class ZerosLike(Primitive):
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)


class OnesLike(Primitive):
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ones_like(x)


__all__ = [
    "Cast",
    "Concat",
    "ExpandDims",
    "Gather",
    "OnesLike",
    "Reshape",
    "Shape",
    "Split",
    "Squeeze",
    "Stack",
    "Tile",
    "Transpose",
    "ZerosLike",
]
