"""MindSpore's convolution, bias and padding primitives (``Conv2D``, ``Conv2DBackpropInput``
(alias ``Conv2DTranspose``), ``Conv3D``, ``BiasAdd``, ``Pad``, ``MirrorPad``)
on torch, channels-first."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from .. import _cpu_half
from ..primitive import Primitive
from . import _nn_padding as P


class _ConvBase(Primitive):
    _n = 2
    _layout = ("NCHW",)

    def __init__(
        self,
        out_channel: int,
        kernel_size: Any,
        mode: int = 1,
        pad_mode: str = "valid",
        pad: Any = 0,
        stride: Any = 1,
        dilation: Any = 1,
        group: int = 1,
        data_format: str = "NCHW",
    ) -> None:
        owner, n = type(self).__name__, self._n
        self.out_channel = out_channel
        self.kernel_size = P.sizes(owner, "kernel_size", kernel_size, n, allow_long=False)
        self.mode = mode
        self.pad_mode = P.pad_mode_arg(owner, pad_mode)
        self.pad = P.explicit(owner, "pad", pad, n)
        if self.pad_mode != "pad" and any(p for pair in self.pad for p in pair):
            raise ValueError(
                f"{owner}: pad must be 0 when pad_mode is not 'pad'. Received pad={pad!r}"
            )
        self.stride = P.sizes(owner, "stride", stride, n)
        self.dilation = P.sizes(owner, "dilation", dilation, n)
        if isinstance(group, bool) or not isinstance(group, int) or group < 1:
            raise ValueError(f"{owner}: group must be an int >= 1. Received group={group!r}")
        self.group = group
        self.data_format = P.nchw(owner, data_format, self._layout)

    def _pads(self, spatial: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
        return P.pads_for(
            self.pad_mode, spatial, self.kernel_size, self.stride, self.dilation, self.pad
        )


class Conv2D(_ConvBase):
    """2-d convolution of (N, C, H, W) ``x`` with a (out_channel, C / group, kh, kw) ``weight``:
    ``Conv2D(out_channel, kernel_size, pad_mode="valid", pad=0, stride=1, dilation=1,
    group=1)(x, weight)``; ``pad`` is an int or (top, bottom, left, right)."""

    def __call__(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        P.check_rank("Conv2D", x, self._n + 2)
        pads = self._pads(tuple(x.shape[2:]))
        if any(p for pair in pads for p in pair):
            x = F.pad(x, P.torch_pad(pads))
        conv = F.conv2d if self._n == 2 else F.conv3d
        return _cpu_half.conv(conv, x, weight, None, self.stride, 0, self.dilation, self.group)


class Conv3D(Conv2D):
    """3-d convolution of (N, C, D, H, W) ``x``; ``pad`` is an int or a 6-tuple (head, tail,
    top, bottom, left, right)."""

    _n = 3
    _layout = ("NCDHW",)

    def __init__(
        self,
        out_channel: int,
        kernel_size: Any,
        mode: int = 1,
        pad_mode: str = "valid",
        pad: Any = 0,
        stride: Any = 1,
        dilation: Any = 1,
        group: int = 1,
        data_format: str = "NCDHW",
    ) -> None:
        super().__init__(
            out_channel, kernel_size, mode, pad_mode, pad, stride, dilation, group, data_format
        )


class Conv2DBackpropInput(_ConvBase):
    """The gradient of ``Conv2D`` with respect to its input (a transposed convolution):
    ``Conv2DBackpropInput(out_channel, kernel_size, ...)(dout, weight, input_size)`` gives a
    tensor of shape ``input_size``; ``weight`` is the forward convolution's."""

    def __init__(
        self,
        out_channel: int,
        kernel_size: Any,
        pad_mode: str = "valid",
        pad: Any = 0,
        pad_list: Any = None,
        mode: int = 1,
        stride: Any = 1,
        dilation: Any = 1,
        group: int = 1,
        data_format: str = "NCHW",
    ) -> None:
        super().__init__(
            out_channel, kernel_size, mode, pad_mode, pad, stride, dilation, group, data_format
        )
        if pad_list is not None and any(pad_list):
            self.pad = P.explicit(type(self).__name__, "pad_list", pad_list, 2)
            self.pad_mode = "pad"
        self.pad_list = pad_list

    def __call__(self, dout: torch.Tensor, weight: torch.Tensor, input_size: Any) -> torch.Tensor:
        P.check_rank(type(self).__name__, dout, 4, "dout")
        size = tuple(int(s) for s in input_size)
        pads = self._pads(size[2:])
        # the padded forward input, then cut the padding away
        padded = [size[2 + i] + sum(pads[i]) for i in range(2)]
        natural = [
            (dout.shape[2 + i] - 1) * self.stride[i]
            + self.dilation[i] * (self.kernel_size[i] - 1)
            + 1
            for i in range(2)
        ]
        extra = [padded[i] - natural[i] for i in range(2)]
        out = _cpu_half.conv(
            F.conv_transpose2d, dout, weight, None, self.stride, 0, extra, self.group, self.dilation
        )
        (top, _), (left, _) = pads
        return out[:, :, top : top + size[2], left : left + size[3]]


class Conv2DTranspose(Conv2DBackpropInput):
    """MindSpore's alias of ``Conv2DBackpropInput``."""


class BiasAdd(Primitive):
    """``x + bias`` with ``bias`` (C,) along the channel axis (axis 1, or the last one for
    "NHWC")."""

    def __init__(self, data_format: str = "NCHW") -> None:
        if data_format not in ("NCHW", "NHWC", "NCDHW"):
            raise ValueError(
                "BiasAdd: data_format must be 'NCHW', 'NHWC' or 'NCDHW'. "
                f"Received data_format={data_format!r}"
            )
        self.data_format = data_format

    def __call__(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        if bias.dim() != 1:
            raise ValueError(f"BiasAdd: bias must be 1-d. Received shape {tuple(bias.shape)}")
        if self.data_format == "NHWC" or x.dim() < 2:
            return x + bias
        return x + bias.reshape(-1, *([1] * (x.dim() - 2)))


def _pairs(owner: str, paddings: Any, rank: int) -> list[tuple[int, int]]:
    if isinstance(paddings, torch.Tensor):
        paddings = paddings.tolist()  # host sync: the pads set the output shape
    pairs = [tuple(p) for p in paddings] if isinstance(paddings, (tuple, list)) else None
    if (
        pairs is None
        or len(pairs) != rank
        or not all(len(p) == 2 and all(isinstance(v, int) and v >= 0 for v in p) for p in pairs)
    ):
        raise ValueError(
            f"{owner}: paddings must be {rank} pairs (before, after) of ints >= 0, one per "
            f"dimension. Received paddings={paddings!r}"
        )
    return pairs


class Pad(Primitive):
    """Zero padding: ``Pad(((before, after), ...))(x)``, one pair per dimension."""

    def __init__(self, paddings: Any) -> None:
        if not isinstance(paddings, (tuple, list)):
            raise TypeError(f"Pad: paddings must be a tuple. Received paddings={paddings!r}")
        self.paddings = tuple(tuple(p) for p in paddings)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        pairs = _pairs("Pad", self.paddings, x.dim())
        return F.pad(x, [v for pair in reversed(pairs) for v in pair])


def mirror_pad(x: torch.Tensor, pairs: list[tuple[int, int]], mode: str) -> torch.Tensor:
    """``x`` padded by mirroring, on any dimension: "REFLECT" leaves the edge out, "SYMMETRIC"
    repeats it."""
    for dim, (before, after) in enumerate(pairs):
        if not before and not after:
            continue
        n = x.shape[dim]
        limit = n - 1 if mode == "REFLECT" else n
        if before > limit or after > limit:
            raise ValueError(
                f"MirrorPad: the pads of dimension {dim} must be <= {limit} in {mode} mode "
                f"(size {n}). Received ({before}, {after})"
            )
        pos = torch.arange(-before, n + after, device=x.device)
        if mode == "REFLECT":
            pos = torch.where(pos < 0, -pos, torch.where(pos >= n, 2 * (n - 1) - pos, pos))
        else:
            pos = torch.where(pos < 0, -pos - 1, torch.where(pos >= n, 2 * n - 1 - pos, pos))
        x = x.index_select(dim, pos)
    return x


class MirrorPad(Primitive):
    """Mirror padding: ``MirrorPad(mode="REFLECT" | "SYMMETRIC")(x, paddings)``, ``paddings``
    an int (rank, 2) tensor of (before, after) pairs."""

    def __init__(self, mode: str = "REFLECT") -> None:
        if mode not in ("REFLECT", "SYMMETRIC"):
            raise ValueError(
                f"MirrorPad: mode must be 'REFLECT' or 'SYMMETRIC'. Received mode={mode!r}"
            )
        self.mode = mode

    def __call__(self, x: torch.Tensor, paddings: Any) -> torch.Tensor:
        return mirror_pad(x, _pairs("MirrorPad", paddings, x.dim()), self.mode)


__all__ = [
    "BiasAdd",
    "Conv2D",
    "Conv2DBackpropInput",
    "Conv2DTranspose",
    "Conv3D",
    "MirrorPad",
    "Pad",
]
