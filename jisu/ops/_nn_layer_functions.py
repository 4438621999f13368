"""MindSpore's functional activations, losses, pooling and convolution (``ops.gelu``,
``ops.softplus``, ``ops.nll_loss``, ``ops.max_pool2d``, ``ops.conv2d``, ...) on torch, with
MindSpore 2's signatures; re-exported by :mod:`._nn_functions`."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from .operations._detection_ops import IOU
from .operations._loss_ops import KLDivLoss
from .operations._nn_conv_ops import BiasAdd, Conv2D


# ---------------------------------------------------------------------- activations
def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """GeLU, exact (``approximate="none"``) or its tanh form (``"tanh"``)."""
    return F.gelu(input, approximate=approximate)


def softplus(input: torch.Tensor, beta: float = 1, threshold: float = 20) -> torch.Tensor:
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold``."""
    return F.softplus(input, beta, threshold)


def elu(input_x: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """ELU; MindSpore computes ``alpha=1.0`` only and so does jisu."""
    if alpha != 1.0:
        raise ValueError(f"elu: alpha must be 1.0 (as in MindSpore). Received alpha={alpha!r}")
    return F.elu(input_x)


def leaky_relu(input: torch.Tensor, alpha: float = 0.2) -> torch.Tensor:
    """``x`` where positive, ``alpha * x`` elsewhere (MindSpore's default slope is 0.2)."""
    return F.leaky_relu(input, alpha)


def celu(x: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    return F.celu(x, alpha)


def hardtanh(
    input: torch.Tensor,
    min_val: float = -1.0,
    max_val: float = 1.0,
) -> torch.Tensor:
    return F.hardtanh(input, min_val, max_val)


def prelu(input: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return F.prelu(input, weight)


silu, relu6, hardswish, hardsigmoid = F.silu, F.relu6, F.hardswish, F.hardsigmoid
mish, softsign, logsigmoid, selu = F.mish, F.softsign, F.logsigmoid, F.selu


# ---------------------------------------------------------------------- losses
def binary_cross_entropy(
    logits: torch.Tensor,
    labels: torch.Tensor,
    weight: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """Binary cross entropy of probabilities ``logits`` against ``labels``."""
    return F.binary_cross_entropy(logits, labels, weight, reduction=reduction)


def binary_cross_entropy_with_logits(
    input: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    pos_weight: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """Binary cross entropy on logits, with per-element ``weight`` and per-class
    ``pos_weight``."""
    return F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=reduction, pos_weight=pos_weight
    )


def nll_loss(
    inputs: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Negative log likelihood of log-probabilities ``inputs`` (N, C, ...) at class indices
    ``target``; ``label_smoothing`` mixes in the (weighted) mean over the classes."""
    target = target.long()
    loss = F.nll_loss(inputs, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return loss
    classes = inputs.shape[1]
    w = inputs.new_ones(classes) if weight is None else weight
    shape = [1, classes] + [1] * (inputs.dim() - 2)
    smooth = -(inputs * w.reshape(shape)).sum(dim=1)
    kept = target != ignore_index
    smooth = smooth * kept.to(smooth.dtype)
    if reduction == "mean":
        safe = torch.where(kept, target, torch.zeros_like(target))
        smooth = smooth.sum() / (w[safe] * kept.to(w.dtype)).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * loss + label_smoothing / classes * smooth


def smooth_l1_loss(
    input: torch.Tensor,
    target: torch.Tensor,
    beta: float = 1.0,
    reduction: str = "none",
) -> torch.Tensor:
    return F.smooth_l1_loss(input, target, reduction=reduction, beta=beta)


def kl_div(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """``labels * (log(labels) - logits)`` reduced by "none", "mean", "batchmean" or "sum"."""
    return KLDivLoss(reduction)(logits, labels)


def l1_loss(
    input: torch.Tensor,
    target: torch.Tensor,
    reduction: str = "mean",
) -> torch.Tensor:
    return F.l1_loss(input, target, reduction=reduction)


def mse_loss(
    input: torch.Tensor,
    target: torch.Tensor,
    reduction: str = "mean",
) -> torch.Tensor:
    return F.mse_loss(input, target, reduction=reduction)


# ---------------------------------------------------------------------- pooling, convolution
def max_pool2d(
    x: torch.Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    return_indices: bool = False,
    ceil_mode: bool = False,
) -> Any:
    """Max pooling with torch's arguments; ``return_indices`` adds int64 indices."""
    return F.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool2d(
    input_x: torch.Tensor,
    kernel_size: Any = 1,
    stride: Any = 1,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int = 0,
) -> torch.Tensor:
    """Average pooling with torch's arguments (``divisor_override=0``: the window size)."""
    return F.avg_pool2d(
        input_x,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override or None,
    )


def adaptive_avg_pool2d(input: torch.Tensor, output_size: Any) -> torch.Tensor:
    return F.adaptive_avg_pool2d(input, output_size)


def adaptive_max_pool2d(
    input: torch.Tensor,
    output_size: Any,
    return_indices: bool = False,
) -> Any:
    return F.adaptive_max_pool2d(input, output_size, return_indices)


def conv2d(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride: Any = 1,
    pad_mode: str = "valid",
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> torch.Tensor:
    """2-d convolution; ``pad_mode`` "valid", "same" (TensorFlow's rule) or "pad" with
    ``padding`` an int or (h, w) on both sides."""
    if isinstance(padding, (tuple, list)):
        if len(padding) != 2:
            raise ValueError(
                f"conv2d: padding must be an int or a tuple of 2 ints. Received padding={padding!r}"
            )
        padding = (padding[0], padding[0], padding[1], padding[1])
    op = Conv2D(
        weight.shape[0], tuple(weight.shape[2:]), 1, pad_mode, padding, stride, dilation, groups
    )
    out = op(input, weight)
    return out if bias is None else out + bias.reshape(1, -1, 1, 1)


def bias_add(input_x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``input_x + bias`` along axis 1."""
    return BiasAdd()(input_x, bias)


def iou(anchor_boxes: torch.Tensor, gt_boxes: torch.Tensor, mode: str = "iou") -> torch.Tensor:
    """The (M, N) overlaps of :class:`~jisu.ops.operations.IOU`."""
    return IOU(mode)(anchor_boxes, gt_boxes)


def pixel_shuffle(input: torch.Tensor, upscale_factor: int) -> torch.Tensor:
    return F.pixel_shuffle(input, upscale_factor)


__all__ = [
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "avg_pool2d",
    "bias_add",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "celu",
    "conv2d",
    "elu",
    "gelu",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "iou",
    "kl_div",
    "l1_loss",
    "leaky_relu",
    "logsigmoid",
    "max_pool2d",
    "mish",
    "mse_loss",
    "nll_loss",
    "pixel_shuffle",
    "prelu",
    "relu6",
    "selu",
    "silu",
    "smooth_l1_loss",
    "softplus",
    "softsign",
]
