"""MindSpore's single-step recurrent cells (``LSTMCell``, ``GRUCell``, ``RNNCell``) as
subclasses of torch's. The parameter names (``weight_ih``, ``weight_hh``, ``bias_ih``,
``bias_hh``), their order, shapes and gate order are MindSpore's and torch's alike, and both
initialize every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .. import _checks
from ..cell import Cell

__all__ = ["GRUCell", "LSTMCell", "RNNCell", "RNNCellBase"]


def _check_args(owner: str, input_size: Any, hidden_size: Any, has_bias: Any) -> None:
    _checks.a_bool(owner, "has_bias", has_bias)
    _checks.positive_int(owner, "hidden_size", hidden_size)
    _checks.positive_int(owner, "input_size", input_size)


def _check_tensor(owner: str, name: str, value: Any) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{owner}: {name} must be a Tensor. Received {type(value).__name__}")
    return value


class RNNCellBase(Cell, nn.RNNCellBase):
    """MindSpore's base of the cells (``mindspore.nn.layer.rnn_cells.RNNCellBase``, which
    model-zoo code subclasses): ``weight_ih`` (num_chunks * hidden_size, input_size),
    ``weight_hh`` (num_chunks * hidden_size, hidden_size), ``bias_ih``/``bias_hh``
    (num_chunks * hidden_size,) or None, all from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size));
    the subclass defines ``construct``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        has_bias: bool,
        num_chunks: int,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        owner = type(self).__name__
        _check_args(owner, input_size, hidden_size, has_bias)
        _checks.positive_int(owner, "num_chunks", num_chunks)
        nn.RNNCellBase.__init__(self, input_size, hidden_size, has_bias, num_chunks, dtype=dtype)
        self._setup(has_bias)

    def _setup(self, has_bias: bool) -> None:
        self._auto_prefix = True
        self.has_bias = has_bias


class _MindSporeRNNCell(RNNCellBase):
    """The cells below: torch's cell classes under :class:`RNNCellBase`."""


class LSTMCell(_MindSporeRNNCell, nn.LSTMCell):
    """One LSTM step: ``cell(x, (h, c))`` -> ``(h', c')``.

    Args:
        input_size: features of x, (batch, input_size).
        hidden_size: features of h and c, (batch, hidden_size).
        has_bias: whether there are ``bias_ih``/``bias_hh``. Default True.
        dtype: parameter dtype. Default float32.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        has_bias: bool = True,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        _check_args("LSTMCell", input_size, hidden_size, has_bias)
        nn.LSTMCell.__init__(self, input_size, hidden_size, has_bias, dtype=dtype)
        self._setup(has_bias)

    def construct(
        self, x: torch.Tensor, hx: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        _check_tensor("LSTMCell", "x", x)
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError(f"LSTMCell: hx must be a tuple (h, c). Received {hx!r}")
        h = _check_tensor("LSTMCell", "hx[0]", hx[0])
        c = _check_tensor("LSTMCell", "hx[1]", hx[1])
        return nn.LSTMCell.forward(self, x, (h, c))


class GRUCell(_MindSporeRNNCell, nn.GRUCell):
    """One GRU step: ``cell(x, h)`` -> ``h'``; arguments as :class:`LSTMCell`."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        has_bias: bool = True,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        _check_args("GRUCell", input_size, hidden_size, has_bias)
        nn.GRUCell.__init__(self, input_size, hidden_size, has_bias, dtype=dtype)
        self._setup(has_bias)

    def construct(self, x: torch.Tensor, hx: torch.Tensor) -> torch.Tensor:
        _check_tensor("GRUCell", "x", x)
        return nn.GRUCell.forward(self, x, _check_tensor("GRUCell", "hx", hx))


class RNNCell(_MindSporeRNNCell, nn.RNNCell):
    """One Elman RNN step: ``cell(x, h)`` -> ``h'``; arguments as :class:`LSTMCell`, plus
    ``nonlinearity`` ("tanh", default, or "relu")."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        has_bias: bool = True,
        nonlinearity: str = "tanh",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        _check_args("RNNCell", input_size, hidden_size, has_bias)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                "RNNCell: nonlinearity must be 'tanh' or 'relu'. "
                f"Received nonlinearity={nonlinearity!r}"
            )
        nn.RNNCell.__init__(self, input_size, hidden_size, has_bias, nonlinearity, dtype=dtype)
        self._setup(has_bias)

    def construct(self, x: torch.Tensor, hx: torch.Tensor) -> torch.Tensor:
        _check_tensor("RNNCell", "x", x)
        return nn.RNNCell.forward(self, x, _check_tensor("RNNCell", "hx", hx))
