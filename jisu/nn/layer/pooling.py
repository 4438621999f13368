"""MindSpore's ``MaxPool2d``, ``AvgPool2d`` and ``AdaptiveAvgPool2d`` as subclasses of
torch's, with MindSpore's defaults (kernel 1, stride 1, pad_mode "valid").

pad_mode "same" pads like the convolutions (output ceil(in/stride), the odd element at the
bottom/right); the padded cells never win a max and are not counted in an average.
pad_mode "pad" pads ``padding`` on both sides of each dim, with torch's (and MindSpore's)
``ceil_mode``, ``count_include_pad``, ``divisor_override``, ``dilation``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..cell import Cell
from ._padding import check_nchw, check_pad_mode, n_tuple, same_pad, torch_pad_arg

__all__ = ["AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d"]


def _pool_padding(owner: str, padding: Any) -> tuple[int, int]:
    if isinstance(padding, (tuple, list)) and len(padding) == 1:
        padding = padding[0]
    return n_tuple(owner, "padding", padding, 2, low=0)


def _check_pool_args(
    owner: str, pad_mode: Any, data_format: Any, kernel_size: Any, stride: Any
) -> tuple[str, tuple[int, int], tuple[int, int]]:
    check_nchw(owner, data_format)
    pad_mode = check_pad_mode(owner, pad_mode)
    return (
        pad_mode,
        n_tuple(owner, "kernel_size", kernel_size, 2),
        n_tuple(owner, "stride", stride, 2),
    )


def _same_pads(x: torch.Tensor, kernel: tuple[int, int], stride: tuple[int, int]) -> list[int]:
    pads = tuple(same_pad(size, k, s) for size, k, s in zip(x.shape[-2:], kernel, stride))
    return torch_pad_arg(pads)


class MaxPool2d(Cell, nn.MaxPool2d):
    """2-d max pooling over (N, C, H, W) or (C, H, W).

    Args:
        kernel_size, stride: an int or (h, w). Defaults 1, 1.
        pad_mode: "valid" (default), "same" or "pad".
        padding, dilation, return_indices, ceil_mode: for "pad" only (else must be default).
        data_format: "NCHW" only.
    """

    def __init__(
        self,
        kernel_size: int | tuple[int, int] = 1,
        stride: int | tuple[int, int] = 1,
        pad_mode: str = "valid",
        padding: int | tuple[int, int] = 0,
        dilation: int | tuple[int, int] = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
        data_format: str = "NCHW",
    ) -> None:
        pad_mode, kernel, stride_ = _check_pool_args(
            "MaxPool2d", pad_mode, data_format, kernel_size, stride
        )
        if pad_mode != "pad" and (padding != 0 or dilation != 1 or return_indices or ceil_mode):
            raise ValueError(
                "MaxPool2d: padding, dilation, return_indices and ceil_mode must keep their "
                f"defaults unless pad_mode='pad'. Received pad_mode={pad_mode!r}"
            )
        nn.MaxPool2d.__init__(
            self,
            kernel,
            stride_,
            _pool_padding("MaxPool2d", padding),
            n_tuple("MaxPool2d", "dilation", dilation, 2),
            return_indices,
            ceil_mode,
        )
        self._auto_prefix = True
        self.pad_mode, self.data_format = pad_mode, data_format

    def construct(self, x: torch.Tensor) -> Any:
        if self.pad_mode == "same":
            x = F.pad(x, _same_pads(x, self.kernel_size, self.stride), value=float("-inf"))
        return F.max_pool2d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class AvgPool2d(Cell, nn.AvgPool2d):
    """2-d average pooling over (N, C, H, W) or (C, H, W).

    Args:
        kernel_size, stride: an int or (h, w). Defaults 1, 1.
        pad_mode: "valid" (default), "same" (padded cells not counted) or "pad".
        padding, ceil_mode, count_include_pad, divisor_override: as torch's (MindSpore's
            pad_mode "pad" path). Defaults 0, False, True, None.
        data_format: "NCHW" only.
    """

    def __init__(
        self,
        kernel_size: int | tuple[int, int] = 1,
        stride: int | tuple[int, int] = 1,
        pad_mode: str = "valid",
        padding: int | tuple[int, int] = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
        data_format: str = "NCHW",
    ) -> None:
        pad_mode, kernel, stride_ = _check_pool_args(
            "AvgPool2d", pad_mode, data_format, kernel_size, stride
        )
        if divisor_override is not None and divisor_override <= 0:
            raise ValueError(
                "AvgPool2d: divisor_override must be > 0. "
                f"Received divisor_override={divisor_override}"
            )
        if pad_mode == "same" and padding != 0:
            raise ValueError(
                f"AvgPool2d: padding must be 0 when pad_mode='same'. Received padding={padding!r}"
            )
        nn.AvgPool2d.__init__(
            self,
            kernel,
            stride_,
            _pool_padding("AvgPool2d", padding),
            ceil_mode,
            count_include_pad,
            divisor_override,
        )
        self._auto_prefix = True
        self.pad_mode, self.data_format = pad_mode, data_format

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        if self.pad_mode != "same":
            return F.avg_pool2d(
                x,
                self.kernel_size,
                self.stride,
                self.padding,
                self.ceil_mode,
                self.count_include_pad,
                self.divisor_override,
            )
        pads = _same_pads(x, self.kernel_size, self.stride)
        total = F.avg_pool2d(F.pad(x, pads), self.kernel_size, self.stride)
        if not any(pads):
            return total
        # the share of each window that lies inside the input: divide it out
        ones = torch.ones((1, 1, *x.shape[-2:]), dtype=x.dtype, device=x.device)
        inside = F.avg_pool2d(F.pad(ones, pads), self.kernel_size, self.stride)
        return total / (inside if x.dim() == 4 else inside[0])


class AdaptiveAvgPool2d(Cell, nn.AdaptiveAvgPool2d):
    """Average pooling to ``output_size`` (an int, or (h, w) where None keeps that size)."""

    def __init__(self, output_size: int | tuple[int | None, int | None]) -> None:
        if isinstance(output_size, bool) or not isinstance(output_size, (int, tuple)):
            raise TypeError(
                "AdaptiveAvgPool2d: output_size must be an int or a tuple. "
                f"Received output_size={output_size!r}"
            )
        nn.AdaptiveAvgPool2d.__init__(self, output_size)
        self._auto_prefix = True

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size)


def _int_arg(owner: str, name: str, value: Any, low: int = 1) -> int:
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: {name} must be an int. Received {name}={value!r}")
    if value < low:
        raise ValueError(f"{owner}: {name} must be >= {low}. Received {name}={value}")
    return value


class MaxPool1d(Cell, nn.MaxPool1d):
    """1-d max pooling over (N, C, L) or (C, L); arguments as :class:`MaxPool2d`'s, ints."""

    def __init__(
        self,
        kernel_size: int = 1,
        stride: int = 1,
        pad_mode: str = "valid",
        padding: int = 0,
        dilation: int = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        owner = "MaxPool1d"
        pad_mode = check_pad_mode(owner, pad_mode)
        kernel, step = (
            _int_arg(owner, "kernel_size", kernel_size),
            _int_arg(owner, "stride", stride),
        )
        if pad_mode != "pad" and (padding != 0 or dilation != 1 or return_indices or ceil_mode):
            raise ValueError(
                f"{owner}: padding, dilation, return_indices and ceil_mode must keep their "
                f"defaults unless pad_mode='pad'. Received pad_mode={pad_mode!r}"
            )
        nn.MaxPool1d.__init__(
            self,
            kernel,
            step,
            _int_arg(owner, "padding", padding, low=0),
            _int_arg(owner, "dilation", dilation),
            return_indices,
            ceil_mode,
        )
        self._auto_prefix = True
        self.pad_mode = pad_mode

    def construct(self, x: torch.Tensor) -> Any:
        if self.pad_mode == "same":
            x = F.pad(
                x, list(same_pad(x.shape[-1], self.kernel_size, self.stride)), value=-math.inf
            )
        return F.max_pool1d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class AvgPool1d(Cell, nn.AvgPool1d):
    """1-d average pooling over (N, C, L) or (C, L); arguments as :class:`AvgPool2d`'s, ints
    ("same": padded cells not counted)."""

    def __init__(
        self,
        kernel_size: int = 1,
        stride: int = 1,
        pad_mode: str = "valid",
        padding: int = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        owner = "AvgPool1d"
        pad_mode = check_pad_mode(owner, pad_mode)
        kernel, step = (
            _int_arg(owner, "kernel_size", kernel_size),
            _int_arg(owner, "stride", stride),
        )
        if pad_mode == "same" and padding != 0:
            raise ValueError(
                f"{owner}: padding must be 0 when pad_mode='same'. Received padding={padding!r}"
            )
        nn.AvgPool1d.__init__(
            self, kernel, step, _int_arg(owner, "padding", padding, low=0), ceil_mode,
            count_include_pad,
        )  # fmt: skip
        self._auto_prefix = True
        self.pad_mode = pad_mode

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        if self.pad_mode != "same":
            return F.avg_pool1d(
                x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                self.count_include_pad,
            )  # fmt: skip
        pads = list(same_pad(x.shape[-1], self.kernel_size[0], self.stride[0]))
        total = F.avg_pool1d(F.pad(x, pads), self.kernel_size, self.stride)
        if not any(pads):
            return total
        ones = torch.ones((1, x.shape[-1]), dtype=x.dtype, device=x.device)
        return total / F.avg_pool1d(F.pad(ones, pads), self.kernel_size, self.stride)
