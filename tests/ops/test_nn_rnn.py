"""jisu's ``DynamicRNN`` and ``DynamicGRUV2`` (Ascend-only in MindSpore, so no recorded
answers): checked against torch's own LSTM and GRU with the weights rearranged from
MindSpore's documented packing, (i, j, f, o) columns and (r, z, h) columns."""

from __future__ import annotations

import pytest
import torch

from jisu.ops import operations as P

T, B, IN, H = 5, 3, 4, 6


def _lstm_reference(x, w, b, h0, c0, forget_bias=0.0):
    i, j, f, o = (w[:, k * H : (k + 1) * H] for k in range(4))
    bi, bj, bf, bo = (b[k * H : (k + 1) * H] for k in range(4))
    lstm = torch.nn.LSTM(IN, H)
    with torch.no_grad():
        order = [i, f, j, o]  # torch packs (i, f, g, o)
        lstm.weight_ih_l0.copy_(torch.cat([g[:IN].T for g in order]))
        lstm.weight_hh_l0.copy_(torch.cat([g[IN:].T for g in order]))
        lstm.bias_ih_l0.copy_(torch.cat([bi, bf + forget_bias, bj, bo]))
        lstm.bias_hh_l0.zero_()
    return lstm(x, (h0, c0))


@pytest.mark.parametrize("forget_bias", [0.0, 1.0])
def test_dynamic_rnn_matches_torch_lstm(forget_bias: float) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(T, B, IN, generator=g)
    w = torch.randn(IN + H, 4 * H, generator=g) * 0.3
    b = torch.randn(4 * H, generator=g) * 0.1
    h0, c0 = torch.randn(1, B, H, generator=g), torch.randn(1, B, H, generator=g)
    y, out_h, out_c, i, j, f, o, tanhc = P.DynamicRNN(forget_bias=forget_bias)(
        x, w, b, None, h0, c0
    )
    want_y, (want_h, want_c) = _lstm_reference(x, w, b, h0, c0, forget_bias)
    torch.testing.assert_close(y, want_y.detach())
    torch.testing.assert_close(out_h[-1], want_h[0].detach())
    torch.testing.assert_close(out_c[-1], want_c[0].detach())
    torch.testing.assert_close(tanhc, torch.tanh(out_c))
    torch.testing.assert_close(y, o * tanhc)
    for gate in (i, f, o):
        assert gate.min() >= 0 and gate.max() <= 1
    assert y.shape == (T, B, H) and all(t.shape == (T, B, H) for t in (i, j, f, o))


def test_dynamic_rnn_runs_in_float16_and_trains() -> None:
    x = torch.randn(T, B, IN).half()
    w = (torch.randn(IN + H, 4 * H) * 0.3).requires_grad_(True)
    b = torch.zeros(4 * H)
    out = P.DynamicRNN()(
        x, w.half(), b.half(), None, torch.zeros(1, B, H).half(), torch.zeros(1, B, H).half()
    )
    assert out[0].dtype == torch.float16
    out[0].float().sum().backward()
    assert w.grad is not None and torch.isfinite(w.grad).all()


def test_dynamic_rnn_refuses_what_jisu_does_not_compute() -> None:
    with pytest.raises(NotImplementedError, match="use_peephole"):
        P.DynamicRNN(use_peephole=True)
    with pytest.raises(NotImplementedError, match="seq_length"):
        P.DynamicRNN()(
            torch.zeros(T, B, IN), torch.zeros(IN + H, 4 * H), torch.zeros(4 * H), torch.ones(B)
        )


def test_dynamic_gru_v2_matches_torch_gru() -> None:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(T, B, IN, generator=g)
    wi = torch.randn(IN, 3 * H, generator=g) * 0.3
    wh = torch.randn(H, 3 * H, generator=g) * 0.3
    bi, bh = torch.randn(3 * H, generator=g) * 0.1, torch.randn(3 * H, generator=g) * 0.1
    h0 = torch.randn(B, H, generator=g)
    y, out_h, update, reset, new, hidden_new = P.DynamicGRUV2()(x, wi, wh, bi, bh, None, h0)
    gru = torch.nn.GRU(IN, H)
    with torch.no_grad():  # torch packs (r, z, n) like MindSpore's "rzh"
        gru.weight_ih_l0.copy_(wi.T)
        gru.weight_hh_l0.copy_(wh.T)
        gru.bias_ih_l0.copy_(bi)
        gru.bias_hh_l0.copy_(bh)
        want, _ = gru(x, h0[None])
    torch.testing.assert_close(y, want)
    torch.testing.assert_close(out_h, want)
    assert all(t.shape == (T, B, H) for t in (update, reset, new, hidden_new))
    # "zrh" reads the first block as the update gate
    swapped_wi = torch.cat([wi[:, H : 2 * H], wi[:, :H], wi[:, 2 * H :]], 1)
    swapped_wh = torch.cat([wh[:, H : 2 * H], wh[:, :H], wh[:, 2 * H :]], 1)
    swapped_bi = torch.cat([bi[H : 2 * H], bi[:H], bi[2 * H :]])
    swapped_bh = torch.cat([bh[H : 2 * H], bh[:H], bh[2 * H :]])
    y2 = P.DynamicGRUV2(gate_order="zrh")(
        x, swapped_wi, swapped_wh, swapped_bi, swapped_bh, None, h0
    )[0]
    torch.testing.assert_close(y2, want)
