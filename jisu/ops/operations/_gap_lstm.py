"""MindSpore's ``LSTM`` primitive (``P.LSTM(input_size, hidden_size, num_layers, has_bias,
bidirectional, dropout)(x, h, c, w)``), on torch's LSTM.

All weights come in one flat tensor ``w`` of shape ``(weight_size, 1, 1)``. Two layouts exist,
told apart by their size (gates i, f, g, o; matrices row-major as torch's ``weight_ih_l{k}``):

- MindSpore's CPU kernel's (one bias per layer and direction, ``b_ih + b_hh``): every
  ``w_ih`` (layer by layer, forward then reverse), then every ``w_hh``, then every bias;
  recorded from MindSpore 2.10 (tests/fixtures/ms_gaps);
- MindSpore's GPU (cuDNN) kernel's (two biases): for each layer and direction,
  ``w_ih, w_hh, b_ih, b_hh`` — what MindSpore's own ``nn.LSTM`` concatenates for one layer
  on GPU (model-zoo code sizes ``w`` this way).

Without biases both sizes agree and the CPU layout is read. ``dropout`` applies between
layers (MindSpore's kernels run in training mode).
"""

from __future__ import annotations

import torch

from ..primitive import Primitive

__all__ = ["LSTM"]


class LSTM(Primitive):
    """Returns ``(output, h_n, c_n, reserve, state)`` for time-major ``x`` of shape
    ``(seq_len, batch, input_size)``, ``h``/``c`` of shape ``(num_layers * num_directions,
    batch, hidden_size)``; ``reserve`` and ``state`` are MindSpore's kernel workspaces, returned
    as zero placeholders of shape ``(1, 1)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, has_bias: bool,
                 bidirectional: bool, dropout: float) -> None:  # fmt: skip
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size),
                            ("num_layers", num_layers)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"LSTM: {name} must be a positive int. Received: {value!r}")
        for name, value in (("has_bias", has_bias), ("bidirectional", bidirectional)):
            if not isinstance(value, bool):
                raise TypeError(f"LSTM: {name} must be a bool. Received: {name}={value!r}")
        if isinstance(dropout, bool) or not isinstance(dropout, float) or not 0 <= dropout <= 1:
            raise ValueError(f"LSTM: dropout must be a float in [0, 1]. Received: {dropout!r}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.has_bias, self.bidirectional, self.dropout = has_bias, bidirectional, dropout
        self.num_directions = 2 if bidirectional else 1

    def _sizes(self) -> list[tuple[int, int]]:
        """``(input width, hidden)`` per layer and direction, in order."""
        hidden, dirs = self.hidden_size, self.num_directions
        return [
            (self.input_size if layer == 0 else hidden * dirs, hidden)
            for layer in range(self.num_layers)
            for _ in range(dirs)
        ]

    def weight_size(self, biases: int) -> int:
        """The length of ``w`` with ``biases`` bias vectors per layer and direction."""
        gate = 4 * self.hidden_size
        return sum(gate * (i + h) + biases * gate for i, h in self._sizes())

    def _params(self, w: torch.Tensor) -> list[torch.Tensor]:
        flat = w.reshape(-1)
        gate = 4 * self.hidden_size
        sizes = self._sizes()
        cpu, gpu = self.weight_size(1 if self.has_bias else 0), self.weight_size(2)
        if flat.numel() not in (cpu, gpu) or (not self.has_bias and flat.numel() != cpu):
            expected = cpu if not self.has_bias else f"{cpu} (CPU layout) or {gpu} (GPU layout)"
            raise ValueError(f"LSTM: w must hold {expected} values. Received: {flat.numel()}")
        pieces: list[list[torch.Tensor]] = [[] for _ in sizes]
        at = 0

        def take(n: int, shape: tuple[int, ...]) -> torch.Tensor:
            nonlocal at
            at += n
            return flat[at - n : at].reshape(shape)

        if self.has_bias and flat.numel() == gpu:
            for k, (i, h) in enumerate(sizes):
                pieces[k] = [take(gate * i, (gate, i)), take(gate * h, (gate, h)),
                             take(gate, (gate,)), take(gate, (gate,))]  # fmt: skip
        else:
            for k, (i, _h) in enumerate(sizes):
                pieces[k].append(take(gate * i, (gate, i)))
            for k, (_i, h) in enumerate(sizes):
                pieces[k].append(take(gate * h, (gate, h)))
            if self.has_bias:
                for k in range(len(sizes)):
                    pieces[k] += [take(gate, (gate,)), torch.zeros_like(flat[:gate])]
        return [t for layer in pieces for t in layer]

    def __call__(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w: torch.Tensor) -> tuple:
        params = self._params(w.to(x.dtype))
        output, h_n, c_n = torch.lstm(
            x, (h, c), params, self.has_bias, self.num_layers, self.dropout,
            self.dropout > 0, self.bidirectional, False,
        )  # fmt: skip
        placeholder = x.new_zeros((1, 1))
        return output, h_n, c_n, placeholder, placeholder
