"""MindSpore's ``Conv2dBnAct`` and ``DenseBnAct``: a convolution (dense layer), an optional
batch norm and an optional activation, in MindSpore's layout (children ``conv``/``dense``,
``batchnorm``, ``activation``, so checkpoints keep MindSpore's names)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .. import _checks
from ..cell import Cell
from .activation import LeakyReLU
from .basic import Dense, resolve_activation
from .conv import Conv2d
from .normalization import BatchNorm1d, BatchNorm2d

__all__ = ["Conv2dBnAct", "DenseBnAct"]


def _activation(owner: str, activation: Any, alpha: float) -> nn.Module | None:
    if activation == "leakyrelu":
        return LeakyReLU(alpha)
    return resolve_activation(owner, activation)


class Conv2dBnAct(Cell):
    """``activation(batchnorm(conv(x)))``: :class:`~jisu.nn.Conv2d`'s arguments, then

    Args:
        weight_init, bias_init: MindSpore's defaults here are "normal" (N(0, 0.01²)) and
            "zeros" (not Conv2d's own).
        has_bn: add a ``BatchNorm2d(out_channels, eps, momentum)``. Default False.
        momentum, eps: the batch norm's (MindSpore's momentum). Defaults 0.997, 1e-5.
        activation: None, a name ("relu", "leakyrelu" with ``alpha`` ...) or a cell.
        alpha: the slope of "leakyrelu". Default 0.2.
        after_fake: a quantization flag, accepted and unused.
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
        weight_init: Any = "normal",
        bias_init: Any = "zeros",
        has_bn: bool = False,
        momentum: float = 0.997,
        eps: float = 1e-5,
        activation: Any = None,
        alpha: float = 0.2,
        after_fake: bool = True,
    ) -> None:
        super().__init__()
        self.conv = Conv2d(
            in_channels, out_channels, kernel_size, stride, pad_mode, padding, dilation, group,
            has_bias, weight_init, bias_init,
        )  # fmt: skip
        self.has_bn = _checks.a_bool("Conv2dBnAct", "has_bn", has_bn)
        self.after_fake = _checks.a_bool("Conv2dBnAct", "after_fake", after_fake)
        if has_bn:
            self.batchnorm = BatchNorm2d(out_channels, eps, momentum)
        self.activation = _activation("Conv2dBnAct", activation, alpha)
        self.has_act = self.activation is not None

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        if self.has_bn:
            x = self.batchnorm(x)
        return self.activation(x) if self.has_act else x


class DenseBnAct(Cell):
    """``activation(batchnorm(dense(x)))``: :class:`~jisu.nn.Dense`'s arguments (defaults
    ``weight_init="normal"``, ``bias_init="zeros"``), then an optional ``BatchNorm1d(
    out_channels, eps, momentum)`` (``has_bn``; momentum default 0.9) and activation (as
    :class:`Conv2dBnAct`'s)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        weight_init: Any = "normal",
        bias_init: Any = "zeros",
        has_bias: bool = True,
        has_bn: bool = False,
        momentum: float = 0.9,
        eps: float = 1e-5,
        activation: Any = None,
        alpha: float = 0.2,
        after_fake: bool = True,
    ) -> None:
        super().__init__()
        self.dense = Dense(in_channels, out_channels, weight_init, bias_init, has_bias)
        self.has_bn = _checks.a_bool("DenseBnAct", "has_bn", has_bn)
        self.after_fake = _checks.a_bool("DenseBnAct", "after_fake", after_fake)
        if has_bn:
            self.batchnorm = BatchNorm1d(out_channels, eps, momentum)
        self.activation = _activation("DenseBnAct", activation, alpha)
        self.has_act = self.activation is not None

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        x = self.dense(x)
        if self.has_bn:
            x = self.batchnorm(x)
        return self.activation(x) if self.has_act else x
