"""MindSpore's ``mindspore.ops.function.nn_func`` names model-zoo code imports from that path:
``multi_head_attention_forward`` (MindSpore's port of torch's functional attention, the same
arguments plus ``k_is_v``/``q_is_k``/``dtype``) and ``silu``."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["multi_head_attention_forward", "silu"]


def silu(input: torch.Tensor) -> torch.Tensor:
    """``x * sigmoid(x)``."""
    return F.silu(input)


def multi_head_attention_forward(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, embed_dim_to_check: int,
    num_heads: int, in_proj_weight: torch.Tensor | None, in_proj_bias: torch.Tensor | None,
    bias_k: torch.Tensor | None, bias_v: torch.Tensor | None, add_zero_attn: bool,
    dropout_p: float, out_proj_weight: torch.Tensor, out_proj_bias: torch.Tensor | None,
    training: bool = True, key_padding_mask: torch.Tensor | None = None,
    attn_mask: torch.Tensor | None = None, use_separate_proj_weight: bool = False,
    q_proj_weight: torch.Tensor | None = None, k_proj_weight: torch.Tensor | None = None,
    v_proj_weight: torch.Tensor | None = None, static_k: torch.Tensor | None = None,
    static_v: torch.Tensor | None = None, average_attn_weights: bool = True,
    is_causal: bool = False, k_is_v: bool = False, q_is_k: bool = False, dtype: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """``(attn_output, attn_output_weights)`` for time-major inputs ``(L, N, E)`` (or unbatched
    ``(L, E)``), as MindSpore computes them (its function follows torch's; a bool mask is True
    where attention is not allowed, a uint8 mask reads as bool). ``k_is_v``/``q_is_k`` only
    tell MindSpore which packed projection to share, and ``dtype`` its scale's type: the
    result is the same without them. The weights are always returned, averaged over heads
    when ``average_attn_weights``."""
    if attn_mask is not None and attn_mask.dtype == torch.uint8:
        attn_mask = attn_mask.bool()
    return F.multi_head_attention_forward(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
        bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
        training=training, key_padding_mask=key_padding_mask, need_weights=True,
        attn_mask=attn_mask, use_separate_proj_weight=use_separate_proj_weight,
        q_proj_weight=q_proj_weight, k_proj_weight=k_proj_weight, v_proj_weight=v_proj_weight,
        static_k=static_k, static_v=static_v, average_attn_weights=average_attn_weights,
        is_causal=is_causal,
    )  # fmt: skip
