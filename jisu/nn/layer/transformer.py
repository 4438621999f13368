"""MindSpore's attention and transformer layers: ``MultiheadAttention`` (a subclass of torch's,
so it runs torch's attention kernels), ``TransformerEncoderLayer``,
``TransformerDecoderLayer``, ``TransformerEncoder``, ``TransformerDecoder`` and
``Transformer``.

Parameter names and order are MindSpore 2.10's: an attention layer holds ``in_proj_weight``
(or ``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` when ``kdim``/``vdim`` differ from
``embed_dim``), ``in_proj_bias``, ``bias_k``/``bias_v``, then ``out_proj.weight``/``.bias``
(torch's names); the layers' feed-forward cells are ``dense1``/``dense2`` (MindSpore 2.0.0
called them ``linear1``/``linear2``, as torch does: those names read the same cells here, but
a 2.0.0 checkpoint's ``linear1.*`` entries must be renamed to load) and their norms
``norm1``... with ``gamma``/``beta``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ...common.initializer import Uniform
from .. import _checks
from ..cell import Cell, CellList
from .basic import Dense, Dropout, init_parameter
from .normalization import LayerNorm

__all__ = [
    "MultiheadAttention",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]

Mask = torch.Tensor | None


def _check_mask(owner: str, name: str, mask: Mask) -> None:
    if mask is not None and mask.dtype != torch.bool and not mask.is_floating_point():
        raise ValueError(
            f"{owner}: {name} must be a bool or floating-point tensor. Received {mask.dtype}"
        )


def _additive(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A bool mask (True: masked) as the float mask that adds -inf there."""
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, -math.inf)


class MultiheadAttention(Cell, nn.MultiheadAttention):
    """Multi-head attention (MindSpore's arguments and outputs on torch's layer).

    Args:
        embed_dim: the model dimension (divisible by ``num_heads``).
        num_heads: attention heads.
        dropout: dropout on the attention weights in training. Default 0.0.
        has_bias: biases on the input and output projections. Default True.
        add_bias_kv: learnt ``bias_k``/``bias_v`` appended to key and value. Default False.
        add_zero_attn: a zero key/value appended. Default False.
        kdim, vdim: key/value features. Default ``embed_dim``.
        batch_first: inputs and output are (batch, seq, feature). Default False.
        dtype: parameter dtype. Default float32.

    Call ``mha(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True)`` -> ``(attn_output, attn_weights)``, or ``(attn_output,)``
    when ``need_weights`` is False (MindSpore's one-element tuple). Bool masks are True where
    attention is not allowed; float masks are added to the attention logits.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        has_bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        owner = "MultiheadAttention"
        _checks.positive_int(owner, "embed_dim", embed_dim)
        _checks.positive_int(owner, "num_heads", num_heads)
        if embed_dim % num_heads:
            raise ValueError(
                f"{owner}: embed_dim must be divisible by num_heads. Received "
                f"embed_dim={embed_dim}, num_heads={num_heads}"
            )
        nn.MultiheadAttention.__init__(
            self,
            embed_dim,
            num_heads,
            dropout=dropout,
            bias=has_bias,
            add_bias_kv=add_bias_kv,
            add_zero_attn=add_zero_attn,
            kdim=kdim,
            vdim=vdim,
            batch_first=batch_first,
            dtype=dtype,
        )
        self._auto_prefix = True
        self.has_bias = has_bias
        if has_bias:  # MindSpore's out_proj bias is U(-1/sqrt(embed_dim), ...), torch's zero
            bias_init = Uniform(1 / math.sqrt(embed_dim))
            init_parameter(self.out_proj.bias, bias_init, owner, "bias_init", None)

    def construct(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        key_padding_mask: Mask = None,
        need_weights: bool = True,
        attn_mask: Mask = None,
        average_attn_weights: bool = True,
    ) -> tuple[torch.Tensor, ...]:
        _check_mask("MultiheadAttention", "key_padding_mask", key_padding_mask)
        if attn_mask is not None and attn_mask.dtype == torch.uint8:
            attn_mask = attn_mask.bool()  # MindSpore reads a uint8 attention mask as bool
        if key_padding_mask is not None and attn_mask is not None:
            # one bool and one float mask: the bool one as -inf/0 (torch warns on a mix)
            if key_padding_mask.dtype == torch.bool and attn_mask.is_floating_point():
                key_padding_mask = _additive(key_padding_mask, attn_mask.dtype)
            elif attn_mask.dtype == torch.bool and key_padding_mask.is_floating_point():
                attn_mask = _additive(attn_mask, key_padding_mask.dtype)
        out, weights = nn.MultiheadAttention.forward(
            self,
            query,
            key,
            value,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            average_attn_weights=average_attn_weights,
        )
        return (out, weights) if need_weights else (out,)


def _activation(owner: str, activation: Any) -> Callable[[torch.Tensor], torch.Tensor]:
    """MindSpore's ``activation``: "relu", "gelu" (exact, as ``ops.gelu``), or a cell or
    callable."""
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise ValueError(
            f"{owner}: activation must be 'relu' or 'gelu'. Received activation={activation!r}"
        )
    if callable(activation):
        return activation
    raise ValueError(
        f"{owner}: activation must be a str, a Cell or a callable. Received {activation!r}"
    )


class _FeedForward(Cell):
    """What the encoder and decoder layers share: the feed-forward block and its settings."""

    def _setup_ffn(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int,
        dropout: float,
        activation: Any,
        batch_first: bool,
        norm_first: bool,
        dtype: torch.dtype,
    ) -> None:
        owner = type(self).__name__
        _checks.positive_int(owner, "d_model", d_model)
        _checks.positive_int(owner, "dim_feedforward", dim_feedforward)
        self.dense1 = Dense(d_model, dim_feedforward, dtype=dtype)
        self.dropout = Dropout(p=dropout)
        self.dense2 = Dense(dim_feedforward, d_model, dtype=dtype)
        self.activation = _activation(owner, activation)
        self.d_model, self.nhead, self.dim_feedforward = d_model, nhead, dim_feedforward
        self.dropout_num, self.batch_first, self.norm_first = dropout, batch_first, norm_first

    @property
    def linear1(self) -> Dense:
        """MindSpore 2.0.0's (and torch's) name of :attr:`dense1`."""
        return self.dense1

    @property
    def linear2(self) -> Dense:
        """MindSpore 2.0.0's (and torch's) name of :attr:`dense2`."""
        return self.dense2

    def _ff_block(self, x: torch.Tensor, dropout: nn.Module) -> torch.Tensor:
        return dropout(self.dense2(self.dropout(self.activation(self.dense1(x)))))


class TransformerEncoderLayer(_FeedForward):
    """One transformer encoder layer: self-attention and a feed-forward block, each with a
    residual connection and a LayerNorm (after, or before with ``norm_first``).

    Args:
        d_model: features of the input.
        nhead: attention heads.
        dim_feedforward: the feed-forward block's width. Default 2048.
        dropout: dropout probability. Default 0.1.
        activation: "relu" (default), "gelu", or a cell/callable.
        layer_norm_eps: LayerNorm epsilon. Default 1e-5.
        batch_first: (batch, seq, feature) inputs. Default False.
        norm_first: LayerNorm before each block. Default False.
        dtype: parameter dtype. Default float32.

    Call ``layer(src, src_mask=None, src_key_padding_mask=None)`` -> a tensor like ``src``.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Any = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, dtype=dtype
        )
        self._setup_ffn(
            d_model, nhead, dim_feedforward, dropout, activation, batch_first, norm_first, dtype
        )
        self.norm1 = LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype)
        self.norm2 = LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype)
        self.dropout1 = Dropout(p=dropout)
        self.dropout2 = Dropout(p=dropout)
        self.layernorm_eps = layer_norm_eps

    def construct(
        self, src: torch.Tensor, src_mask: Mask = None, src_key_padding_mask: Mask = None
    ) -> torch.Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask)
            return x + self._ff_block(self.norm2(x), self.dropout2)
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask))
        return self.norm2(x + self._ff_block(x, self.dropout2))

    def _sa_block(self, x: torch.Tensor, mask: Mask, padding: Mask) -> torch.Tensor:
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding, need_weights=False)
        return self.dropout1(out[0])


class TransformerDecoderLayer(_FeedForward):
    """One transformer decoder layer: self-attention, attention over the encoder's output
    (``memory``) and a feed-forward block, each with a residual connection and a LayerNorm.
    Arguments as :class:`TransformerEncoderLayer`.

    Call ``layer(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None)`` -> a tensor like ``tgt``.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Any = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, dtype=dtype
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, dtype=dtype
        )
        self._setup_ffn(
            d_model, nhead, dim_feedforward, dropout, activation, batch_first, norm_first, dtype
        )
        self.norm1 = LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype)
        self.norm2 = LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype)
        self.norm3 = LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype)
        self.dropout1 = Dropout(p=dropout)
        self.dropout2 = Dropout(p=dropout)
        self.dropout3 = Dropout(p=dropout)
        self.layernorm_eps = layer_norm_eps

    def construct(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
    ) -> torch.Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask)
            return x + self._ff_block(self.norm3(x), self.dropout3)
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask))
        return self.norm3(x + self._ff_block(x, self.dropout3))

    def _sa_block(self, x: torch.Tensor, mask: Mask, padding: Mask) -> torch.Tensor:
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding, need_weights=False)
        return self.dropout1(out[0])

    def _mha_block(
        self, x: torch.Tensor, memory: torch.Tensor, mask: Mask, padding: Mask
    ) -> torch.Tensor:
        out = self.multihead_attn(
            x, memory, memory, attn_mask=mask, key_padding_mask=padding, need_weights=False
        )
        return self.dropout2(out[0])


def _clones(owner: str, layer: Any, kind: type, num_layers: Any) -> CellList:
    if not isinstance(layer, kind):
        raise TypeError(
            f"{owner}: the layer must be a {kind.__name__}. Received {type(layer).__name__}"
        )
    _checks.positive_int(owner, "num_layers", num_layers)
    return CellList([copy.deepcopy(layer) for _ in range(num_layers)])


class TransformerEncoder(Cell):
    """``num_layers`` copies of ``encoder_layer`` (each starting from its weights) applied in
    turn, then ``norm`` if given. Call ``encoder(src, src_mask=None,
    src_key_padding_mask=None)``."""

    def __init__(
        self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Any = None
    ) -> None:
        super().__init__()
        self.layers = _clones(
            "TransformerEncoder", encoder_layer, TransformerEncoderLayer, num_layers
        )
        self.num_layers = num_layers
        self.norm = norm

    def construct(
        self, src: torch.Tensor, src_mask: Mask = None, src_key_padding_mask: Mask = None
    ) -> torch.Tensor:
        _check_mask("TransformerEncoder", "src_key_padding_mask", src_key_padding_mask)
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=src_mask, src_key_padding_mask=src_key_padding_mask)
        return out if self.norm is None else self.norm(out)


class TransformerDecoder(Cell):
    """``num_layers`` copies of ``decoder_layer`` applied in turn, then ``norm`` if given.
    Call ``decoder(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None)``."""

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Any = None
    ) -> None:
        super().__init__()
        self.layers = _clones(
            "TransformerDecoder", decoder_layer, TransformerDecoderLayer, num_layers
        )
        self.num_layers = num_layers
        self.norm = norm

    def construct(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
    ) -> torch.Tensor:
        out = tgt
        for layer in self.layers:
            out = layer(
                out,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
            )
        return out if self.norm is None else self.norm(out)


class Transformer(Cell):
    """An encoder-decoder transformer: :class:`TransformerEncoder` over ``src`` (with a final
    LayerNorm), then :class:`TransformerDecoder` over ``tgt`` attending to its output. Every
    parameter with more than one dimension starts Xavier-uniform (MindSpore's).

    Args:
        d_model: features of ``src`` and ``tgt``. Default 512.
        nhead: attention heads. Default 8.
        num_encoder_layers: encoder layers. Default 6.
        num_decoder_layers: decoder layers. Default 6.
        dim_feedforward: as :class:`TransformerEncoderLayer` (so are ``dropout``,
            ``activation``, ``layer_norm_eps``, ``batch_first``, ``norm_first``, ``dtype``).
        custom_encoder: a cell used instead of the built encoder.
        custom_decoder: a cell used instead of the built decoder.

    Call ``transformer(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None)``
    -> a tensor like ``tgt``.
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Any = "relu",
        custom_encoder: Any = None,
        custom_decoder: Any = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        settings = (dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, *settings, dtype=dtype)
            norm = LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, *settings, dtype=dtype)
            norm = LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        for param in self.parameters():
            if param.dim() > 1:
                nn.init.xavier_uniform_(param)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def construct(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor,
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
    ) -> torch.Tensor:
        batch_dim = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise ValueError(
                "Transformer: src and tgt must have the same batch size. Received "
                f"src {tuple(src.shape)}, tgt {tuple(tgt.shape)}"
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(
                f"Transformer: src and tgt must have d_model={self.d_model} features. Received "
                f"src {tuple(src.shape)}, tgt {tuple(tgt.shape)}"
            )
        memory = self.encoder(src, src_mask=src_mask, src_key_padding_mask=src_key_padding_mask)
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
        )
