"""MindSpore's ``device_context.ascend.op_precision``: the CANN operators' precision settings.
They configure Ascend kernels, which torch does not run through CANN's precision modes, so
they are validated as MindSpore does and recorded in :data:`settings`, with no effect."""

from __future__ import annotations

from typing import Any

__all__ = [
    "conv_allow_hf32",
    "matmul_allow_hf32",
    "op_precision_mode",
    "precision_mode",
    "settings",
]

#: what a script asked for, by function name
settings: dict[str, Any] = {}

_MODES = (
    "force_fp16", "allow_fp32_to_fp16", "allow_mix_precision", "must_keep_origin_dtype",
    "force_fp32", "allow_fp32_to_bf16", "allow_mix_precision_fp16", "allow_mix_precision_bf16",
)  # fmt: skip


def precision_mode(mode: str) -> None:
    """Record CANN's mixed-precision mode (one of MindSpore's modes; ``ValueError`` otherwise)."""
    if mode not in _MODES:
        raise ValueError(f"precision_mode: mode must be one of {list(_MODES)}. Received: {mode!r}")
    settings["precision_mode"] = mode


def op_precision_mode(path: str) -> None:
    """Record the path of CANN's per-operator precision file."""
    if not isinstance(path, str):
        raise TypeError(f"op_precision_mode: path must be a str. Received: {path!r}")
    settings["op_precision_mode"] = path


def matmul_allow_hf32(value: bool) -> None:
    """Record whether CANN may run float32 MatMul in HF32."""
    if not isinstance(value, bool):
        raise TypeError(f"matmul_allow_hf32: value must be a bool. Received: {value!r}")
    settings["matmul_allow_hf32"] = value


def conv_allow_hf32(value: bool) -> None:
    """Record whether CANN may run float32 convolutions in HF32."""
    if not isinstance(value, bool):
        raise TypeError(f"conv_allow_hf32: value must be a bool. Received: {value!r}")
    settings["conv_allow_hf32"] = value
