"""MindSpore's recurrent layers (``LSTM``, ``GRU``, ``RNN``) as subclasses of torch's, so they
run torch's fused kernels (cuDNN on GPU).

MindSpore and torch share the parameter names (``weight_ih_l0``, ``weight_hh_l0``,
``bias_ih_l0``, ``bias_hh_l0``, ``_reverse`` for the second direction), their shapes and the
gate order inside them (LSTM: i, f, g, o; GRU: r, z, n), so a MindSpore checkpoint loads by
name. MindSpore lists them by kind (every ``weight_ih_*``, then every ``weight_hh_*``, then the
biases); the layers here list them in that order too (``trainable_params()``, checkpoints).

``seq_length`` (the valid length of each batch element) runs the layer on a packed sequence:
outputs past a length are zero, ``h_n`` (and ``c_n``) are the states at the last valid step,
and the reverse direction starts at the last valid step, as in MindSpore.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn.utils import rnn as rnn_utils

from .. import _checks
from ..cell import Cell

__all__ = ["GRU", "LSTM", "RNN"]

_KINDS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def _check_args(
    owner: str,
    input_size: Any,
    hidden_size: Any,
    num_layers: Any,
    has_bias: Any,
    batch_first: Any,
    dropout: Any,
    bidirectional: Any,
) -> float:
    """MindSpore's argument rules; returns ``dropout``."""
    _checks.positive_int(owner, "hidden_size", hidden_size)
    _checks.positive_int(owner, "input_size", input_size)
    _checks.positive_int(owner, "num_layers", num_layers)
    _checks.a_float(owner, "dropout", dropout)
    for name, value in (
        ("has_bias", has_bias),
        ("batch_first", batch_first),
        ("bidirectional", bidirectional),
    ):
        _checks.a_bool(owner, name, value)
    if not 0 <= dropout < 1:
        raise ValueError(f"{owner}: dropout must be in [0, 1). Received dropout={dropout}")
    return dropout


class _MindSporeRNN(Cell):
    """What the recurrent layers share: MindSpore's call ``(x, hx=None, seq_length=None)`` on a
    torch ``RNNBase``."""

    _is_lstm = False

    def _setup(self, has_bias: bool) -> None:
        self._auto_prefix = True
        self.has_bias = has_bias
        # MindSpore's order: all weight_ih, all weight_hh, all bias_ih, all bias_hh
        params = self._parameters
        order = sorted(params, key=lambda n: _KINDS.index(n.rsplit("_l", 1)[0]))
        reordered = [(name, params[name]) for name in order]
        params.clear()
        params.update(reordered)

    def construct(
        self, x: torch.Tensor, hx: Any = None, seq_length: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, Any]:
        """Run the layer.

        Args:
            x: (seq_len, batch, input_size), or (batch, seq_len, input_size) with
                ``batch_first``.
            hx: the initial state, (num_directions * num_layers, batch, hidden_size); a tuple
                ``(h_0, c_0)`` for an LSTM. Default zeros.
            seq_length: int32/int64 (batch,) valid lengths. Reading it is a host sync (torch
                packs sequences by lengths held on the CPU).

        Returns:
            ``(output, h_n)``, ``(output, (h_n, c_n))`` for an LSTM, in x's dtype.
        """
        owner = type(self).__name__
        self._check_hx(owner, x, hx)
        # MindSpore computes in x's dtype whatever its parameters'; torch wants them equal:
        # here x and hx take the parameters' dtype (unless autocast decides), results x's
        dtype = self.weight_ih_l0.dtype
        if x.dtype == dtype or torch.is_autocast_enabled(x.device.type):
            dtype = x.dtype
        if hx is not None:
            hx = tuple(h.to(dtype) for h in hx) if self._is_lstm else hx.to(dtype)
        out, state = self._run(owner, x.to(dtype), hx, seq_length)
        if self._is_lstm:
            return out.to(x.dtype), (state[0].to(x.dtype), state[1].to(x.dtype))
        return out.to(x.dtype), state.to(x.dtype)

    def _run(
        self, owner: str, x: torch.Tensor, hx: Any, seq_length: torch.Tensor | None
    ) -> tuple[torch.Tensor, Any]:
        if seq_length is None:
            return self._torch_forward(x, hx)
        if not isinstance(seq_length, torch.Tensor) or seq_length.dtype not in (
            torch.int32,
            torch.int64,
        ):
            raise TypeError(
                f"{owner}: seq_length must be an int32 or int64 tensor. Received "
                f"{getattr(seq_length, 'dtype', type(seq_length).__name__)}"
            )
        batch_dim, time_dim = (0, 1) if self.batch_first else (1, 0)
        batch, steps = x.shape[batch_dim], x.shape[time_dim]
        if seq_length.shape != (batch,):
            raise ValueError(
                f"{owner}: batch size of x and seq_length must be equal. Received x batch "
                f"{batch}, seq_length shape {tuple(seq_length.shape)}"
            )
        lengths = seq_length.cpu()  # host sync: torch packs by lengths held on the CPU
        if bool(((lengths < 0) | (lengths > steps)).any()):
            raise ValueError(
                f"{owner}: seq_length must be in [0, {steps}] (the sequence length of x). "
                f"Received {lengths.tolist()}"
            )
        # a zero length runs one step here, then its outputs are zeroed and its state kept
        packed = rnn_utils.pack_padded_sequence(
            x, lengths.clamp(min=1), batch_first=self.batch_first, enforce_sorted=False
        )
        out, state = self._torch_forward(packed, hx)
        out, _ = rnn_utils.pad_packed_sequence(
            out, batch_first=self.batch_first, total_length=steps
        )
        if bool(lengths.eq(0).any()):
            empty = lengths.eq(0).to(x.device)
            keep = (~empty).to(out.dtype)
            out = out * (keep.view(1, -1, 1) if time_dim == 0 else keep.view(-1, 1, 1))
            state = self._keep_initial(state, hx, empty, x)
        return out, state

    def _torch_forward(self, x: Any, hx: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def _check_hx(self, owner: str, x: torch.Tensor, hx: Any) -> None:
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(
                f"{owner}: x must be a floating-point Tensor. Received "
                f"{getattr(x, 'dtype', type(x).__name__)}"
            )
        if hx is None:
            return
        if self._is_lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"{owner}: hx must be a tuple (h_0, c_0). Received {hx!r}")
            tensors = hx
        else:
            tensors = (hx,)
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{owner}: hx must hold Tensors. Received {type(t).__name__}")
            if not t.is_floating_point():
                raise TypeError(f"{owner}: hx must be floating point. Received {t.dtype}")

    def _keep_initial(self, state: Any, hx: Any, empty: torch.Tensor, x: torch.Tensor) -> Any:
        """The state of zero-length batch elements is their initial state (MindSpore's)."""
        mask = empty.view(1, -1, 1)
        if self._is_lstm:
            h0, c0 = hx if hx is not None else (torch.zeros_like(state[0]),) * 2
            return (torch.where(mask, h0, state[0]), torch.where(mask, c0, state[1]))
        h0 = hx if hx is not None else torch.zeros_like(state)
        return torch.where(mask, h0, state)


class LSTM(_MindSporeRNN, nn.LSTM):
    """Stacked LSTM layers (MindSpore's ``nn.LSTM`` on torch's ``LSTM``).

    Args:
        input_size: features of the input.
        hidden_size: features of the hidden state.
        num_layers: stacked layers. Default 1.
        has_bias: whether there are ``bias_ih``/``bias_hh``. Default True.
        batch_first: x and output are (batch, seq, feature). Default False.
        dropout: a float in [0, 1): dropout on every layer's output but the last. Default 0.0.
        bidirectional: two directions, outputs concatenated. Default False.
        dtype: parameter dtype. Default float32.

    Call ``lstm(x, hx=None, seq_length=None)`` -> ``(output, (h_n, c_n))``; see
    :meth:`construct`.

    Example:
        >>> net = LSTM(10, 16, 2, has_bias=True, batch_first=True)
        >>> output, (hn, cn) = net(torch.ones(3, 5, 10))
    """

    _is_lstm = True

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        has_bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        args = (input_size, hidden_size, num_layers, has_bias, batch_first, dropout, bidirectional)
        _check_args("LSTM", *args)
        nn.LSTM.__init__(self, *args, dtype=dtype)
        self._setup(has_bias)

    def _torch_forward(self, x: Any, hx: Any) -> tuple[Any, Any]:
        return nn.LSTM.forward(self, x, None if hx is None else tuple(hx))


class GRU(_MindSporeRNN, nn.GRU):
    """Stacked GRU layers (MindSpore's ``nn.GRU`` on torch's ``GRU``); arguments as
    :class:`LSTM`. Call ``gru(x, hx=None, seq_length=None)`` -> ``(output, h_n)``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        has_bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        args = (input_size, hidden_size, num_layers, has_bias, batch_first, dropout, bidirectional)
        _check_args("GRU", *args)
        nn.GRU.__init__(self, *args, dtype=dtype)
        self._setup(has_bias)

    def _torch_forward(self, x: Any, hx: Any) -> tuple[Any, Any]:
        return nn.GRU.forward(self, x, hx)


class RNN(_MindSporeRNN, nn.RNN):
    """Stacked Elman RNN layers (MindSpore's ``nn.RNN`` on torch's ``RNN``); arguments as
    :class:`LSTM`, plus ``nonlinearity`` ("tanh", default, or "relu"; keyword only, as
    MindSpore reads it). Call ``rnn(x, hx=None, seq_length=None)`` -> ``(output, h_n)``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        has_bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        dtype: torch.dtype = torch.float32,
        *,
        nonlinearity: str = "tanh",
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                "RNN: nonlinearity must be 'tanh' or 'relu'. "
                f"Received nonlinearity={nonlinearity!r}"
            )
        args = (input_size, hidden_size, num_layers, has_bias, batch_first, dropout, bidirectional)
        _check_args("RNN", *args)
        nn.RNN.__init__(
            self,
            input_size,
            hidden_size,
            num_layers,
            nonlinearity,
            has_bias,
            batch_first,
            dropout,
            bidirectional,
            dtype=dtype,
        )
        self._setup(has_bias)

    def _torch_forward(self, x: Any, hx: Any) -> tuple[Any, Any]:
        return nn.RNN.forward(self, x, hx)
