"""MindSpore 2.2-2.4's ``nn.layer.flash_attention`` path: ``FlashAttention``, a cell over an
Ascend-only fused kernel (gone again in 2.10, and absent from 2.0), is refused by name when it
is built: its mask and scaling conventions live in that kernel and cannot be checked against a
MindSpore that runs here. ``torch.nn.functional.scaled_dot_product_attention`` is the torch
operation to write the attention with."""

from __future__ import annotations

from ..._unprovided import refused_class
from ..cell import Cell

__all__ = ["FlashAttention"]

FlashAttention = refused_class(
    "nn.layer.flash_attention.FlashAttention",
    "it wraps an Ascend-only fused kernel of MindSpore 2.2-2.4 whose mask and scaling "
    "conventions cannot be checked here; write the attention with "
    "torch.nn.functional.scaled_dot_product_attention",
    base=Cell,
)
