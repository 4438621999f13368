"""jisu.nn's LSTM/GRU/RNN and their cells against MindSpore 2.10's recorded answers
(tests/fixtures/ms_rnn, made by its make_fixtures.py with MindSpore): parameter names, shapes
and order (2.10's and 2.0.0's), outputs, final states and gradients of a seeded loss with the
same weights, loaded by MindSpore name through ``load_param_into_net``; a checkpoint MindSpore
wrote loads. Then a tiny LSTM text classifier (MindSpore's sentiment tutorial's shape) trains
through ``jisu.Model``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import jisu
from jisu import nn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ms_rnn"
META = json.loads((FIXTURES / "cases.json").read_text())
CASES = META["cases"]
NAMES_200 = json.loads((FIXTURES / "names_2.0.0.json").read_text())
ARRAYS = dict(np.load(FIXTURES / "rnn.npz"))
LAYERS = sorted(n for n, c in CASES.items() if not c["kind"].endswith("Cell"))
CELLS = sorted(n for n, c in CASES.items() if c["kind"].endswith("Cell"))


def t(key: str) -> torch.Tensor:
    return torch.from_numpy(ARRAYS[key])


def build(name: str) -> torch.nn.Module:
    """The jisu layer of a case, holding the case's MindSpore weights (loaded by name)."""
    spec = CASES[name]
    net = getattr(nn, spec["kind"])(**spec["kwargs"])
    weights = {p["name"]: t(f"{name}/param/{p['name']}") for p in spec["params"]}
    not_loaded, unused = jisu.load_param_into_net(net, weights, strict_load=True)
    assert not_loaded == [] and unused == []
    net.set_train(False)
    return net


def close(got: torch.Tensor, key: str) -> None:
    np.testing.assert_allclose(got.detach().numpy(), ARRAYS[key], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_parameter_names_order_and_shapes(name: str) -> None:
    net = getattr(nn, CASES[name]["kind"])(**CASES[name]["kwargs"])
    want = [[p["name"], p["shape"]] for p in CASES[name]["params"]]
    assert want == NAMES_200[name]  # MindSpore 2.0.0 names them the same
    params = net.trainable_params()
    assert [[p.name, list(p.shape)] for p in params] == want
    assert [n for n, _ in net.parameters_and_names()] == [n for n, _ in want]


@pytest.mark.parametrize("name", LAYERS)
def test_layer_matches_mindspore(name: str) -> None:
    spec = CASES[name]
    net = build(name)
    is_lstm = spec["kind"] == "LSTM"
    x = t(f"{name}/x").requires_grad_(True)
    hx = None
    if spec["hx"]:
        hx = (t(f"{name}/h0"), t(f"{name}/c0")) if is_lstm else t(f"{name}/h0")
    seq = None if spec["seq_length"] is None else torch.tensor(spec["seq_length"])
    out, state = net(x, hx, seq)
    close(out, f"{name}/output")
    h_n = state[0] if is_lstm else state
    close(h_n, f"{name}/h_n")
    loss = (out * t(f"{name}/w_out")).sum() + (h_n * t(f"{name}/w_h")).sum()
    if is_lstm:
        close(state[1], f"{name}/c_n")
        loss = loss + (state[1] * t(f"{name}/w_c")).sum()
    loss.backward()
    close(x.grad, f"{name}/grad/x")
    for name_, param in net.parameters_and_names():
        close(param.grad, f"{name}/grad/{name_}")


@pytest.mark.parametrize("name", CELLS)
def test_cell_matches_mindspore(name: str) -> None:
    net = build(name)
    is_lstm = CASES[name]["kind"] == "LSTMCell"
    x = t(f"{name}/x").requires_grad_(True)
    h0 = t(f"{name}/h0")
    out = net(x, (h0, t(f"{name}/c0")) if is_lstm else h0)
    if is_lstm:
        close(out[0], f"{name}/h_n")
        close(out[1], f"{name}/c_n")
        loss = (out[0] * t(f"{name}/w_h")).sum() + (out[1] * t(f"{name}/w_c")).sum()
    else:
        close(out, f"{name}/h_n")
        loss = (out * t(f"{name}/w_h")).sum()
    loss.backward()
    close(x.grad, f"{name}/grad/x")
    for name_, param in net.parameters_and_names():
        close(param.grad, f"{name}/grad/{name_}")


def test_is_torch_layer_with_torch_state_dict() -> None:
    net = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    assert isinstance(net, torch.nn.LSTM) and isinstance(net, nn.Cell)
    assert set(net.state_dict()) == {n for n, _ in net.parameters_and_names()}
    out, (h, c) = net(torch.randn(5, 2, 3))
    assert out.shape == (5, 2, 8) and h.shape == c.shape == (4, 2, 4)


def test_nested_names_and_checkpoint_round_trip(tmp_path: Path) -> None:
    class Net(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.GRU(3, 4, bidirectional=True)
            self.fc = nn.Dense(8, 2)

        def construct(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(self.rnn(x)[0])

    net = Net()
    names = [p.name for p in net.trainable_params()]
    assert names[:4] == [
        "rnn.weight_ih_l0",
        "rnn.weight_ih_l0_reverse",
        "rnn.weight_hh_l0",
        "rnn.weight_hh_l0_reverse",
    ]
    path = str(tmp_path / "net.ckpt")
    jisu.save_checkpoint(net, path)
    other = Net()
    assert jisu.load_param_into_net(other, jisu.load_checkpoint(path)) == ([], [])
    x = torch.randn(4, 2, 3)
    torch.testing.assert_close(other(x), net(x))


def test_rnn_cell_base_subclass_like_mindocr() -> None:
    """mindocr subclasses ``mindspore.nn.layer.rnn_cells.RNNCellBase`` with its own GRU step;
    the weights it gets are the GRU cell's (same names, shapes), so its step equals GRUCell's."""
    from jisu.nn.layer.rnn_cells import RNNCellBase

    class MyGRUCell(RNNCellBase):
        def __init__(self, input_size: int, hidden_size: int, has_bias: bool = True) -> None:
            super().__init__(input_size, hidden_size, has_bias, num_chunks=3)

        def construct(self, x: torch.Tensor, hx: torch.Tensor) -> torch.Tensor:
            gi = x @ self.weight_ih.T + self.bias_ih
            gh = hx @ self.weight_hh.T + self.bias_hh
            i_r, i_i, i_n = gi.chunk(3, 1)
            h_r, h_i, h_n = gh.chunk(3, 1)
            reset, update = torch.sigmoid(i_r + h_r), torch.sigmoid(i_i + h_i)
            new = torch.tanh(i_n + reset * h_n)
            return new + update * (hx - new)

    mine, ref = MyGRUCell(4, 5), nn.GRUCell(4, 5)
    assert [(p.name, p.shape) for p in mine.trainable_params()] == [
        (p.name, p.shape) for p in ref.trainable_params()
    ]
    assert jisu.load_param_into_net(ref, mine.parameters_dict()) == ([], [])
    x, h = torch.randn(3, 4), torch.randn(3, 5)
    torch.testing.assert_close(mine(x, h), ref(x, h))
    bound = 1 / 5**0.5  # MindSpore's U(-1/sqrt(hidden), 1/sqrt(hidden))
    assert all(float(p.detach().abs().max()) <= bound for p in mine.trainable_params())


def test_float16_parameters_and_inputs() -> None:
    net = nn.GRU(3, 4, bidirectional=True, dtype=jisu.float16)
    assert net.weight_ih_l0.dtype == torch.float16
    net32 = nn.GRU(3, 4, bidirectional=True)
    net32.to_float(jisu.float16)
    out, h = net32(torch.randn(5, 2, 3, dtype=torch.float16), None, torch.tensor([5, 3]))
    assert out.dtype == h.dtype == torch.float16
    assert out.shape == (5, 2, 8) and float(out[3:, 1].detach().abs().max()) == 0.0


def test_float16_input_to_float32_parameters() -> None:
    """MindSpore casts the weights to x's dtype; here x runs in the weights' dtype and the
    results come back in x's."""
    net = nn.LSTM(3, 4, bidirectional=True)
    x = torch.randn(5, 2, 3)
    hx = (torch.zeros(2, 2, 4, dtype=torch.float16), torch.zeros(2, 2, 4, dtype=torch.float16))
    out, (h, c) = net(x.half(), hx, torch.tensor([5, 2]))
    assert out.dtype == h.dtype == c.dtype == torch.float16
    want, _ = net(x.half().float(), None, torch.tensor([5, 2]))
    torch.testing.assert_close(out.float(), want, atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_batch_first_with_a_zero_length_equals_time_major(kind: str) -> None:
    first = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    major = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True)
    major.load_state_dict(first.state_dict())
    x, lengths = torch.randn(3, 5, 3), torch.tensor([5, 0, 2])
    h0 = torch.randn(4, 3, 4)
    hx = (h0, torch.randn(4, 3, 4)) if kind == "LSTM" else h0
    out, state = first(x, hx, lengths)
    want_out, want_state = major(x.transpose(0, 1), hx, lengths)
    torch.testing.assert_close(out, want_out.transpose(0, 1))
    torch.testing.assert_close(state, want_state)
    assert float(out[1].detach().abs().max()) == 0.0 and float(out[2, 2:].detach().abs().max()) == 0
    h_n = state[0] if kind == "LSTM" else state
    torch.testing.assert_close(h_n[:, 1], h0[:, 1])  # a zero length keeps its initial state


def test_seq_length_errors() -> None:
    net = nn.LSTM(3, 4)
    x = torch.randn(5, 2, 3)
    with pytest.raises(TypeError, match="seq_length must be an int32 or int64"):
        net(x, None, torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="batch size of x and seq_length"):
        net(x, None, torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"seq_length must be in \[0, 5\]"):
        net(x, None, torch.tensor([6, 2]))
    with pytest.raises(TypeError, match="hx must be a tuple"):
        net(x, torch.zeros(1, 2, 4))
    with pytest.raises(TypeError, match="x must be a floating-point Tensor"):
        net(x.long())


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: nn.LSTM(3, 4, dropout=0), TypeError, "LSTM: dropout must be a float"),
        (lambda: nn.GRU(3, 4, dropout=1.0), ValueError, r"GRU: dropout must be in \[0, 1\)"),
        (lambda: nn.RNN(3, 0), ValueError, "RNN: hidden_size must be > 0"),
        (lambda: nn.RNN(3, 4, nonlinearity="sigmoid"), ValueError, "nonlinearity"),
        (lambda: nn.LSTM(3, 4, has_bias=1), TypeError, "LSTM: has_bias must be a bool"),
        (lambda: nn.LSTMCell(3.0, 4), TypeError, "LSTMCell: input_size must be an int"),
        (lambda: nn.RNNCell(3, 4, nonlinearity="gelu"), ValueError, "nonlinearity"),
    ],
)
def test_argument_errors(make, error, match) -> None:
    with pytest.raises(error, match=match):
        make()


class SentimentNet(nn.Cell):
    """MindSpore's sentiment tutorial's shape: Embedding -> bidirectional LSTM -> Dense on the
    last hidden states of both directions."""

    def __init__(self, vocab: int, embed: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.rnn = nn.LSTM(embed, hidden, num_layers=2, bidirectional=True, batch_first=True,
                           dropout=0.1)  # fmt: skip
        self.fc = nn.Dense(hidden * 2, classes)

    def construct(self, ids: torch.Tensor) -> torch.Tensor:
        _, (h_n, _) = self.rnn(self.embedding(ids))
        return self.fc(torch.cat((h_n[-2], h_n[-1]), axis=1))


def test_loads_a_mindspore_checkpoint() -> None:
    """sentiment.ckpt, written by MindSpore 2.10's save_checkpoint from an Embedding ->
    bidirectional LSTM (seq_length) -> Dense net, loads by name and gives MindSpore's logits."""

    class Sentiment(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(20, 6)
            self.rnn = nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True)
            self.fc = nn.Dense(10, 2)

        def construct(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
            _, (h_n, _) = self.rnn(self.embedding(ids), seq_length=lengths)
            return self.fc(torch.cat((h_n[-2], h_n[-1]), 1))

    net = Sentiment()
    ckpt = jisu.load_checkpoint(str(FIXTURES / "sentiment.ckpt"))
    assert list(ckpt) == [p.name for p in net.trainable_params()]
    assert jisu.load_param_into_net(net, ckpt, strict_load=True) == ([], [])
    net.set_train(False)
    close(net(t("sentiment/ids"), t("sentiment/lengths")), "sentiment/logits")


def test_lstm_text_classifier_trains_through_model() -> None:
    import jisu.dataset as ds

    rng = np.random.default_rng(0)
    ids = rng.integers(2, 20, size=(64, 8)).astype(np.int32)
    labels = (ids == 7).any(axis=1).astype(np.int32)  # positive: a "7" somewhere
    data = ds.NumpySlicesDataset({"ids": ids, "label": labels}, shuffle=False).batch(16)
    torch.manual_seed(0)
    net = SentimentNet(20, 8, 8, 2)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = jisu.Model(net, loss_fn, nn.Adam(net.trainable_params(), learning_rate=0.05))

    def mean_loss() -> float:
        net.set_train(False)
        with torch.no_grad():
            logits = net(torch.from_numpy(ids))
            return float(loss_fn(logits, torch.from_numpy(labels).long()))

    before = mean_loss()
    model.train(6, data, dataset_sink_mode=False)
    after = mean_loss()
    assert after < 0.6 * before, (before, after)
