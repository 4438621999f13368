"""MindSpore's math cells: ``MatMul`` (broadcasting, with transposes), ``Norm``, ``Range``,
``Tril``."""

from __future__ import annotations

from typing import Any

import torch

from .. import _checks
from ..cell import Cell

__all__ = ["MatMul", "Norm", "Range", "Tril"]


class MatMul(Cell):
    """``x1 @ x2`` with the batch dims broadcast (torch's ``matmul``), either operand
    transposed first (its last two dims); 1-d operands as ``matmul`` treats them.

    Args:
        transpose_x1, transpose_x2: transpose that operand's last two dims. Default False.
    """

    def __init__(self, transpose_x1: bool = False, transpose_x2: bool = False) -> None:
        super().__init__()
        self.transpose_x1 = _checks.a_bool("MatMul", "transpose_x1", transpose_x1)
        self.transpose_x2 = _checks.a_bool("MatMul", "transpose_x2", transpose_x2)

    def construct(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        if self.transpose_x1 and x1.dim() > 1:
            x1 = x1.transpose(-1, -2)
        if self.transpose_x2 and x2.dim() > 1:
            x2 = x2.transpose(-1, -2)
        if x1.shape[-1] != x2.shape[-2 if x2.dim() > 1 else -1]:
            raise ValueError(
                "MatMul: the row of x1 and the column of x2 must be equal. Received shapes "
                f"{tuple(x1.shape)} and {tuple(x2.shape)} (transpose_x1={self.transpose_x1}, "
                f"transpose_x2={self.transpose_x2})"
            )
        return torch.matmul(x1, x2)


class Norm(Cell):
    """The Euclidean norm over ``axis`` (all axes for ``()``), keeping them with
    ``keep_dims``."""

    def __init__(self, axis: int | tuple[int, ...] = (), keep_dims: bool = False) -> None:
        super().__init__()
        self.axis = (axis,) if isinstance(axis, int) else tuple(axis)
        self.keep_dims = _checks.a_bool("Norm", "keep_dims", keep_dims)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        dims = self.axis or tuple(range(x.dim()))
        return torch.sqrt(torch.sum(x * x, dim=dims, keepdim=self.keep_dims))


class Range(Cell):
    """``start, start + delta, ...`` up to ``limit`` (excluded; ``Range(n)``: 0 .. n-1); int
    arguments give int32 (MindSpore's), else float32."""

    def __init__(self, start: Any, limit: Any = None, delta: Any = 1) -> None:
        super().__init__()
        if limit is None:
            start, limit = 0, start
        if delta == 0:
            raise ValueError("Range: delta must not be 0")
        self.start, self.limit, self.delta = start, limit, delta

    def construct(self) -> torch.Tensor:
        ints = all(isinstance(v, int) for v in (self.start, self.limit, self.delta))
        dtype = torch.int32 if ints else torch.float32
        return torch.arange(self.start, self.limit, self.delta, dtype=dtype)


class Tril(Cell):
    """The lower triangle of the last two dims (above diagonal ``k`` zeroed)."""

    def construct(self, x: torch.Tensor, k: int = 0) -> torch.Tensor:
        return torch.tril(x, k)
