"""Functional ``ops`` that single model-zoo projects call: ``sequence_mask``, ``dense``,
``intopk``, ``batch_dot``, ``svd``, ``print_``; ``deformable_conv2d`` is refused by name.
Each follows MindSpore 2.10's contract, checked against its recorded answers
(tests/fixtures/ms_gaps)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from .._unprovided import refused_function
from .op_info_register import CustomRegOp, DataType, TBERegOp, op_info_register

__all__ = [
    "CustomRegOp",
    "DataType",
    "TBERegOp",
    "batch_dot",
    "deformable_conv2d",
    "dense",
    "intopk",
    "op_info_register",
    "print_",
    "sequence_mask",
    "svd",
]


def sequence_mask(lengths: torch.Tensor, maxlen: int | None = None) -> torch.Tensor:
    """A bool mask of shape ``lengths.shape + (maxlen,)``, True where the position is below the
    length (``maxlen`` defaults to the largest length, read on the host)."""
    if maxlen is None:
        maxlen = int(lengths.max())  # host sync: the output's size
    if isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen <= 0:
        raise ValueError(f"sequence_mask: maxlen must be a positive int. Received: {maxlen!r}")
    return torch.arange(maxlen, device=lengths.device) < lengths.unsqueeze(-1)


def dense(
    input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """``input @ weight.T + bias`` (``weight`` of shape ``(out, in)``)."""
    return F.linear(input, weight, bias)


def intopk(x1: torch.Tensor, x2: torch.Tensor, k: int) -> torch.Tensor:
    """Whether each row's target ``x2[i]`` is among the ``k`` largest of ``x1[i]``: fewer than
    ``k`` values are strictly larger (so ties with the k-th value count as in, as in
    MindSpore and TensorFlow)."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"intopk: k must be an int. Received: {k!r}")
    target = x1.gather(1, x2.long().unsqueeze(1))
    return (x1 > target).sum(dim=1) < k


def _batch_dot_axes(x1: torch.Tensor, x2: torch.Tensor, axes: Any) -> list[int]:
    if axes is None:
        return [x1.dim() - 1, x2.dim() - 1 if x2.dim() == 2 else x2.dim() - 2]
    if isinstance(axes, (tuple, list)):
        if 0 in axes or len(axes) != 2:
            raise ValueError(f"batch_dot: axes must be 2 non-zero axes. Received: {axes}")
        pair = [int(axes[0]) % x1.dim(), int(axes[1]) % x2.dim()]
        return pair
    if isinstance(axes, int) and not isinstance(axes, bool):
        if axes == 0 or abs(axes) > min(x1.dim(), x2.dim()):
            raise ValueError(f"batch_dot: axes must be non-zero and within both ranks: {axes}")
        return [axes % x1.dim(), axes % x2.dim()] if axes < 0 else [axes, axes]
    raise ValueError(f"batch_dot: axes must be an int, a tuple or a list. Received: {axes!r}")


def batch_dot(x1: torch.Tensor, x2: torch.Tensor, axes: Any = None) -> torch.Tensor:
    """Per-sample contraction of ``x1``'s axis ``axes[0]`` with ``x2``'s axis ``axes[1]`` (axis
    0 is the batch): the result has the batch, then ``x1``'s other axes, then ``x2``'s (a 2-D
    input gets a size-1 axis that is squeezed again), as MindSpore's (Keras') ``batch_dot``."""
    if x1.shape[0] != x2.shape[0]:
        raise ValueError(
            f"batch_dot: x1 and x2 must have the same batch size. Received: {x1.shape[0]} and "
            f"{x2.shape[0]}"
        )
    a1, a2 = _batch_dot_axes(x1, x2, axes)
    squeeze = 1 if x1.dim() == 2 else (-1 if x2.dim() == 2 else None)
    if x1.dim() == 2:
        x1, a1 = x1.unsqueeze(1), a1 + 1
    if x2.dim() == 2:
        x2 = x2.unsqueeze(2)
    left = x1.movedim(a1, -1)
    right = x2.movedim(a2, 1)
    batch, k = x1.shape[0], left.shape[-1]
    out = torch.bmm(left.reshape(batch, -1, k), right.reshape(batch, k, -1))
    out = out.reshape(batch, *left.shape[1:-1], *right.shape[2:])
    return out if squeeze is None else out.squeeze(squeeze)


def svd(input: torch.Tensor, full_matrices: bool = False, compute_uv: bool = True) -> Any:
    """``(s, u, v)`` with ``input = u @ diag(s) @ v.T`` (MindSpore returns ``v``, not torch's
    ``vh``), or ``s`` alone when ``compute_uv`` is False."""
    if not compute_uv:
        return torch.linalg.svdvals(input)
    u, s, vh = torch.linalg.svd(input, full_matrices=full_matrices)
    return s, u, vh.mH


def print_(*input_x: Any) -> None:
    """Prints its arguments (tensors by value) on one line each, as MindSpore's ``Print``."""
    for x in input_x:
        print(x.detach().cpu().numpy() if torch.is_tensor(x) else x)  # host sync: printing


deformable_conv2d = refused_function(
    "ops.deformable_conv2d",
    "MindSpore's deformable convolution (DeformableOffsets + Conv2D, Ascend/GPU kernels) has no "
    "torch kernel in jisu; torchvision.ops.deform_conv2d computes the same operation with "
    "torch's weight layout",
)
