"""MindSpore's ``device_context.ascend``: the CANN runtime's settings (recorded, no effect) and
whether an Ascend device is there (``torch_npu``)."""

from __future__ import annotations

import importlib.util

from . import op_precision
from .op_precision import conv_allow_hf32, matmul_allow_hf32, op_precision_mode, precision_mode

__all__ = [
    "conv_allow_hf32",
    "device_count",
    "is_available",
    "matmul_allow_hf32",
    "op_precision",
    "op_precision_mode",
    "precision_mode",
]


def is_available() -> bool:
    """Whether an Ascend NPU can be used (``torch_npu`` installed and a device found)."""
    if importlib.util.find_spec("torch_npu") is None:
        return False
    import torch

    return bool(getattr(torch, "npu", None) and torch.npu.is_available())


def device_count() -> int:
    """The number of Ascend NPUs torch sees (0 without ``torch_npu``)."""
    if not is_available():
        return 0
    import torch

    return int(torch.npu.device_count())
