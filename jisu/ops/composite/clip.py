"""MindSpore's gradient clipping helpers: ``clip_by_global_norm`` and ``clip_by_value``."""

from __future__ import annotations

import numbers
from typing import Any

import torch


def clip_by_global_norm(x: Any, clip_norm: float = 1.0, use_norm: Any = None) -> Any:
    """Scale the tensors of ``x`` so that their global L2 norm is at most ``clip_norm``.

    ``global_norm = sqrt(sum(sum(x_i ** 2)))`` (each square sum taken in ``x_i``'s dtype, then
    float32, as MindSpore does); every tensor becomes ``x_i * clip_norm / max(global_norm,
    clip_norm)`` in its own dtype. Computed on the device, no synchronisation.

    Args:
        x: a tuple or list of tensors (the gradients), or one tensor.
        clip_norm: the largest global norm, a number > 0.
        use_norm: must be None (MindSpore 2.x refuses any other value too).

    Returns:
        A tuple of the clipped tensors (a tensor for a tensor).

    Raises:
        ValueError: ``clip_norm`` <= 0 or ``use_norm`` given.
    """
    if use_norm is not None:
        raise ValueError(
            "clip_by_global_norm: use_norm only supports None (as in MindSpore). "
            f"Received use_norm={use_norm!r}"
        )
    if isinstance(clip_norm, torch.Tensor):
        limit = clip_norm.detach().to(torch.float32).reshape(())
    else:
        if isinstance(clip_norm, bool) or not isinstance(clip_norm, numbers.Real):
            raise TypeError(
                f"clip_by_global_norm: clip_norm must be a number. Received {clip_norm!r}"
            )
        if not clip_norm > 0:
            raise ValueError(f"clip_by_global_norm: clip_norm must be > 0. Received {clip_norm}")
        limit = float(clip_norm)
    single = isinstance(x, torch.Tensor)
    tensors = [x] if single else list(x)
    if not tensors:
        return ()
    device = tensors[0].device
    squares = [torch.sum(t * t).to(torch.float32).to(device) for t in tensors]
    global_norm = torch.sqrt(torch.stack(squares).sum())
    if isinstance(limit, torch.Tensor):
        limit = limit.to(device)
        denominator = torch.maximum(global_norm, limit)
    else:
        denominator = torch.clamp(global_norm, min=limit)
    out = tuple(
        (t * (limit.to(t.device) if isinstance(limit, torch.Tensor) else limit))
        .div(denominator.to(t.device))
        .to(t.dtype)
        for t in tensors
    )
    return out[0] if single else out


def clip_by_value(x: Any, clip_value_min: Any = None, clip_value_max: Any = None) -> Any:
    """Clamp ``x`` (a tensor, or a tuple/list of tensors) to ``[clip_value_min,
    clip_value_max]`` (numbers or tensors, either may be None), in ``x``'s dtype. A minimum
    above the maximum gives the maximum, as in MindSpore."""
    if clip_value_min is None and clip_value_max is None:
        raise ValueError("clip_by_value: clip_value_min and clip_value_max cannot both be None")
    if isinstance(x, (tuple, list)):
        return type(x)(clip_by_value(t, clip_value_min, clip_value_max) for t in x)
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"clip_by_value: x must be a tensor. Received {type(x).__name__}")

    def bound(b: Any) -> Any:
        if isinstance(b, torch.Tensor):
            return b.to(device=x.device, dtype=x.dtype)
        return b

    lo, hi = bound(clip_value_min), bound(clip_value_max)
    if isinstance(lo, torch.Tensor) or isinstance(hi, torch.Tensor):
        out = x if lo is None else torch.maximum(x, torch.as_tensor(lo).to(x))
        return out if hi is None else torch.minimum(out, torch.as_tensor(hi).to(x))
    return torch.clamp(x, lo, hi)
