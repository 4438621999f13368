"""The train step built by wrapping: data_parallel(step) and CompiledStep(step) are steps
that leave the step they wrap as it was, and wrap_train_step composes them."""

from __future__ import annotations

import logging
import re

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import jisu
from jisu import amp
from jisu.train import steps
from jisu.train.steps import CompiledStep, wrap_train_step
from tests.train.test_model import _BrokenBackward, data, losses_of, model


def built_step():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    return amp.build_train_network(net, opt, nn.CrossEntropyLoss())


def batch():
    torch.manual_seed(1)
    return torch.randn(32, 8), torch.randint(0, 3, (32,))


@pytest.fixture(autouse=True)
def compiled_from_the_first_step():
    """These tests are about compiling: GRAPH_MODE compiles at the first step (the rule that
    chooses when to compile has its own tests, test_graph_policy.py)."""
    jisu.set_context(graph_compile="always")


@pytest.fixture
def graph_mode():
    jisu.set_context(mode=jisu.GRAPH_MODE)
    yield
    jisu.set_context(mode=jisu.PYNATIVE_MODE)


@pytest.fixture
def counting_compile(monkeypatch):
    """torch.compile replaced by a wrapper counting the calls of what it "compiled"."""
    calls = []

    def fake_compile(fn, **_):
        def compiled(*inputs):
            calls.append(1)
            return fn(*inputs)

        return compiled

    monkeypatch.setattr(torch, "compile", fake_compile)
    return calls


def test_with_forward_gives_a_new_step_and_leaves_the_old_one(counting_compile):
    step = built_step()
    forward = step.forward_fn
    compiled = CompiledStep(step)
    assert step.forward_fn is forward and compiled.eager is step
    assert compiled.compiled is not step and compiled.compiled.optimizer is step.optimizer
    assert compiled.network is step.network and compiled.loss_scale_manager is None
    compiled(*batch())
    assert counting_compile == [1] and compiled.is_compiled


def test_a_failing_compile_falls_back_once_and_stays_eager(monkeypatch, graph_mode):
    tries = []

    def broken_compile(fn, **_):
        def compiled(*inputs):
            tries.append(1)
            return _BrokenBackward.apply(fn(*inputs))

        return compiled

    monkeypatch.setattr(torch, "compile", broken_compile)
    m = model()
    assert isinstance(m.train_network, CompiledStep) and m.train_network.is_compiled
    with pytest.warns(UserWarning, match="torch.compile failed"):
        m.train(2, data()[0])
    assert tries == [1] and not m.train_network.is_compiled  # never tried again


def test_the_wrappers_compose_data_parallel_then_compile(tmp_path, monkeypatch, graph_mode):
    """DDP over a one-process gloo group (what a CPU test can run): the composed step is the
    compiled one over the data-parallel one over the built step, which stays as it was; it
    gives the plain step's update (one rank averages with itself)."""
    ran = []

    class Recording(DistributedDataParallel):
        def forward(self, *inputs, **kwargs):
            ran.append(self.module)
            return super().forward(*inputs, **kwargs)

    monkeypatch.setattr(steps, "DistributedDataParallel", Recording)
    monkeypatch.setattr(torch, "compile", lambda fn, **_: fn)  # "compiles" to itself
    monkeypatch.setattr(steps.distributed, "get_group_size", lambda: 2)
    store = f"file://{tmp_path / 'store'}"
    dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
    try:
        step, plain = built_step(), built_step()
        forward = step.forward_fn
        composed = wrap_train_step(step, nn.CrossEntropyLoss(), torch.device("cpu"))
        assert isinstance(composed, CompiledStep) and composed.is_compiled
        assert step.forward_fn is forward  # the built step is untouched
        assert composed.eager is not step and composed.eager.network is step.network
        for _ in range(3):
            assert float(composed(*batch())) == pytest.approx(float(plain(*batch())), rel=1e-6)
        assert ran == [step.network] * 3  # every step went through DDP
        for a, b in zip(step.network.parameters(), plain.network.parameters()):
            torch.testing.assert_close(a, b)
    finally:
        dist.destroy_process_group()


def test_pynative_leaves_the_built_step_unwrapped():
    step = built_step()
    assert wrap_train_step(step, nn.CrossEntropyLoss(), torch.device("cpu")) is step


def test_graph_mode_runs_the_compiled_step(counting_compile, graph_mode):
    losses = losses_of(lambda **k: model().train(1, data()[0], **k))
    assert len(counting_compile) == len(losses) == 5


def test_the_compile_is_logged_before_and_after_the_first_step(counting_compile, caplog):
    """A job's log (no terminal, no progress bar) says that the first step compiles."""
    compiled = CompiledStep(built_step())
    with caplog.at_level(logging.INFO, logger="jisu.train.steps"):
        compiled(*batch())
        compiled(*batch())  # proven: nothing more
    messages = [r.getMessage() for r in caplog.records if r.name == "jisu.train.steps"]
    assert len(messages) == 2, messages
    assert messages[0].startswith("GRAPH_MODE: compiling the train step (torch.compile)")
    assert re.fullmatch(r"GRAPH_MODE: compiling step done in [0-9.]+ s \(compiled\)", messages[1])


def test_a_bad_batch_at_the_first_compiled_step_is_not_taken_for_a_compile_failure(
    counting_compile, recwarn
):
    compiled = CompiledStep(built_step())
    wrong = torch.randn(32, 5), torch.randint(0, 3, (32,))  # 5 features where 8 are expected
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        compiled(*wrong)
    assert not [w for w in recwarn if "torch.compile failed" in str(w.message)]
    assert compiled.is_compiled and not compiled.proven  # the next call compiles again
    loss = compiled(*batch())
    assert torch.isfinite(loss) and compiled.is_compiled and compiled.proven
