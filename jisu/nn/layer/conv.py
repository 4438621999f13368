"""MindSpore's convolutions (``Conv1d``, ``Conv2d``, ``Conv2dTranspose``) as subclasses of
torch's, with MindSpore's ``pad_mode`` ("same" by default, padding asymmetrically like
MindSpore/TensorFlow when the total is odd), ``padding`` and initializer defaults
(weight ``HeUniform(sqrt(5))``, bias ``Uniform(1/sqrt(fan_in))``, no bias by default)."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ...common.initializer import HeUniform, Uniform, _fan_in_and_fan_out
from ...ops import _cpu_half
from .. import _checks
from ..cell import Cell
from ._padding import check_nchw, check_pad_mode, explicit_pads, n_tuple, same_pad, torch_pad_arg
from .basic import init_parameter

__all__ = ["Conv1d", "Conv2d", "Conv2dTranspose"]


def _check_common(
    owner: str, in_channels: int, out_channels: int, group: int, has_bias: bool, pad_mode: Any
) -> str:
    _checks.positive_int(owner, "in_channels", in_channels)
    _checks.positive_int(owner, "out_channels", out_channels)
    _checks.positive_int(owner, "group", group)
    _checks.a_bool(owner, "has_bias", has_bias)
    if in_channels % group or out_channels % group:
        raise ValueError(
            f"{owner}: in_channels and out_channels must be divisible by group. Received "
            f"in_channels={in_channels}, out_channels={out_channels}, group={group}"
        )
    return check_pad_mode(owner, pad_mode)


class _MindSporeConv(Cell):
    """What the convolutions share: MindSpore's arguments on top of a torch ``_ConvNd``."""

    def _setup(
        self, pad_mode: str, padding: Any, weight_init: Any, bias_init: Any, has_bias: bool
    ) -> None:
        owner = type(self).__name__
        n = len(self.kernel_size)
        self._auto_prefix = True
        self.pad_mode, self.group, self.has_bias = pad_mode, self.groups, has_bias
        if pad_mode != "pad" and padding != 0:
            raise ValueError(
                f"{owner}: padding must be 0 unless pad_mode='pad'. "
                f"Received pad_mode={pad_mode!r}, padding={padding!r}"
            )
        self._pads = explicit_pads(owner, padding, n)
        self.ms_padding = padding
        init_parameter(self.weight, weight_init, owner, "weight_init", HeUniform(math.sqrt(5)))
        if has_bias:
            fan_in, _ = _fan_in_and_fan_out(tuple(self.weight.shape))
            default = Uniform(1 / math.sqrt(fan_in)) if fan_in else "zeros"
            init_parameter(self.bias, bias_init, owner, "bias_init", default)

    def _input_pads(self, x: torch.Tensor) -> tuple[tuple[int, int], ...]:
        """(before, after) padding per spatial dim for this input."""
        if self.pad_mode == "valid":
            return ((0, 0),) * len(self.kernel_size)
        if self.pad_mode == "pad":
            return self._pads
        sizes = x.shape[-len(self.kernel_size) :]
        return tuple(
            same_pad(size, k, s, d)
            for size, k, s, d in zip(sizes, self.kernel_size, self.stride, self.dilation)
        )

    def _conv(self, x: torch.Tensor, conv: Any) -> torch.Tensor:
        pads = self._input_pads(x)
        if all(a == b for a, b in pads):  # symmetric: let the kernel pad
            padding = tuple(a for a, _ in pads)
        else:
            x = F.pad(x, torch_pad_arg(pads))
            padding = 0
        return _cpu_half.conv(
            conv, x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups
        )

    def extra_repr(self) -> str:
        return (
            f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
            f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}, "
            f"padding={self.ms_padding}, dilation={self.dilation}, group={self.group}, "
            f"has_bias={self.has_bias}"
        )


class Conv2d(_MindSporeConv, nn.Conv2d):
    """2-d convolution over (N, C, H, W) with MindSpore's arguments.

    Args:
        in_channels, out_channels: channel counts (both divisible by ``group``).
        kernel_size, stride, dilation: an int or (h, w). Defaults stride=1, dilation=1.
        pad_mode: "same" (default; output ceil(in/stride), an odd total padding puts the extra
            row/column at the bottom/right), "valid" (none) or "pad" (``padding``).
        padding: for "pad": an int or (top, bottom, left, right). Default 0.
        group: groups. Default 1.
        has_bias: default False (MindSpore's).
        weight_init, bias_init: MindSpore initializers; defaults HeUniform(sqrt(5)) and
            Uniform(1/sqrt(fan_in)).
        data_format: "NCHW" only.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int] = 1,
        pad_mode: str = "same",
        padding: int | tuple[int, ...] = 0,
        dilation: int | tuple[int, int] = 1,
        group: int = 1,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
        data_format: str = "NCHW",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        pad_mode = _check_common("Conv2d", in_channels, out_channels, group, has_bias, pad_mode)
        check_nchw("Conv2d", data_format)
        nn.Conv2d.__init__(
            self,
            in_channels,
            out_channels,
            n_tuple("Conv2d", "kernel_size", kernel_size, 2),
            stride=n_tuple("Conv2d", "stride", stride, 2),
            dilation=n_tuple("Conv2d", "dilation", dilation, 2),
            groups=group,
            bias=has_bias,
            dtype=dtype,
        )
        self.data_format = data_format
        self._setup(pad_mode, padding, weight_init, bias_init, has_bias)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return self._conv(x, F.conv2d)


class Conv1d(_MindSporeConv, nn.Conv1d):
    """1-d convolution over (N, C, L); arguments as :class:`Conv2d` with ints (``padding``:
    both ends). The weight is torch's (out, in/group, k) (MindSpore stores (out, in/group,
    1, k))."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        pad_mode: str = "same",
        padding: int = 0,
        dilation: int = 1,
        group: int = 1,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        pad_mode = _check_common("Conv1d", in_channels, out_channels, group, has_bias, pad_mode)
        for name, value in (
            ("kernel_size", kernel_size),
            ("stride", stride),
            ("dilation", dilation),
        ):
            _checks.positive_int("Conv1d", name, value)
        if isinstance(padding, bool) or not isinstance(padding, int):
            raise TypeError(f"Conv1d: padding must be an int. Received padding={padding!r}")
        nn.Conv1d.__init__(
            self,
            in_channels,
            out_channels,
            kernel_size,
            stride=stride,
            dilation=dilation,
            groups=group,
            bias=has_bias,
            dtype=dtype,
        )
        self._setup(pad_mode, padding, weight_init, bias_init, has_bias)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return self._conv(x, F.conv1d)


def _deconv_length(mode: str, size: int, kernel: int, stride: int, dilation: int, pad: int) -> int:
    """MindSpore's output length of a transposed convolution."""
    k = dilation * (kernel - 1) + 1
    if mode == "valid":
        return size * stride + max(k - stride, 0)
    if mode == "same":
        return size * stride
    return size * stride - pad + k - stride


class Conv2dTranspose(_MindSporeConv, nn.ConvTranspose2d):
    """2-d transposed convolution with MindSpore's arguments (see :class:`Conv2d`); the
    weight is (in, out/group, kh, kw). Output size: "same" in·stride; "valid"
    in·stride + max(k_eff − stride, 0); "pad" (in−1)·stride + k_eff − (top+bottom).
    ``output_padding`` (pad_mode "pad" only) appends zero rows/columns at the bottom/right
    after the bias, as MindSpore does."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int] = 1,
        pad_mode: str = "same",
        padding: int | tuple[int, ...] = 0,
        output_padding: int | tuple[int, int] = 0,
        dilation: int | tuple[int, int] = 1,
        group: int = 1,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        owner = "Conv2dTranspose"
        pad_mode = _check_common(owner, in_channels, out_channels, group, has_bias, pad_mode)
        nn.ConvTranspose2d.__init__(
            self,
            in_channels,
            out_channels,
            n_tuple(owner, "kernel_size", kernel_size, 2),
            stride=n_tuple(owner, "stride", stride, 2),
            dilation=n_tuple(owner, "dilation", dilation, 2),
            groups=group,
            bias=has_bias,
            dtype=dtype,
        )
        extra = n_tuple(owner, "output_padding", output_padding, 2, low=0)
        for e, s, d in zip(extra, self.stride, self.dilation):
            if e >= max(s, d):
                raise ValueError(
                    f"{owner}: output_padding must be < max(stride, dilation). "
                    f"Received output_padding={output_padding!r}"
                )
        if any(extra) and pad_mode != "pad":
            raise ValueError(
                f"{owner}: output_padding must be 0 unless pad_mode='pad'. "
                f"Received pad_mode={pad_mode!r}, output_padding={output_padding!r}"
            )
        self.extra_output = extra
        self._setup(pad_mode, padding, weight_init, bias_init, has_bias)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        full = _cpu_half.conv(
            F.conv_transpose2d, x, self.weight, None, self.stride, 0, 0, self.groups, self.dilation
        )
        # the forward conv's padding, cropped from the full result; a short result is
        # extended with zeros (outputs no window reaches), as MindSpore's does
        sizes = x.shape[-2:]
        crops = []
        for i, size in enumerate(sizes):
            k, s, d = self.kernel_size[i], self.stride[i], self.dilation[i]
            pad = self._pads[i]
            length = _deconv_length(self.pad_mode, size, k, s, d, pad[0] + pad[1])
            before = pad[0] if self.pad_mode == "pad" else 0
            if self.pad_mode == "same":
                before = max(d * (k - 1) + 1 - s, 0) // 2
            crops.append((before, length))
        out = full
        for axis, (before, length) in zip((-2, -1), crops):
            out = out.narrow(axis, before, min(length, out.shape[axis] - before))
            short = length - out.shape[axis]
            if short > 0:
                pad = [0, short] if axis == -1 else [0, 0, 0, short]
                out = F.pad(out, pad)
        if self.bias is not None:
            out = out + self.bias.view(1, -1, 1, 1)
        if any(self.extra_output):
            out = F.pad(out, [0, self.extra_output[1], 0, self.extra_output[0]])
        return out
