"""MindSpore's argument rules for the convolution and pooling primitives: int-or-tuple sizes
(``(h, w)`` or ``(1, 1, h, w)``), ``pad_mode`` "same"/"valid"/"pad", explicit pads
``(top, bottom, left, right)`` and TensorFlow's "same" rule (output ``ceil(in / stride)``, the
odd padding element after)."""

from __future__ import annotations

import math
from typing import Any

import torch


def sizes(owner: str, name: str, value: Any, n: int, allow_long: bool = True) -> tuple[int, ...]:
    """An int, an n-tuple or (with ``allow_long``) an (n + 2)-tuple whose first two are 1, as
    an n-tuple of ints >= 1."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,) * n
    value = tuple(value) if isinstance(value, (tuple, list)) else value
    if isinstance(value, tuple) and allow_long and len(value) == n + 2:
        value = value[2:]
    if (
        not isinstance(value, tuple)
        or len(value) != n
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)
    ):
        raise ValueError(
            f"{owner}: {name} must be a positive int or a tuple of {n} positive ints. "
            f"Received {name}={value!r}"
        )
    return value


def pad_mode_arg(owner: str, pad_mode: Any) -> str:
    """``pad_mode`` lower-cased: "same", "valid" or "pad" (any case, as MindSpore)."""
    if not isinstance(pad_mode, str) or pad_mode.lower() not in ("same", "valid", "pad"):
        raise ValueError(
            f"{owner}: pad_mode must be one of 'same', 'valid', 'pad'. "
            f"Received pad_mode={pad_mode!r}"
        )
    return pad_mode.lower()


def explicit(owner: str, name: str, pad: Any, n: int) -> tuple[tuple[int, int], ...]:
    """An int or a 2n-tuple (before, after per dim) of pads >= 0 as per-dim pairs. An n-tuple
    (one symmetric pad per dim) is torch's form, which a zoo layer subclass hands on from a
    torch layer's ``padding`` (PointNet2's ``P.Conv2D(pad=self.padding)``)."""
    if isinstance(pad, int) and not isinstance(pad, bool):
        pad = (pad,) * (2 * n)
    pad = tuple(pad) if isinstance(pad, (tuple, list)) else pad
    if isinstance(pad, tuple) and len(pad) == n:
        pad = tuple(p for p in pad for _ in range(2))
    if (
        not isinstance(pad, tuple)
        or len(pad) != 2 * n
        or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in pad)
    ):
        raise ValueError(
            f"{owner}: {name} must be an int >= 0 or a tuple of {2 * n} ints >= 0. "
            f"Received {name}={pad!r}"
        )
    return tuple((pad[2 * i], pad[2 * i + 1]) for i in range(n))


def same(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """(before, after) padding of "same" for one spatial dim of length ``size``."""
    total = max((math.ceil(size / stride) - 1) * stride + dilation * (kernel - 1) + 1 - size, 0)
    return total // 2, total - total // 2


def pads_for(
    mode: str,
    spatial: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...] | None = None,
    pads: tuple[tuple[int, int], ...] | None = None,
) -> tuple[tuple[int, int], ...]:
    """The per-dim (before, after) pads of ``mode`` for an input of spatial size ``spatial``."""
    n = len(spatial)
    if mode == "same":
        dil = dilation or (1,) * n
        return tuple(same(spatial[i], kernel[i], stride[i], dil[i]) for i in range(n))
    if mode == "pad" and pads is not None:
        return pads
    return ((0, 0),) * n


def torch_pad(pads: tuple[tuple[int, int], ...]) -> list[int]:
    """Per-dim pairs as ``F.pad``'s flat list (last dim first)."""
    return [p for pair in reversed(pads) for p in pair]


def nchw(owner: str, data_format: Any, allowed: tuple[str, ...] = ("NCHW",)) -> str:
    """``data_format`` checked: channels-first only (torch's layout)."""
    if data_format not in allowed:
        raise ValueError(
            f"{owner}: data_format must be {' or '.join(map(repr, allowed))} (jisu computes "
            f"channels-first; permute NHWC input). Received data_format={data_format!r}"
        )
    return data_format


def check_rank(owner: str, x: torch.Tensor, rank: int, name: str = "x") -> None:
    if x.dim() != rank:
        raise ValueError(
            f"{owner}: {name} must be a {rank}-d tensor. Received shape {tuple(x.shape)}"
        )
