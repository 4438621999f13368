"""MindSpore 2.0's ``parallel._transformer.transformer`` layers on torch, with MindSpore's
parameter names and its dtype flow (matrix products in float16, softmax and layer norms in
float32, as MindSpore computes them), so a checkpoint of a model built from them (the model
zoo's GPT, mindocr's ABINet) loads by name: ``AttentionMask``, ``FeedForward``,
``MultiHeadAttention``, ``TransformerEncoderLayer``, ``TransformerEncoder``.

jisu runs them on one device (or data-parallel): the parallel configs are validated and
recorded, ``shard`` has no effect. Incremental inference (``use_past=True``), experts
(``MoEConfig(expert_num > 1)``) and the decoder classes are refused by name."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..._unprovided import refused_class
from ...nn.cell import Cell, CellList
from ._config import *  # noqa: F403 (MindSpore's config names live on this path too)
from ._config import _get_lambda_func, default_transformer_config
from .layers import _check_input_dtype, _LayerNorm, _Linear
from .moe import _check_moe_config, default_moe_config
from .op_parallel_config import MoEParallelConfig, OpParallelConfig, default_dpmp_config

__all__ = [
    "AttentionMask",
    "EmbeddingOpParallelConfig",  # noqa: F405
    "FeedForward",
    "MultiHeadAttention",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "TransformerOpParallelConfig",  # noqa: F405
    "TransformerRecomputeConfig",  # noqa: F405
    "VocabEmbedding",
    "default_transformer_config",
]

_FLOATS = [torch.float32, torch.float16]


def _dropout(rate: float, owner: str, name: str) -> torch.nn.Module:
    if not 0 <= rate < 1:
        raise ValueError(f"{owner}: {name} must be in [0, 1). Received: {rate}")
    from ...nn import Dropout

    return Dropout(p=rate)


def _no_past(owner: str, use_past: bool) -> None:
    if use_past:
        raise NotImplementedError(
            f"mindspore.parallel._transformer.{owner}(use_past=True) is not provided by jisu: "
            "MindSpore's incremental inference keeps its key/value states in graph-mode "
            "parameters; run the full sequence (use_past=False)"
        )


class AttentionMask(Cell):
    """``(batch, seq, seq)`` float32 mask from a ``(batch, seq)`` input mask: position pairs
    that are both valid, and causal (lower triangle)."""

    def __init__(self, seq_length: int, parallel_config: Any = default_dpmp_config) -> None:
        super().__init__()
        self.seq_length = seq_length
        tril = torch.from_numpy(np.tril(np.ones((seq_length, seq_length), np.float32)))
        self.register_buffer("lower_triangle_mask", tril, persistent=False)

    def construct(self, input_mask: torch.Tensor) -> torch.Tensor:
        _check_input_dtype(input_mask.dtype, "input_mask", _FLOATS, "AttentionMask")
        mask = (input_mask != 0).to(torch.float16)
        pairs = mask.unsqueeze(2) * mask.unsqueeze(1)
        return pairs * self.lower_triangle_mask.unsqueeze(0)


class FeedForward(Cell):
    """``dropout(projection(act(mapping(x))))`` in float16: ``mapping`` (``hidden_size`` ->
    ``ffn_hidden_size``, with the activation) and ``projection`` back, both ``_Linear`` with
    ``(in, out)`` weights; the output is float16, as MindSpore's."""

    def __init__(self, hidden_size: int, ffn_hidden_size: int, dropout_rate: float,
                 hidden_act: Any = "gelu", expert_num: int = 1,
                 expert_group_size: int | None = None,
                 param_init_type: torch.dtype = torch.float32,
                 parallel_config: Any = default_dpmp_config) -> None:  # fmt: skip
        super().__init__()
        if hidden_act is None or not (
            isinstance(hidden_act, str)
            or (isinstance(hidden_act, type) and issubclass(hidden_act, torch.nn.Module))
        ):
            raise TypeError(
                f"FeedForward: hidden_act must be a str or a Cell class: {hidden_act!r}"
            )
        if expert_num > 1:
            refused_class("parallel._transformer.FeedForward(expert_num > 1)",
                          "experts belong to MindSpore's MoE")()  # fmt: skip
        mp = parallel_config.model_parallel
        if ffn_hidden_size % mp or hidden_size % mp:
            raise ValueError(
                "FeedForward: hidden_size and ffn_hidden_size must be multiples of model_parallel "
                f"({mp}). Received: {hidden_size}, {ffn_hidden_size}"
            )
        self.mapping = _Linear(hidden_size, ffn_hidden_size, activation=hidden_act,
                               transpose_b=False, param_init_type=param_init_type)  # fmt: skip
        self.projection = _Linear(ffn_hidden_size, hidden_size, transpose_b=False,
                                  param_init_type=param_init_type)  # fmt: skip
        self.dropout = _dropout(dropout_rate, "FeedForward", "dropout_rate")

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        _check_input_dtype(x.dtype, "x", _FLOATS, "FeedForward")
        hidden = self.mapping(x.to(torch.float16))
        return self.dropout(self.projection(hidden))


class MultiHeadAttention(Cell):
    """MindSpore's multi-head attention: ``dense1``/``dense2``/``dense3`` project query, key
    and value (``(out, in)`` weights), scores ``q k^T / sqrt(d)`` (both scaled by
    ``d ** -0.25``) in ``softmax_compute_type`` with ``-10000 * (1 - mask)`` added, then
    ``projection`` (``(in, out)`` weight). Inputs are ``(batch, seq, hidden)`` or
    ``(batch * seq, hidden)``; returns ``(output, (key, value))``, the key as
    ``(batch, heads, d, tgt_seq)`` and the value as ``(batch, heads, tgt_seq, d)``."""

    def __init__(self, batch_size: int | None, src_seq_length: int, tgt_seq_length: int,
                 hidden_size: int, num_heads: int, hidden_dropout_rate: float = 0.1,
                 attention_dropout_rate: float = 0.1, compute_dtype: torch.dtype = torch.float16,
                 softmax_compute_type: torch.dtype = torch.float32,
                 param_init_type: torch.dtype = torch.float32, use_past: bool = False,
                 parallel_config: Any = default_dpmp_config) -> None:  # fmt: skip
        super().__init__()
        _no_past("MultiHeadAttention", use_past)
        if hidden_size % num_heads or num_heads % parallel_config.model_parallel:
            raise ValueError(
                "MultiHeadAttention: hidden_size must be a multiple of num_heads, and num_heads "
                f"of model_parallel. Received: {hidden_size}, {num_heads}, "
                f"{parallel_config.model_parallel}"
            )
        self.batch_size, self.hidden_size = batch_size, hidden_size
        self.src_seq_length, self.tgt_seq_length = src_seq_length, tgt_seq_length
        self.n_head, self.size_per_head = num_heads, hidden_size // num_heads
        self.use_past, self.dtype, self.softmax_dtype = (
            use_past,
            compute_dtype,
            softmax_compute_type,
        )
        self.scale_factor = math.sqrt(math.sqrt(self.size_per_head))
        linear = {"compute_dtype": compute_dtype, "param_init_type": param_init_type}
        self.projection = _Linear(hidden_size, hidden_size, transpose_b=False, **linear)
        self.dense1 = _Linear(hidden_size, hidden_size, **linear)
        self.dense2 = _Linear(hidden_size, hidden_size, **linear)
        self.dense3 = _Linear(hidden_size, hidden_size, **linear)
        self.dropout = _dropout(hidden_dropout_rate, "MultiHeadAttention", "hidden_dropout_rate")
        self.prob_dropout = _dropout(
            attention_dropout_rate, "MultiHeadAttention", "attention_dropout_rate"
        )

    def construct(self, query_tensor: torch.Tensor, key_tensor: torch.Tensor,
                  value_tensor: torch.Tensor, attention_mask: torch.Tensor | None,
                  key_past: Any = None, value_past: Any = None,
                  batch_valid_length: Any = None) -> tuple:  # fmt: skip
        for name, t in (("query_tensor", query_tensor), ("key_tensor", key_tensor),
                        ("value_tensor", value_tensor)):  # fmt: skip
            _check_input_dtype(t.dtype, name, _FLOATS, "MultiHeadAttention")
        ori_shape, ori_dtype = query_tensor.shape, query_tensor.dtype
        batch = query_tensor.shape[0]
        if query_tensor.dim() == 2:
            batch //= self.src_seq_length
        q, k, v = (t.reshape(-1, t.shape[-1]).to(self.dtype)
                   for t in (query_tensor, key_tensor, value_tensor))  # fmt: skip
        heads = (self.n_head, self.size_per_head)
        query = self.dense1(q).reshape(batch, self.src_seq_length, *heads).permute(0, 2, 1, 3)
        key = self.dense2(k).reshape(batch, self.tgt_seq_length, *heads).permute(0, 2, 3, 1)
        value = self.dense3(v).reshape(batch, self.tgt_seq_length, *heads).permute(0, 2, 1, 3)
        if attention_mask is not None and attention_mask.dim() == 3:
            attention_mask = attention_mask.unsqueeze(1)
        attention = self._attn(query, key, value, attention_mask)
        output = self.dropout(self.projection(attention))
        return output.reshape(ori_shape).to(ori_dtype), (key, value)

    def _attn(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
              attention_mask: torch.Tensor | None) -> torch.Tensor:  # fmt: skip
        factor = torch.tensor(self.scale_factor, dtype=query.dtype)
        score = (query / factor) @ (key / factor)
        scores = score.to(self.softmax_dtype)
        if attention_mask is not None:
            keep = attention_mask.to(scores.dtype)
            scores = scores + (1.0 - keep) * torch.tensor(-10000.0, dtype=self.softmax_dtype)
        probs = self.prob_dropout(torch.softmax(scores, dim=-1).to(score.dtype))
        weighted = probs @ value
        return weighted.permute(0, 2, 1, 3).reshape(-1, self.hidden_size)


class VocabEmbedding(Cell):
    """``(embedding_table[input_ids], embedding_table)``; the table (``vocab_size``,
    ``embedding_size``) initialised by ``param_init`` (``normal`` by default)."""

    def __init__(self, vocab_size: int, embedding_size: int, parallel_config: Any = None,
                 param_init: Any = "normal") -> None:  # fmt: skip
        super().__init__()
        from ...common.initializer import initializer
        from ...common.tensor import Parameter

        self.vocab_size, self.embedding_size = vocab_size, embedding_size
        self.embedding_table = Parameter(
            initializer(param_init, (vocab_size, embedding_size)), "embedding_table"
        )

    def construct(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.embedding_table[input_ids.long()], self.embedding_table


class TransformerEncoderLayer(Cell):
    """One encoder block: ``layernorm1`` -> ``attention`` -> residual -> ``layernorm2`` ->
    ``output`` (a :class:`FeedForward`) -> residual (or, with ``post_layernorm_residual``,
    the norms after the residuals, as MindSpore orders them). Returns ``(output, (key,
    value))``."""

    def __init__(self, batch_size: int | None, hidden_size: int, ffn_hidden_size: int,
                 num_heads: int, seq_length: int, attention_dropout_rate: float = 0.1,
                 hidden_dropout_rate: float = 0.1, post_layernorm_residual: bool = False,
                 layernorm_compute_type: torch.dtype = torch.float32,
                 softmax_compute_type: torch.dtype = torch.float32,
                 param_init_type: torch.dtype = torch.float32, hidden_act: Any = "gelu",
                 use_past: bool = False, moe_config: Any = default_moe_config,
                 parallel_config: Any = default_dpmp_config) -> None:  # fmt: skip
        super().__init__()
        _no_past("TransformerEncoderLayer", use_past)
        if not isinstance(parallel_config, (OpParallelConfig, MoEParallelConfig)):
            raise TypeError(
                "TransformerEncoderLayer: parallel_config must be an OpParallelConfig or a "
                f"MoEParallelConfig. Received: {type(parallel_config).__name__}"
            )
        _check_moe_config(moe_config, parallel_config)
        if moe_config.expert_num > 1:
            refused_class("parallel._transformer.TransformerEncoderLayer(MoE)",
                          "MindSpore's MoE is not provided")()  # fmt: skip
        self.batch_size, self.use_past, self.use_moe = batch_size, use_past, False
        self.seq_length, self.hidden_size = seq_length, hidden_size
        self.layernorm1 = _LayerNorm((hidden_size,)).to_float(layernorm_compute_type)
        self.layernorm2 = _LayerNorm((hidden_size,)).to_float(layernorm_compute_type)
        self.attention = MultiHeadAttention(
            batch_size=batch_size, src_seq_length=seq_length, tgt_seq_length=seq_length,
            hidden_size=hidden_size, num_heads=num_heads,
            hidden_dropout_rate=hidden_dropout_rate, attention_dropout_rate=attention_dropout_rate,
            softmax_compute_type=softmax_compute_type, param_init_type=param_init_type,
            parallel_config=parallel_config,
        )  # fmt: skip
        self.output = FeedForward(
            hidden_size=hidden_size, dropout_rate=hidden_dropout_rate,
            ffn_hidden_size=ffn_hidden_size, param_init_type=param_init_type,
            hidden_act=hidden_act, parallel_config=parallel_config,
        )  # fmt: skip
        self.post_layernorm_residual = post_layernorm_residual
        self.dtype = torch.float16
        self.key_past = self.value_past = None

    def construct(self, x: torch.Tensor, input_mask: torch.Tensor | None = None,
                  init_reset: Any = True, batch_valid_length: Any = None) -> tuple:  # fmt: skip
        _check_input_dtype(x.dtype, "x", _FLOATS, "TransformerEncoderLayer")
        if input_mask is not None:
            _check_input_dtype(input_mask.dtype, "input_mask", _FLOATS, "TransformerEncoderLayer")
        x_shape = x.shape
        x = x.reshape(-1, x_shape[-1])
        input_x = x if self.post_layernorm_residual else self.layernorm1(x)
        input_x = input_x.to(self.dtype)
        attention, layer_present = self.attention(input_x, input_x, input_x, input_mask)
        x = input_x + attention if self.post_layernorm_residual else x + attention
        output_x = self.layernorm2(x).to(self.dtype)
        mlp_logit = self.output(output_x)
        if self.post_layernorm_residual:
            output = self.layernorm1(output_x + mlp_logit)
        else:
            output = x + mlp_logit
        return output.reshape(x_shape), layer_present


class TransformerEncoder(Cell):
    """``num_layers`` :class:`TransformerEncoderLayer` s in ``blocks``, each given its
    pipeline stage and recomputation by ``lambda_func`` (MindSpore's ``_get_lambda_func()``
    by default). Returns ``(hidden_states, (present of each layer))``."""

    def __init__(self, batch_size: int | None, num_layers: int, hidden_size: int,
                 ffn_hidden_size: int, seq_length: int, num_heads: int,
                 attention_dropout_rate: float = 0.1, hidden_dropout_rate: float = 0.1,
                 hidden_act: Any = "gelu", post_layernorm_residual: bool = False,
                 layernorm_compute_type: torch.dtype = torch.float32,
                 softmax_compute_type: torch.dtype = torch.float32,
                 param_init_type: torch.dtype = torch.float32, lambda_func: Any = None,
                 offset: int = 0, use_past: bool = False, moe_config: Any = default_moe_config,
                 parallel_config: Any = default_transformer_config) -> None:  # fmt: skip
        super().__init__()
        _no_past("TransformerEncoder", use_past)
        _check_moe_config(moe_config, parallel_config)
        self.use_moe, self.num_layers = moe_config.expert_num > 1, num_layers
        lambda_func = lambda_func or _get_lambda_func()
        self.blocks = CellList()
        for i in range(num_layers):
            block = TransformerEncoderLayer(
                hidden_size=hidden_size, batch_size=batch_size, ffn_hidden_size=ffn_hidden_size,
                seq_length=seq_length, attention_dropout_rate=attention_dropout_rate,
                hidden_dropout_rate=hidden_dropout_rate,
                layernorm_compute_type=layernorm_compute_type,
                softmax_compute_type=softmax_compute_type, num_heads=num_heads,
                hidden_act=hidden_act, post_layernorm_residual=post_layernorm_residual,
                param_init_type=param_init_type, moe_config=moe_config,
                parallel_config=parallel_config.dp_mp_config,
            )  # fmt: skip
            lambda_func(block, layer_id=i, layers=num_layers, offset=offset,
                        parallel_config=parallel_config)  # fmt: skip
            self.blocks.append(block)

    def construct(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor,
                  init_reset: Any = True, batch_valid_length: Any = None) -> tuple:  # fmt: skip
        present_layer = ()
        for block in self.blocks:
            hidden_states, present = block(hidden_states, attention_mask)
            present_layer = (*present_layer, present)
        return hidden_states, present_layer


_DECODER = (
    "jisu provides MindSpore's transformer encoder layers only (the model zoo's users need no "
    "more); build a decoder from MultiHeadAttention and FeedForward"
)
TransformerDecoderLayer = refused_class(
    "parallel._transformer.transformer.TransformerDecoderLayer", _DECODER, base=Cell
)
TransformerDecoder = refused_class(
    "parallel._transformer.transformer.TransformerDecoder", _DECODER, base=Cell
)
Transformer = refused_class("parallel._transformer.transformer.Transformer", _DECODER, base=Cell)
