"""MindSpore's ``device_context.gpu``: CUDA's availability and TF32 switches, on torch's."""

from __future__ import annotations

import torch

from . import op_precision
from .op_precision import conv_allow_tf32, matmul_allow_tf32

__all__ = ["conv_allow_tf32", "device_count", "is_available", "matmul_allow_tf32", "op_precision"]


def is_available() -> bool:
    """Whether a CUDA device can be used."""
    return torch.cuda.is_available()


def device_count() -> int:
    """The number of CUDA devices."""
    return torch.cuda.device_count()
