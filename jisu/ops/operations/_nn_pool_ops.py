"""MindSpore's pooling primitives (``MaxPool``, ``AvgPool``, ``MaxPoolWithArgmax``,
``MaxPool3D``, ``AvgPool3D``, ``AdaptiveAvgPool2D``) on torch, channels-first.

``pad_mode="same"`` pads as TensorFlow (output ``ceil(in / stride)``, odd element after); max
pooling pads with -inf and average pooling leaves the padded cells out of the count, as
MindSpore does."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ..primitive import Primitive
from . import _nn_padding as P


def _avg_excluding(x: torch.Tensor, pads: list[int], kernel: Any, stride: Any) -> torch.Tensor:
    """Average pooling over ``x`` padded by ``pads`` with the padded cells not counted."""
    pool = F.avg_pool2d if x.dim() == 4 else F.avg_pool3d
    total = pool(F.pad(x, pads), kernel, stride)
    if not any(pads):
        return total
    ones = torch.ones((1, 1, *x.shape[2:]), dtype=x.dtype, device=x.device)
    return total / pool(F.pad(ones, pads), kernel, stride)


class _Pool2D(Primitive):
    def __init__(
        self,
        kernel_size: Any = 1,
        strides: Any = 1,
        pad_mode: str = "valid",
        data_format: str = "NCHW",
    ) -> None:
        owner = type(self).__name__
        self.kernel_size = P.sizes(owner, "kernel_size", kernel_size, 2)
        self.strides = P.sizes(owner, "strides", strides, 2)
        self.pad_mode = P.pad_mode_arg(owner, pad_mode)
        if self.pad_mode == "pad":
            raise ValueError(
                f"{owner}: pad_mode must be 'same' or 'valid'. Received pad_mode={pad_mode!r}"
            )
        self.data_format = P.nchw(owner, data_format)

    def _pads(self, x: torch.Tensor) -> list[int]:
        P.check_rank(type(self).__name__, x, 4)
        spatial = tuple(x.shape[2:])
        return P.torch_pad(P.pads_for(self.pad_mode, spatial, self.kernel_size, self.strides))


class MaxPool(_Pool2D):
    """2-d max pooling: ``MaxPool(kernel_size=1, strides=1, pad_mode="valid")(x)``."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        pads = self._pads(x)
        if any(pads):
            x = F.pad(x, pads, value=float("-inf"))
        return F.max_pool2d(x, self.kernel_size, self.strides)


class AvgPool(_Pool2D):
    """2-d average pooling: ``AvgPool(kernel_size=1, strides=1, pad_mode="valid")(x)``."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return _avg_excluding(x, self._pads(x), self.kernel_size, self.strides)


class MaxPoolWithArgmax(_Pool2D):
    """2-d max pooling that also returns where each maximum came from: ``(output, argmax)``,
    argmax int32, the index in the flattened (C, H, W) block of its sample in the unpadded
    input (MindSpore's layout)."""

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pads = self._pads(x)
        channels, height, width = x.shape[1:]
        if any(pads):
            x = F.pad(x, pads, value=float("-inf"))
        out, idx = F.max_pool2d(x, self.kernel_size, self.strides, return_indices=True)
        if any(pads):  # indices of the padded plane -> of the input's
            left, _, top, _ = pads
            row, col = idx // x.shape[3] - top, idx % x.shape[3] - left
            idx = row * width + col
        plane = torch.arange(channels, device=idx.device).reshape(1, -1, 1, 1) * height * width
        return out, (idx + plane).to(torch.int32)


def _torch_padding(
    mode: str, pads: tuple[tuple[int, int], ...], kernel: tuple[int, ...]
) -> tuple[int, ...] | None:
    """``pads`` as torch's symmetric pool ``padding`` (which also keeps torch's ceil_mode rule,
    MindSpore's: no window may start in the right padding), or None where torch cannot take
    them (asymmetric, or over half a kernel)."""
    if mode != "pad" or any(a != b or 2 * a > k for (a, b), k in zip(pads, kernel)):
        return None
    return tuple(a for a, _ in pads)


class MaxPool3D(Primitive):
    """3-d max pooling: ``MaxPool3D(kernel_size=1, strides=1, pad_mode="VALID", pad_list=0,
    ceil_mode=None)(x)``; ``pad_list`` (int or 6-tuple) with pad_mode "PAD"."""

    def __init__(
        self,
        kernel_size: Any = 1,
        strides: Any = 1,
        pad_mode: str = "VALID",
        pad_list: Any = 0,
        ceil_mode: bool | None = None,
        data_format: str = "NCDHW",
    ) -> None:
        owner = type(self).__name__
        self.kernel_size = P.sizes(owner, "kernel_size", kernel_size, 3)
        self.strides = P.sizes(owner, "strides", strides, 3)
        self.pad_mode = P.pad_mode_arg(owner, pad_mode)
        self.pad_list = P.explicit(owner, "pad_list", pad_list, 3)
        self.ceil_mode = bool(ceil_mode)
        self.data_format = P.nchw(owner, data_format, ("NCDHW",))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        P.check_rank("MaxPool3D", x, 5)
        pads = P.pads_for(
            self.pad_mode, tuple(x.shape[2:]), self.kernel_size, self.strides, None, self.pad_list
        )
        padding = _torch_padding(self.pad_mode, pads, self.kernel_size)
        if padding is not None:
            return F.max_pool3d(
                x, self.kernel_size, self.strides, padding, ceil_mode=self.ceil_mode
            )
        if any(p for pair in pads for p in pair):
            x = F.pad(x, P.torch_pad(pads), value=float("-inf"))
        return F.max_pool3d(x, self.kernel_size, self.strides, ceil_mode=self.ceil_mode)


class AvgPool3D(Primitive):
    """3-d average pooling: ``AvgPool3D(kernel_size=1, strides=1, pad_mode="valid", pad=0,
    ceil_mode=False, count_include_pad=True, divisor_override=0)(x)``; padded cells ("same"
    or "pad") count in the average unless ``count_include_pad=False``, as in MindSpore."""

    def __init__(
        self,
        kernel_size: Any = 1,
        strides: Any = 1,
        pad_mode: str = "valid",
        pad: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int = 0,
        data_format: str = "NCDHW",
    ) -> None:
        owner = type(self).__name__
        self.kernel_size = P.sizes(owner, "kernel_size", kernel_size, 3)
        self.strides = P.sizes(owner, "strides", strides, 3)
        self.pad_mode = P.pad_mode_arg(owner, pad_mode)
        self.pad = P.explicit(owner, "pad", pad, 3)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        if (
            isinstance(divisor_override, bool)
            or not isinstance(divisor_override, int)
            or (divisor_override < 0)
        ):
            raise ValueError(
                "AvgPool3D: divisor_override must be an int >= 0. "
                f"Received divisor_override={divisor_override!r}"
            )
        self.divisor_override = divisor_override
        self.data_format = P.nchw(owner, data_format, ("NCDHW",))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        P.check_rank("AvgPool3D", x, 5)
        pads = P.pads_for(
            self.pad_mode, tuple(x.shape[2:]), self.kernel_size, self.strides, None, self.pad
        )
        padding = _torch_padding(self.pad_mode, pads, self.kernel_size)
        if padding is not None:
            return F.avg_pool3d(
                x,
                self.kernel_size,
                self.strides,
                padding,
                self.ceil_mode,
                self.count_include_pad,
                self.divisor_override or None,
            )
        flat = P.torch_pad(pads)
        if not self.count_include_pad and any(flat):
            return _avg_excluding(x, flat, self.kernel_size, self.strides)
        if any(flat):
            x = F.pad(x, flat)
        return F.avg_pool3d(
            x,
            self.kernel_size,
            self.strides,
            ceil_mode=self.ceil_mode,
            divisor_override=self.divisor_override or None,
        )


class AdaptiveAvgPool2D(Primitive):
    """Average pooling to ``output_size`` (an int, or (h, w) where None keeps that size)."""

    def __init__(self, output_size: Any) -> None:
        if isinstance(output_size, bool) or not isinstance(output_size, (int, tuple, list)):
            raise TypeError(
                "AdaptiveAvgPool2D: output_size must be an int or a tuple. "
                f"Received output_size={output_size!r}"
            )
        self.output_size = tuple(output_size) if isinstance(output_size, list) else output_size

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size)


__all__ = [
    "AdaptiveAvgPool2D",
    "AvgPool",
    "AvgPool3D",
    "MaxPool",
    "MaxPool3D",
    "MaxPoolWithArgmax",
]
