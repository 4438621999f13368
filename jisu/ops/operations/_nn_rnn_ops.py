"""MindSpore's fused recurrent primitives ``DynamicRNN`` (LSTM) and ``DynamicGRUV2`` on torch.

MindSpore runs them on Ascend only; jisu computes MindSpore's documented equations with torch
on any device, time-major, one step at a time. ``DynamicRNN``'s gates are packed
(i, j, f, o) along the columns of ``w`` ((input_size + hidden_size, 4 * hidden_size), applied
to ``concat(x_t, h_{t-1})``), with ``forget_bias`` added to f; ``DynamicGRUV2``'s are (r, z, h)
("rzh", or "zrh") with the reset gate applied after the hidden product.
"""

from __future__ import annotations

from typing import Any

import torch

from ..primitive import Primitive


def _only(owner: str, name: str, value: Any, supported: Any) -> None:
    if value != supported:
        raise NotImplementedError(
            f"{owner}: only {name}={supported!r} is provided by jisu. Received {name}={value!r}"
        )


class DynamicRNN(Primitive):
    """A one-layer LSTM over (num_step, batch, input_size) ``x``:
    ``DynamicRNN(forget_bias=0.0, cell_clip=-1.0)(x, w, b, seq_length, init_h, init_c)``
    returns ``(y, output_h, output_c, i, j, f, o, tanhct)``, each (num_step, batch,
    hidden_size) in ``x``'s dtype; ``seq_length`` must be None."""

    def __init__(
        self,
        cell_type: str = "LSTM",
        direction: str = "UNIDIRECTIONAL",
        cell_depth: int = 1,
        use_peephole: bool = False,
        keep_prob: float = 1.0,
        cell_clip: float = -1.0,
        num_proj: int = 0,
        time_major: bool = True,
        activation: str = "tanh",
        forget_bias: float = 0.0,
        is_training: bool = True,
    ) -> None:
        for name, value, supported in (
            ("cell_type", cell_type, "LSTM"),
            ("direction", direction, "UNIDIRECTIONAL"),
            ("cell_depth", cell_depth, 1),
            ("use_peephole", use_peephole, False),
            ("keep_prob", keep_prob, 1.0),
            ("num_proj", num_proj, 0),
            ("time_major", time_major, True),
            ("activation", activation, "tanh"),
        ):
            _only("DynamicRNN", name, value, supported)
        self.cell_clip, self.forget_bias = float(cell_clip), float(forget_bias)
        self.is_training = is_training

    def __call__(
        self,
        x: torch.Tensor,
        w: torch.Tensor,
        b: torch.Tensor,
        seq_length: Any = None,
        init_h: torch.Tensor | None = None,
        init_c: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, ...]:
        if seq_length is not None:
            raise NotImplementedError("DynamicRNN: seq_length must be None in jisu")
        if x.dim() != 3:
            raise ValueError(f"DynamicRNN: x must be (num_step, batch, input_size). Got {x.shape}")
        steps, batch, _ = x.shape
        hidden = w.shape[1] // 4
        dtype = torch.promote_types(x.dtype, torch.float32)
        zeros = x.new_zeros(batch, hidden, dtype=dtype)
        h = zeros if init_h is None else init_h.reshape(batch, hidden).to(dtype)
        c = zeros if init_c is None else init_c.reshape(batch, hidden).to(dtype)
        w, b = w.to(dtype), b.to(dtype)
        records: list[list[torch.Tensor]] = [[] for _ in range(7)]
        for t in range(steps):
            gates = torch.cat([x[t].to(dtype), h], dim=1) @ w + b
            i, j, f, o = gates.split(hidden, dim=1)
            i, j = torch.sigmoid(i), torch.tanh(j)
            f, o = torch.sigmoid(f + self.forget_bias), torch.sigmoid(o)
            c = f * c + i * j
            if self.cell_clip > 0:
                c = c.clamp(-self.cell_clip, self.cell_clip)
            tanhc = torch.tanh(c)
            h = o * tanhc
            for store, value in zip(records, (h, c, i, j, f, o, tanhc)):
                store.append(value)
        h_all, c_all, i, j, f, o, tanhc = (torch.stack(r).to(x.dtype) for r in records)
        return h_all, h_all, c_all, i, j, f, o, tanhc


class DynamicGRUV2(Primitive):
    """A one-layer GRU over (num_step, batch, input_size) ``x``: ``DynamicGRUV2(gate_order=
    "rzh")(x, weight_input, weight_hidden, bias_input, bias_hidden, seq_length, init_h)``
    with (input_size, 3 * hidden) and (hidden, 3 * hidden) weights returns ``(y, output_h,
    update, reset, new, hidden_new)``, each (num_step, batch, hidden)."""

    def __init__(
        self,
        direction: str = "UNIDIRECTIONAL",
        cell_depth: int = 1,
        keep_prob: float = 1.0,
        cell_clip: float = -1.0,
        num_proj: int = 0,
        time_major: bool = True,
        activation: str = "tanh",
        gate_order: str = "rzh",
        reset_after: bool = True,
        is_training: bool = True,
    ) -> None:
        for name, value, supported in (
            ("direction", direction, "UNIDIRECTIONAL"),
            ("cell_depth", cell_depth, 1),
            ("keep_prob", keep_prob, 1.0),
            ("num_proj", num_proj, 0),
            ("time_major", time_major, True),
            ("activation", activation, "tanh"),
            ("reset_after", reset_after, True),
        ):
            _only("DynamicGRUV2", name, value, supported)
        if gate_order not in ("rzh", "zrh"):
            raise ValueError(
                f"DynamicGRUV2: gate_order must be 'rzh' or 'zrh'. Received {gate_order!r}"
            )
        self.gate_order, self.cell_clip, self.is_training = gate_order, cell_clip, is_training

    def __call__(
        self,
        x: torch.Tensor,
        weight_input: torch.Tensor,
        weight_hidden: torch.Tensor,
        bias_input: torch.Tensor | None = None,
        bias_hidden: torch.Tensor | None = None,
        seq_length: Any = None,
        init_h: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, ...]:
        if seq_length is not None:
            raise NotImplementedError("DynamicGRUV2: seq_length must be None in jisu")
        steps, batch, _ = x.shape
        hidden = weight_hidden.shape[0]
        dtype = torch.promote_types(x.dtype, torch.float32)
        h = x.new_zeros(batch, hidden, dtype=dtype) if init_h is None else init_h.to(dtype)
        wi, wh = weight_input.to(dtype), weight_hidden.to(dtype)
        bi = 0 if bias_input is None else bias_input.to(dtype)
        bh = 0 if bias_hidden is None else bias_hidden.to(dtype)
        records: list[list[torch.Tensor]] = [[] for _ in range(5)]
        for t in range(steps):
            gi = x[t].to(dtype) @ wi + bi
            gh = h @ wh + bh
            (ai, bi_, ni), (ah, bh_, nh) = gi.split(hidden, 1), gh.split(hidden, 1)
            first, second = torch.sigmoid(ai + ah), torch.sigmoid(bi_ + bh_)
            r, z = (first, second) if self.gate_order == "rzh" else (second, first)
            n = torch.tanh(ni + r * nh)
            h = (1 - z) * n + z * h
            for store, value in zip(records, (h, z, r, n, nh)):
                store.append(value)
        y, update, reset, new, hidden_new = (torch.stack(r).to(x.dtype) for r in records)
        return y, y, update, reset, new, hidden_new


__all__ = ["DynamicGRUV2", "DynamicRNN"]
