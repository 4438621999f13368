"""GRAPH_MODE's rule: compile only when the run pays the compile back, keep the compiled step
only when it is measured faster. Times are injected (a fake clock that the fake steps
advance), never measured: the verdicts hold on any machine."""

from __future__ import annotations

import json
import logging
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import jisu
from jisu import amp
from jisu.train import graph_policy
from jisu.train.graph_policy import (
    MEASURED_STEPS,
    NOISE,
    PRIORS,
    WARMUP_STEPS,
    Expectation,
    GraphModeChooser,
    GraphRecords,
    decide,
)
from jisu.train.steps import CompiledStep

FIRST = WARMUP_STEPS + MEASURED_STEPS  # eager steps before the choice


# ------------------------------------------------------------------ the rule
@given(
    eager_ms=st.floats(0.1, 1000.0),
    remaining=st.integers(0, 10**7),
    compile_s=st.floats(0.1, 1000.0),
    speedup=st.floats(0.2, 5.0),
)
def test_compiles_exactly_when_the_saved_time_exceeds_the_compile_time(
    eager_ms, remaining, compile_s, speedup
):
    eager = eager_ms / 1e3
    saved = remaining * (eager - eager / speedup)  # the time saved: a formula of its own
    decision = decide(eager, remaining, Expectation(compile_s, speedup, "prior"))
    if not math.isclose(saved, compile_s, rel_tol=1e-9):
        assert decision.compile == (saved > compile_s)
    assert decision.reason.startswith("compiling" if decision.compile else "running eagerly")


def test_the_reason_gives_the_figures_and_the_payback():
    # 20 ms eager, 2x faster compiled: 10 ms saved per step, 30 s of compile: 3000 steps
    d = decide(0.020, 2000, Expectation(30.0, 2.0, "record"))
    assert not d.compile
    assert "20.0 ms" in d.reason and "2000 steps left" in d.reason and "30 s" in d.reason
    assert "2.00x" in d.reason and "(record)" in d.reason
    assert "pay back only after 3000 steps" in d.reason
    d = decide(0.020, 3001, Expectation(30.0, 2.0, "record"))
    assert d.compile and "pays back after 3000 steps" in d.reason


def test_a_step_no_faster_compiled_is_never_compiled():
    d = decide(1.0, 10**9, Expectation(0.001, 1.0, "record"))
    assert not d.compile and "never pay back" in d.reason
    assert not decide(1.0, 10**9, Expectation(0.001, 0.5, "record")).compile


def test_the_priors_keep_short_cpu_runs_eager():
    """jisu train's default run (10 epochs of 23 steps at ~25 ms) and the LeNet tutorial
    (1875 steps at ~5 ms, 20 epochs) do not pay a cold CPU compile back."""
    assert not decide(0.025, 230, PRIORS["cpu"]).compile
    assert not decide(0.005, 20 * 1875, PRIORS["cpu"]).compile
    assert decide(0.100, 10**6, PRIORS["cpu"]).compile  # a long run of heavy steps does


# ------------------------------------------------------------------ the chooser
def run_chooser(chooser, eager_s, compile_s, compiled_s, steps):
    """Drive ``chooser`` for ``steps`` steps with the given step times; the steps it ran."""
    ran = []
    for _ in range(steps):
        kind = chooser.next_step()
        ran.append(kind)
        if not chooser.measuring:
            continue
        seconds = {"eager": eager_s, "compile": compile_s + eager_s, "compiled": compiled_s}
        chooser.observe(seconds[kind])
    return ran


def test_a_short_run_stays_eager(tmp_path):
    chooser = GraphModeChooser("cpu", GraphRecords(str(tmp_path / "r.json")))
    chooser.plan(100)
    ran = run_chooser(chooser, 0.01, 55.0, 0.005, 100)
    assert ran == ["eager"] * 100
    assert chooser.decision is not None and not chooser.decision.compile
    assert not (tmp_path / "r.json").exists()  # nothing compiled: nothing to record


def test_a_long_run_compiles_and_keeps_a_faster_step(tmp_path):
    records = GraphRecords(str(tmp_path / "r.json"))
    chooser = GraphModeChooser("cpu", records)
    chooser.key = "net"
    chooser.plan(10**6)
    ran = run_chooser(chooser, 0.100, 30.0, 0.050, 50)
    assert ran == ["eager"] * FIRST + ["compile"] + ["compiled"] * (50 - FIRST - 1)
    assert chooser.compile_s == pytest.approx(30.0)
    assert "keeping the compiled step" in chooser.verdict
    expected = records.expectation("net")
    assert expected.speedup == pytest.approx(2.0) and expected.compile_s == pytest.approx(30.0)


def test_a_compiled_step_measured_slower_goes_back_to_eager_and_is_remembered(tmp_path):
    records = GraphRecords(str(tmp_path / "r.json"))
    chooser = GraphModeChooser("cpu", records)
    chooser.key = "net"
    chooser.plan(10**6)
    slower = 0.100 * (1 + NOISE) * 1.01
    ran = run_chooser(chooser, 0.100, 30.0, slower, 30)
    compiled_steps = 1 + MEASURED_STEPS  # the compiling step, then the measured ones
    assert ran == ["eager"] * FIRST + ["compile"] + ["compiled"] * MEASURED_STEPS + ["eager"] * (
        30 - FIRST - compiled_steps
    )
    assert "running eagerly from now on" in chooser.verdict
    # the next run of the same network: the record says compiling loses, whatever the length
    again = GraphModeChooser("cpu", records)
    again.key = "net"
    again.plan(10**9)
    assert run_chooser(again, 0.100, 30.0, slower, 20) == ["eager"] * 20
    assert "never pay back" in again.decision.reason and "(record)" in again.decision.reason


def test_a_compiled_step_within_noise_of_eager_is_kept(tmp_path):
    chooser = GraphModeChooser("cpu", GraphRecords(str(tmp_path / "r.json")))
    chooser.plan(10**6)
    run_chooser(chooser, 0.100, 30.0, 0.100 * (1 + NOISE) * 0.99, 30)
    assert chooser.next_step() == "compiled" and not chooser.measuring


def test_a_record_of_a_warm_compile_makes_a_shorter_run_compile(tmp_path):
    """The prior (a cold compile, 55 s on a CPU) rules out a run that a recorded 2 s compile
    and 2x speedup pay back."""
    records = GraphRecords(str(tmp_path / "r.json"))
    records.store("net", compile_s=2.0, eager_step_s=0.02, compiled_step_s=0.01)
    steps = 2000  # 2000 x 10 ms = 20 s saved: more than 2 s, less than the prior's 55 s
    assert not decide(0.02, steps, PRIORS["cpu"]).compile
    chooser = GraphModeChooser("cpu", records)
    chooser.key = "net"
    chooser.plan(steps)
    run_chooser(chooser, 0.02, 2.0, 0.01, FIRST)
    assert chooser.decision.compile and "(record)" in chooser.decision.reason


def test_unplanned_runs_assume_the_default_horizon(tmp_path):
    chooser = GraphModeChooser("cpu", GraphRecords(str(tmp_path / "r.json")))
    run_chooser(chooser, 0.02, 55.0, 0.01, FIRST)
    assert f"{graph_policy.DEFAULT_HORIZON} steps left" in chooser.decision.reason


def test_a_failed_compile_settles_on_eager(tmp_path):
    chooser = GraphModeChooser("cpu", GraphRecords(str(tmp_path / "r.json")))
    chooser.plan(10**7)
    run_chooser(chooser, 0.1, 1.0, 0.05, FIRST)
    assert chooser.next_step() == "compile"
    chooser.observe(5.0, compile_failed=True)
    assert chooser.next_step() == "eager" and not chooser.measuring
    assert "compile failed" in chooser.verdict


# ------------------------------------------------------------------ the records file
@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"[]",
        b'{"entries": []}',
        b'{"entries": {"net": {"compile_s": "1", "eager_step_s": 1, "compiled_step_s": 1,'
        b' "time": 1}}}',
        b'{"entries": {"net": {"compile_s": -1, "eager_step_s": 1, "compiled_step_s": 1,'
        b' "time": 1}}}',
        b'{"entries": {"net": {"compile_s": NaN, "eager_step_s": 1, "compiled_step_s": 1,'
        b' "time": 1}}}',
        b'{"entries": {"net": {"compile_s": 1, "eager_step_s": 1, "compiled_step_s": 0,'
        b' "time": 1}}}',
        b"\xff\xfe garbage",
    ],
)
def test_a_bad_records_file_is_ignored_and_replaced(tmp_path, content):
    path = tmp_path / "r.json"
    path.write_bytes(content)
    records = GraphRecords(str(path))
    assert records.expectation("net") is None
    records.store("other", 1.0, 0.2, 0.1)
    data = json.loads(path.read_text())
    assert set(data["entries"]) == {"other"}
    assert records.expectation("other").speedup == pytest.approx(2.0)


def test_an_oversized_records_file_is_not_read(tmp_path):
    path = tmp_path / "r.json"
    entry = {"compile_s": 1, "eager_step_s": 1, "compiled_step_s": 1, "time": 1}
    path.write_text(json.dumps({"entries": {"net": entry}, "pad": "x" * (1 << 20)}))
    assert GraphRecords(str(path)).expectation("net") is None


def test_the_records_keep_the_most_recent(tmp_path, monkeypatch):
    monkeypatch.setattr(graph_policy, "MAX_RECORDS", 3)
    records = GraphRecords(str(tmp_path / "r.json"))
    clock = iter(range(1, 100))
    monkeypatch.setattr(graph_policy.time, "time", lambda: float(next(clock)))
    for name in "abcde":
        records.store(name, 1.0, 0.2, 0.1)
    kept = json.loads((tmp_path / "r.json").read_text())["entries"]
    assert sorted(kept) == ["c", "d", "e"]


def test_an_unwritable_records_file_does_not_stop_the_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    records = GraphRecords(str(blocker / "r.json"))  # a folder that is a file
    records.store("net", 1.0, 0.2, 0.1)  # logged, not raised
    assert records.expectation("net") is None


def test_the_records_path_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(graph_policy.RECORDS_ENV, str(tmp_path / "x.json"))
    assert GraphRecords().path == str(tmp_path / "x.json")
    monkeypatch.delenv(graph_policy.RECORDS_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert GraphRecords().path == str(tmp_path / "jisu" / "graph_mode.json")


def test_the_key_tells_networks_and_batches_apart():
    a, b = nn.Linear(4, 2), nn.Linear(4, 3)
    x = torch.zeros(8, 4)
    key = graph_policy.network_key
    assert key(a, (x,), "O0") == key(nn.Linear(4, 2), (x,), "O0")  # the weights do not count
    assert key(a, (x,), "O0") != key(b, (x,), "O0")
    assert key(a, (x,), "O0") != key(a, (torch.zeros(16, 4),), "O0")
    assert key(a, (x,), "O0") != key(a, (x,), "O2")


# ------------------------------------------------------------------ the step
class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def timed_step(clock, eager_s, compile_s, compiled_s, records):
    """A real train step whose eager forward advances ``clock`` by ``eager_s``, and whose
    "compiled" forward (torch.compile replaced) by ``compile_s`` at its first call and
    ``compiled_s`` after; returns the CompiledStep and the list of forwards run."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    step = amp.build_train_network(net, opt, nn.CrossEntropyLoss())
    ran: list[str] = []
    forward = step.forward_fn

    def eager_forward(*inputs):
        clock.now += eager_s
        ran.append("eager")
        return forward(*inputs)

    def fake_compile(fn, **_):
        def compiled(*inputs):
            first = "compiled" not in ran
            clock.now += compile_s + compiled_s if first else compiled_s
            ran.append("compiled")
            return forward(*inputs)

        return compiled

    step = step.with_forward(eager_forward)
    compiled = CompiledStep(
        step, policy="auto", records=records, clock=clock, compile_fn=fake_compile
    )
    return compiled, ran


def batch():
    torch.manual_seed(1)
    return torch.randn(32, 8), torch.randint(0, 3, (32,))


def test_the_step_runs_eagerly_when_compiling_does_not_pay(tmp_path, caplog):
    clock = FakeClock()
    step, ran = timed_step(clock, 0.01, 55.0, 0.005, GraphRecords(str(tmp_path / "r.json")))
    step.plan_steps(50)
    with caplog.at_level(logging.INFO, logger="jisu.train.steps"):
        for _ in range(50):
            step(*batch())
    assert ran == ["eager"] * 50 and not step.is_compiled and step.proven
    lines = [r.getMessage() for r in caplog.records if r.name == "jisu.train.steps"]
    assert len(lines) == 1 and lines[0].startswith("GRAPH_MODE: running eagerly")
    assert "44 steps left" in lines[0]  # 50 planned, 6 measured before the choice
    assert step.describe().startswith("GRAPH_MODE (auto): running eagerly")


def test_the_step_compiles_when_it_pays_and_keeps_the_faster_step(tmp_path):
    clock = FakeClock()
    step, ran = timed_step(clock, 0.10, 20.0, 0.05, GraphRecords(str(tmp_path / "r.json")))
    step.plan_steps(10**6)
    proven = []
    for _ in range(FIRST + 1 + MEASURED_STEPS + 3):
        proven.append(step.proven)
        step(*batch())
    assert ran == ["eager"] * FIRST + ["compiled"] * (1 + MEASURED_STEPS + 3)
    assert proven == [True] * FIRST + [False] + [True] * (MEASURED_STEPS + 3)  # the bar's cue
    assert step.is_compiled
    assert "keeping the compiled step" in step.describe()


def test_the_step_goes_back_to_eager_when_compiled_is_slower(tmp_path):
    clock = FakeClock()
    step, ran = timed_step(clock, 0.05, 20.0, 0.10, GraphRecords(str(tmp_path / "r.json")))
    step.plan_steps(10**6)
    for _ in range(FIRST + 1 + MEASURED_STEPS + 4):
        step(*batch())
    assert ran[-4:] == ["eager"] * 4 and not step.is_compiled
    assert "running eagerly from now on" in step.describe()


def test_model_train_plans_the_steps_and_trains_the_same(tmp_path, monkeypatch):
    """Model.train in GRAPH_MODE (auto) on a short run: eager throughout, the same losses as
    PYNATIVE_MODE (the numerics of the mode actually run)."""
    from tests.train.test_model import data, losses_of, model

    calls = []
    monkeypatch.setattr(torch, "compile", lambda fn, **_: calls.append(fn) or fn)
    eager = losses_of(lambda **k: model().train(2, data()[0], **k))
    jisu.set_context(mode=jisu.GRAPH_MODE)
    m = model()
    graph = losses_of(lambda **k: m.train(2, data()[0], **k))
    assert graph == eager
    step = m.train_network
    assert isinstance(step, CompiledStep) and not step.is_compiled
    steps = len(graph)
    assert f"{steps - FIRST} steps left" in step.describe()


def test_with_several_ranks_graph_mode_compiles_from_the_first_step(monkeypatch):
    """Each rank's measurements could choose differently, and the ranks must run the same
    graphs: under torchrun with more than one rank the rule is not used."""
    from jisu.train import steps

    monkeypatch.setattr(steps.distributed, "get_group_size", lambda: 2)
    monkeypatch.setattr(steps, "data_parallel", lambda step, loss_fn, device: step)
    monkeypatch.setattr(torch, "compile", lambda fn, **_: fn)
    jisu.set_context(mode=jisu.GRAPH_MODE)  # graph_compile: "auto", the default
    net = nn.Linear(8, 3)
    built = amp.build_train_network(net, torch.optim.SGD(net.parameters(), lr=0.1), nn.MSELoss())
    step = steps.wrap_train_step(built, nn.MSELoss(), torch.device("cpu"))
    assert isinstance(step, CompiledStep) and step.chooser is None and step.is_compiled
    monkeypatch.setattr(steps.distributed, "get_group_size", lambda: 1)
    assert steps.wrap_train_step(built, nn.MSELoss(), torch.device("cpu")).chooser is not None
