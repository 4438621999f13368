"""jisu.nn's MultiheadAttention and transformer layers against MindSpore 2.10's recorded answers
(tests/fixtures/ms_transformer, made by its make_fixtures.py with MindSpore): parameter names,
shapes and order (2.10's; 2.0.0's differ only by ``linear1``/``linear2`` for
``dense1``/``dense2``), outputs, attention weights and gradients of a seeded loss with the same
weights loaded by MindSpore name through ``load_param_into_net``; masks bool and float,
batch_first, unbatched input, kdim/vdim, add_bias_kv, add_zero_attn, norm_first, gelu."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import jisu
from jisu import nn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ms_transformer"
CASES = json.loads((FIXTURES / "cases.json").read_text())["cases"]
NAMES_200 = json.loads((FIXTURES / "names_2.0.0.json").read_text())
ARRAYS = dict(np.load(FIXTURES / "transformer.npz"))


def t(key: str) -> torch.Tensor:
    return torch.from_numpy(ARRAYS[key])


def make(kind: str, kwargs: dict) -> torch.nn.Module:
    kwargs = dict(kwargs)
    if kind in ("TransformerEncoder", "TransformerDecoder"):
        layers, norm = kwargs.pop("num_layers"), kwargs.pop("norm")
        layer = getattr(nn, kind + "Layer")(**kwargs)
        norm_cell = nn.LayerNorm((kwargs["d_model"],)) if norm else None
        return getattr(nn, kind)(layer, layers, norm_cell)
    return getattr(nn, kind)(**kwargs)


def build(name: str) -> torch.nn.Module:
    spec = CASES[name]
    net = make(spec["kind"], spec["kwargs"])
    weights = {p["name"]: t(f"{name}/param/{p['name']}") for p in spec["params"]}
    assert jisu.load_param_into_net(net, weights, strict_load=True) == ([], [])
    net.set_train(False)
    return net


def close(got: torch.Tensor, key: str) -> None:
    np.testing.assert_allclose(got.detach().numpy(), ARRAYS[key], rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_parameter_names_order_and_shapes(name: str) -> None:
    spec = CASES[name]
    net = make(spec["kind"], spec["kwargs"])
    want = [[p["name"], p["shape"]] for p in spec["params"]]
    assert [[p.name, list(p.shape)] for p in net.trainable_params()] == want
    old = [[n.replace("dense1", "linear1").replace("dense2", "linear2"), s] for n, s in want]
    assert old == NAMES_200[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mindspore(name: str) -> None:
    spec = CASES[name]
    net = build(name)
    inputs = {k: t(f"{name}/{k}") for k in spec["inputs"]}
    first = spec["order"][0]
    inputs[first].requires_grad_(True)
    kwargs = {k: t(f"{name}/{k}") for k in spec["masks"]} | spec["call"]
    out = net(*[inputs[k] for k in spec["order"]], **kwargs)
    outs = list(out) if isinstance(out, tuple) else [out]
    assert len(outs) == spec["outputs"]  # need_weights=False: MindSpore's 1-tuple
    loss = 0
    for i, o in enumerate(outs):
        close(o, f"{name}/out{i}")
        loss = loss + (o * t(f"{name}/w{i}")).sum()
    loss.backward()
    close(inputs[first].grad, f"{name}/grad/{first}")
    for param_name, param in net.parameters_and_names():
        close(param.grad, f"{name}/grad/{param_name}")


def test_self_attention_uses_torch_layer_and_is_torch_module() -> None:
    mha = nn.MultiheadAttention(8, 2)
    assert isinstance(mha, torch.nn.MultiheadAttention)
    x = torch.randn(4, 3, 8)
    out, weights = mha(x, x, x)
    assert out.shape == (4, 3, 8) and weights.shape == (3, 4, 4)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 4))


def test_linear_names_of_mindspore_2_0_read_the_dense_cells() -> None:
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    assert layer.linear1 is layer.dense1 and layer.linear2 is layer.dense2


def test_encoder_layers_are_copies_of_the_given_layer() -> None:
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    encoder = nn.TransformerEncoder(layer, 2)
    for copy in encoder.layers:
        assert copy is not layer
        torch.testing.assert_close(copy.dense1.weight, layer.dense1.weight)
    assert copy.dense1.weight is not encoder.layers[0].dense1.weight


def test_transformer_default_init_is_xavier_uniform() -> None:
    torch.manual_seed(0)
    net = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                         dim_feedforward=32)  # fmt: skip
    w = net.encoder.layers[0].dense1.weight.detach()  # (32, 16): bound sqrt(6 / 48)
    assert float(w.abs().max()) <= (6 / 48) ** 0.5
    assert float(w.abs().max()) > 0.9 * (6 / 48) ** 0.5


def test_training_step_through_model() -> None:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)

    class Net(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = nn.TransformerEncoder(layer, 2)
            self.head = nn.Dense(8, 2)

        def construct(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.encoder(x).mean(1))

    net = Net()
    x = torch.randn(32, 5, 8)
    y = (x[:, :, 0].sum(1) > 0).long()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), nn.Adam(net.trainable_params(), 0.01))
    step.set_train()
    first = float(step(x, y))
    for _ in range(20):
        last = float(step(x, y))
    assert last < 0.5 * first


@pytest.mark.parametrize(
    ("make_", "error", "match"),
    [
        (lambda: nn.MultiheadAttention(8, 3), ValueError, "embed_dim must be divisible"),
        (lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh"), ValueError, "activation"),
        (lambda: nn.TransformerEncoder(nn.Dense(2, 2), 2), TypeError, "TransformerEncoderLayer"),
    ],
)
def test_argument_errors(make_, error, match) -> None:
    with pytest.raises(error, match=match):
        make_()


def test_bool_key_padding_mask_with_a_float_attn_mask_masks() -> None:
    """MindSpore 2.10 adds a bool key padding mask to a float attention mask as 0/1, so its
    True entries are not masked there; jisu keeps the documented meaning (True: ignored)."""
    mha = nn.MultiheadAttention(8, 2).set_train(False)
    x = torch.randn(4, 2, 8)
    padding = torch.tensor([[False] * 4, [False, False, True, True]])
    additive = torch.zeros(2, 4).masked_fill(padding, float("-inf"))
    zeros = torch.zeros(4, 4)
    got = mha(x, x, x, key_padding_mask=padding, attn_mask=zeros)
    want = mha(x, x, x, key_padding_mask=additive, attn_mask=zeros)
    torch.testing.assert_close(got, want)
    assert float(got[1][1, :, 2:].detach().abs().max()) == 0.0


def test_uint8_attn_mask_reads_as_bool() -> None:
    mha = nn.MultiheadAttention(8, 2).set_train(False)
    x = torch.randn(4, 2, 8)
    causal = torch.ones(4, 4).triu(1)
    got = mha(x, x, x, attn_mask=causal.to(torch.uint8))
    want = mha(x, x, x, attn_mask=causal.bool())
    torch.testing.assert_close(got, want)


def test_call_errors() -> None:
    mha = nn.MultiheadAttention(8, 2)
    x = torch.randn(4, 2, 8)
    with pytest.raises(ValueError, match="key_padding_mask must be a bool or floating"):
        mha(x, x, x, key_padding_mask=torch.zeros(2, 4, dtype=torch.int32))
    net = nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(ValueError, match="d_model=8"):
        net(torch.randn(3, 2, 8), torch.randn(3, 2, 4))
