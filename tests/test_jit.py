"""``jisu.jit`` / ``ms_function``: same values and gradients as the plain function; compiled
only in GRAPH_MODE on CUDA (the documented rule), eager otherwise."""

from __future__ import annotations

import pytest
import torch

import jisu
from jisu import _jit as jit_module


def plain(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return (torch.tanh(x @ w) ** 2).sum()


@pytest.fixture
def compile_calls(monkeypatch):
    """torch.compile replaced by a recorder that returns the function itself."""
    calls = []

    def fake_compile(fn, **kwargs):
        calls.append(kwargs)
        return fn

    monkeypatch.setattr(torch, "compile", fake_compile)
    return calls


def _values_and_grads(fn):
    torch.manual_seed(0)
    x, w = torch.randn(4, 3), torch.randn(3, 2, requires_grad=True)
    out = fn(x, w)
    (grad,) = torch.autograd.grad(out, w)
    return out.detach(), grad


@pytest.mark.parametrize(
    "decorate",
    [
        jisu.jit,
        jisu.jit(),
        jisu.jit(jit_config={"jit_level": "O1"}),
        jisu.ms_function,
        lambda fn: jisu.jit(fn, input_signature=None),
    ],
    ids=["bare", "called", "jit_config", "ms_function", "fn_argument"],
)
def test_the_decorated_function_gives_the_same_values_and_gradients(decorate):
    want = _values_and_grads(plain)
    got = _values_and_grads(decorate(plain))
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert decorate(plain).__name__ == "plain"


def test_in_graph_mode_too(compile_calls):
    jisu.set_context(mode=jisu.GRAPH_MODE)
    try:
        got = _values_and_grads(jisu.jit(plain))
    finally:
        jisu.set_context(mode=jisu.PYNATIVE_MODE)
    want = _values_and_grads(plain)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert compile_calls == []  # CPU tensors: eager


def test_graph_mode_on_cuda_compiles_once(compile_calls, monkeypatch):
    monkeypatch.setattr(jit_module, "_on_cuda", lambda args, kwargs: True)
    fn = jisu.jit(dynamic=1, fullgraph=True)(plain)
    fn(torch.ones(2, 2), torch.ones(2, 2))  # PYNATIVE_MODE: eager
    assert compile_calls == []
    jisu.set_context(mode=jisu.GRAPH_MODE)
    try:
        fn(torch.ones(2, 2), torch.ones(2, 2))
        fn(torch.ones(2, 2), torch.ones(2, 2))
    finally:
        jisu.set_context(mode=jisu.PYNATIVE_MODE)
    assert compile_calls == [{"dynamic": True, "fullgraph": True}]


def test_a_failed_compile_warns_and_runs_eagerly(monkeypatch):
    def broken(*args, **kwargs):
        raise torch._dynamo.exc.Unsupported("not this one")

    monkeypatch.setattr(torch, "compile", lambda fn, **kwargs: broken)
    monkeypatch.setattr(jit_module, "_on_cuda", lambda args, kwargs: True)
    fn = jisu.jit(plain)
    x, w = torch.ones(2, 2), torch.ones(2, 2)
    jisu.set_context(mode=jisu.GRAPH_MODE)
    try:
        with pytest.warns(RuntimeWarning, match="torch.compile failed"):
            assert torch.equal(fn(x, w), plain(x, w))
        assert torch.equal(fn(x, w), plain(x, w))  # eager from then on, no second warning
    finally:
        jisu.set_context(mode=jisu.PYNATIVE_MODE)


class Net(jisu.nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.dense = jisu.nn.Dense(3, 2)

    @jisu.jit
    def construct(self, x):
        return self.dense(x).relu().sum()


def test_on_a_cells_construct():
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(5, 3)
    out = net(x)
    out.backward()
    want = (net.dense(x).relu().sum()).detach()
    grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    net.dense(x).relu().sum().backward()
    assert torch.equal(out.detach(), want)
    assert all(torch.equal(a, p.grad) for a, p in zip(grads, net.parameters(), strict=True))


def test_jit_checks_its_arguments():
    with pytest.raises(TypeError, match="jit: fn"):
        jisu.jit(3)
    with pytest.raises(TypeError, match="fullgraph"):
        jisu.jit(fullgraph=1)
