"""MindSpore's ``device_context.gpu.op_precision``: whether float32 matrix products and
convolutions may run in TF32, set on torch (``torch.backends.cuda.matmul.allow_tf32`` and
``torch.backends.cudnn.allow_tf32``)."""

from __future__ import annotations

import torch

__all__ = ["conv_allow_tf32", "matmul_allow_tf32"]


def matmul_allow_tf32(value: bool) -> None:
    """Allow (or forbid) TF32 in float32 matrix products."""
    if not isinstance(value, bool):
        raise TypeError(f"matmul_allow_tf32: value must be a bool. Received: {value!r}")
    torch.backends.cuda.matmul.allow_tf32 = value


def conv_allow_tf32(value: bool) -> None:
    """Allow (or forbid) TF32 in float32 convolutions (cuDNN)."""
    if not isinstance(value, bool):
        raise TypeError(f"conv_allow_tf32: value must be a bool. Received: {value!r}")
    torch.backends.cudnn.allow_tf32 = value
