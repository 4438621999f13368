"""MindSpore's ``Conv3d``, ``Conv3dTranspose`` and ``Conv1dTranspose`` as subclasses of
torch's, with the padding rules and initializer defaults of :mod:`jisu.nn.layer.conv`
(pad_mode "same" by default, weight ``HeUniform(sqrt(5))``, no bias by default).

Input layouts are channels-first: (N, C, D, H, W) and (N, C, L). ``Conv1dTranspose``'s weight
is torch's (in, out/group, k) (MindSpore stores (in, out/group, 1, k)).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks
from ._padding import check_nchw, n_tuple
from .conv import _check_common, _deconv_length, _MindSporeConv

__all__ = ["Conv1dTranspose", "Conv3d", "Conv3dTranspose"]


class Conv3d(_MindSporeConv, nn.Conv3d):
    """3-d convolution over (N, C, D, H, W) with MindSpore's arguments (see
    :class:`~jisu.nn.Conv2d`).

    Args:
        kernel_size, stride, dilation: an int or (d, h, w).
        pad_mode: "same" (default), "valid" or "pad".
        padding: for "pad": an int or (head, tail, top, bottom, left, right). Default 0.
        group, has_bias, weight_init, bias_init: as ``Conv2d``'s.
        data_format: "NCDHW" only.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int, int],
        stride: int | tuple[int, int, int] = 1,
        pad_mode: str = "same",
        padding: int | tuple[int, ...] = 0,
        dilation: int | tuple[int, int, int] = 1,
        group: int = 1,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
        data_format: str = "NCDHW",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        pad_mode = _check_common("Conv3d", in_channels, out_channels, group, has_bias, pad_mode)
        check_nchw("Conv3d", data_format)
        nn.Conv3d.__init__(
            self,
            in_channels,
            out_channels,
            n_tuple("Conv3d", "kernel_size", kernel_size, 3),
            stride=n_tuple("Conv3d", "stride", stride, 3),
            dilation=n_tuple("Conv3d", "dilation", dilation, 3),
            groups=group,
            bias=has_bias,
            dtype=dtype,
        )
        self.data_format = data_format
        self._setup(pad_mode, padding, weight_init, bias_init, has_bias)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return self._conv(x, F.conv3d)


class _MindSporeConvTranspose(_MindSporeConv):
    """MindSpore's output sizes of a transposed convolution, in any number of dims."""

    def _check_output_padding(self, output_padding: Any, pad_mode: str) -> None:
        owner = type(self).__name__
        n = len(self.kernel_size)
        extra = n_tuple(owner, "output_padding", output_padding, n, low=0)
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

    def _transposed(self, x: torch.Tensor, conv: Any) -> torch.Tensor:
        n = len(self.kernel_size)
        out = conv(x, self.weight, None, self.stride, 0, 0, self.groups, self.dilation)
        for i, size in enumerate(x.shape[-n:]):
            k, s, d = self.kernel_size[i], self.stride[i], self.dilation[i]
            pad = self._pads[i]
            length = _deconv_length(self.pad_mode, size, k, s, d, pad[0] + pad[1])
            length += self.extra_output[i]  # torch's output_padding: computed outputs
            before = pad[0] if self.pad_mode == "pad" else 0
            if self.pad_mode == "same":
                before = max(d * (k - 1) + 1 - s, 0) // 2
            axis = i - n
            out = out.narrow(axis, before, min(length, out.shape[axis] - before))
            short = length - out.shape[axis]
            if short > 0:  # outputs no window reaches: zeros, as MindSpore's
                out = F.pad(out, [0, 0] * (-axis - 1) + [0, short])
        if self.bias is not None:
            out = out + self.bias.view(1, -1, *([1] * n))
        return out


class Conv3dTranspose(_MindSporeConvTranspose, nn.ConvTranspose3d):
    """3-d transposed convolution with MindSpore's arguments (see
    :class:`~jisu.nn.Conv2dTranspose`); the weight is (in, out/group, kd, kh, kw).
    ``output_padding`` (pad_mode "pad" only) lengthens the output at the end as torch's does:
    computed outputs (unlike ``Conv2dTranspose``'s zeros, as in MindSpore)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int, int],
        stride: int | tuple[int, int, int] = 1,
        pad_mode: str = "same",
        padding: int | tuple[int, ...] = 0,
        dilation: int | tuple[int, int, int] = 1,
        group: int = 1,
        output_padding: int | tuple[int, int, int] = 0,
        has_bias: bool = False,
        weight_init: Any = None,
        bias_init: Any = None,
        data_format: str = "NCDHW",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        owner = "Conv3dTranspose"
        pad_mode = _check_common(owner, in_channels, out_channels, group, has_bias, pad_mode)
        check_nchw(owner, data_format)
        nn.ConvTranspose3d.__init__(
            self,
            in_channels,
            out_channels,
            n_tuple(owner, "kernel_size", kernel_size, 3),
            stride=n_tuple(owner, "stride", stride, 3),
            dilation=n_tuple(owner, "dilation", dilation, 3),
            groups=group,
            bias=has_bias,
            dtype=dtype,
        )
        self.data_format = data_format
        self._check_output_padding(output_padding, pad_mode)
        self._setup(pad_mode, padding, weight_init, bias_init, has_bias)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return self._transposed(x, F.conv_transpose3d)


class Conv1dTranspose(_MindSporeConvTranspose, nn.ConvTranspose1d):
    """1-d transposed convolution over (N, C, L) with MindSpore's arguments (ints; ``padding``
    pads both ends for pad_mode "pad")."""

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
        owner = "Conv1dTranspose"
        pad_mode = _check_common(owner, in_channels, out_channels, group, has_bias, pad_mode)
        for name, value in (
            ("kernel_size", kernel_size),
            ("stride", stride),
            ("dilation", dilation),
        ):
            _checks.positive_int(owner, name, value)
        if isinstance(padding, bool) or not isinstance(padding, int):
            raise TypeError(f"{owner}: padding must be an int. Received padding={padding!r}")
        nn.ConvTranspose1d.__init__(
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
        self._check_output_padding(0, pad_mode)
        self._setup(pad_mode, padding, weight_init, bias_init, has_bias)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return self._transposed(x, F.conv_transpose1d)
