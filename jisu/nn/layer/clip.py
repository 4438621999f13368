"""MindSpore's ``nn.ClipByNorm``: a tensor scaled down so that its L2 norm is at most
``clip_norm``."""

from __future__ import annotations

from typing import Any

import torch

from ..cell import Cell


class ClipByNorm(Cell):
    """``x * clip_norm / max(l2norm(x, axis), clip_norm)``, in float32 (MindSpore's output
    dtype); the norm is taken over ``axis`` (all axes when None) and kept broadcastable.

    Args:
        axis: an int, a tuple of ints, or None (the whole tensor).

    Inputs: ``x`` (a float tensor) and ``clip_norm`` (a number or a tensor broadcastable to
    ``x``).
    """

    def __init__(self, axis: Any = None) -> None:
        super().__init__()
        if axis is not None and not isinstance(axis, (int, tuple, list)):
            raise TypeError(f"ClipByNorm: axis must be None, an int or a tuple. Received {axis!r}")
        self.axis = tuple(axis) if isinstance(axis, list) else axis

    def construct(self, x: torch.Tensor, clip_norm: Any) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError("ClipByNorm: x must be a floating-point tensor")
        x32 = x.to(torch.float32)
        dims = None if self.axis is None else self.axis
        square = torch.sum(x32 * x32, dim=dims, keepdim=True) if dims is not None else (
            torch.sum(x32 * x32).reshape([1] * x.ndim)
        )  # fmt: skip
        norm = torch.sqrt(square)
        clip = torch.as_tensor(clip_norm, dtype=torch.float32, device=x.device)
        return x32 * clip / torch.maximum(norm, clip)

    def extend_repr(self) -> str:
        return f"axis={self.axis}"
