"""The doctor measures graph mode before it advises it.

The advice is tested on injected seconds (the comparison, and the measurement with its timed
runs replaced), so that each verdict follows from the figures whatever the load of the
machine; the payback is worked out here from the same figures. Runs on the real clock check
only structure: one with ``torch.compile`` replaced by a stand-in, and one real compile of a
tiny model.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from torch import nn

import jisu
import jisu.dataset as ds
from jisu.profiler import TrainingProfiler
from jisu.profiler import measure as measure_module
from jisu.profiler.comparison import (
    GRAPH_NOT_MEASURED,
    GraphModeComparison,
    PrecisionComparison,
)
from jisu.profiler.doctor import diagnose_training
from jisu.profiler.measure import measure_graph_mode
from jisu.profiler.training import TimeBreakdown

GRAPH = "jisu.set_context(mode=jisu.GRAPH_MODE)"
EAGER = "jisu.set_context(mode=jisu.PYNATIVE_MODE)"


def payback(compile_s: float, eager: float, compiled: float) -> int:
    """The steps after which faster compiled steps have paid for the compile."""
    return math.ceil(compile_s / (eager - compiled))


def compute_bound(**params) -> TrainingProfiler:
    profiler = TrainingProfiler(verbose=False)
    profiler._params = {"amp_level": "O0", "device": "cpu", **params}
    profiler.epochs = [TimeBreakdown(steps=10, samples=640, wall=1.0, step=0.95)]
    assert profiler.verdict == "compute-bound"
    return profiler


# ---------------------------------------------------------------- the advice, injected


def test_faster_compiled_steps_advise_graph_mode_with_the_payback():
    eager, compiled, compile_s = 0.030, 0.020, 4.0
    steps = payback(compile_s, eager, compiled)  # 400
    g = GraphModeComparison("eager", eager, compiled, compile_s, steps=4, epoch_steps=22)
    assert g.payback_steps == steps and g.change == "graph"
    assert g.advice == (
        f"graph mode ran {eager / compiled:.2f}x faster than eager on this CPU (compiled 20.0 "
        f"ms, eager 30.0 ms per step; compiling took 4.0 s), paid back after {steps} steps, "
        f"{steps / 22:.1f} epochs of this data set's 22 steps: use {GRAPH} for runs of more "
        f"than {steps} steps"
    )


def test_a_payback_within_an_epoch_says_so():
    g = GraphModeComparison("eager", 0.050, 0.010, 2.0, epoch_steps=1000)
    steps = payback(2.0, 0.050, 0.010)  # 50
    assert f"paid back after {steps} steps, within the first epoch of this data set's 1000" in (
        g.advice
    )
    unknown = GraphModeComparison("eager", 0.050, 0.010, 2.0, epoch_steps=None)
    assert f"paid back after {steps} steps: use {GRAPH}" in unknown.advice


def test_a_model_in_graph_mode_keeps_it_when_compiled_is_faster():
    g = GraphModeComparison("graph", 0.030, 0.015, 3.0, device="cuda:0")
    steps = payback(3.0, 0.030, 0.015)
    assert g.change is None
    assert g.advice.endswith(
        f"paid back after {steps} steps: keep GRAPH_MODE for runs of more than {steps} "
        "steps, use eager for shorter ones"
    )
    assert "on this GPU" in g.advice


@pytest.mark.parametrize(
    "current, change, ends",
    [("eager", None, ": keep eager (PYNATIVE_MODE)"), ("graph", "eager", f": use {EAGER}")],
)
def test_slower_compiled_steps_keep_eager(current, change, ends):
    g = GraphModeComparison(current, 0.020, 0.030, 5.0)
    assert g.payback_steps is None and g.change == change
    assert g.advice == (
        f"eager ran {0.030 / 0.020:.2f}x faster than graph mode on this CPU (compiled 30.0 ms, "
        f"eager 20.0 ms per step; compiling took 5.0 s){ends}"
    )
    assert "GRAPH_MODE)" not in g.advice


@pytest.mark.parametrize(
    "current, change, ends",
    [("eager", None, "; keep eager (PYNATIVE_MODE)"), ("graph", "eager", f"; {EAGER} saves")],
)
def test_within_the_margin_graph_mode_is_not_the_lever(current, change, ends):
    g = GraphModeComparison(current, 0.0200, 0.0190, 5.0)  # 1.05x: under SAME_SPEED
    assert g.change == change
    assert "ran within 10% of each other on this CPU (compiled 19.0 ms, eager 20.0 ms" in (g.advice)
    assert ends in g.advice and GRAPH not in g.advice


def test_a_failed_compile_is_said_with_its_message():
    error = "InductorError: CppCompileError: C++ compile error"
    g = GraphModeComparison("eager", 0.020, error=error)
    assert g.change is None and g.payback_steps is None
    assert g.advice == f"graph mode: torch.compile failed on this model ({error}): keep eager"
    assert g.figures_line() == f"graph mode: torch.compile failed ({error}); eager 20.0 ms per step"
    in_graph = GraphModeComparison("graph", 0.020, error=error)
    assert in_graph.change == "eager" and error in in_graph.advice
    assert in_graph.advice.endswith(f"use {EAGER}")


def test_unmeasured_graph_mode_is_suggested_as_not_measured():
    """Without a measurement (jisu train, the doctor with it off), no claim that it is faster."""
    profiler = compute_bound()
    assert GRAPH_NOT_MEASURED in profiler.advice
    assert "not measured" in profiler.advice and "compile the step" not in profiler.advice
    assert "graph mode" not in profiler.report(verdict=False)  # nothing measured, nothing said
    profiler.graph_note = "turned off"
    assert "graph mode: not measured (turned off)" in profiler.report(verdict=False)
    compiled = compute_bound(graph_mode=True, amp_level="O2", device="cuda:0")
    assert "not measured" not in compiled.advice and "already runs compiled" in compiled.advice


def test_the_measurement_replaces_the_unmeasured_advice():
    profiler = compute_bound(amp_level="O2")
    profiler.precision = PrecisionComparison("O2", "O0", {"O0": 0.02, "O2": 0.01}, steps=4)
    profiler.graph = GraphModeComparison("eager", 0.020, 0.030, 5.0, steps=4)
    assert "not measured" not in profiler.advice and "keep eager" in profiler.advice
    assert profiler.advice.endswith(
        "it already runs at its fastest measured setting, eager, in O2: use bigger batches or "
        "a smaller model"
    )
    assert (
        "graph mode (4 steps each after a warm-up or compiling step): eager 20.0 ms per step, "
        "compiled 30.0 ms per step, compiling 5.0 s"
    ) in profiler.report()


# ---------------------------------------------------------------- the measurement, injected


def linear_model(level: str = "O0"):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    return jisu.Model(net, nn.CrossEntropyLoss(), optimizer, amp_level=level), net, optimizer


def rows(n: int = 96, batch: int = 16):
    x = np.random.default_rng(0).standard_normal((n, 8)).astype(np.float32)
    return ds.NumpySlicesDataset({"x": x, "y": (x[:, 0] > 0).astype(np.int64)}).batch(batch)


def timed(eager: list[float], compiled: list[float], error: str | None = None):
    """A stand-in for the timed runs of the copies: these seconds per step."""

    def run(model, batches, graph):
        return (list(compiled), error) if graph else (list(eager), None)

    return run


def test_the_compile_time_is_the_first_compiled_steps_extra(monkeypatch):
    monkeypatch.setattr(
        measure_module, "_timed_copy", timed([0.5, 0.03, 0.05, 0.03], [6.02, 0.02, 0.02, 0.04])
    )
    g = measure_graph_mode(linear_model()[0], rows(), steps=3)
    assert (g.current, g.eager, g.compiled) == ("eager", 0.03, 0.02)
    assert g.compile_seconds == pytest.approx(6.0) and g.steps == 3
    assert g.epoch_steps == 6  # 96 rows in batches of 16
    assert g.payback_steps == payback(6.0, 0.03, 0.02)


def test_a_compile_error_reaches_the_comparison(monkeypatch):
    monkeypatch.setattr(
        measure_module, "_timed_copy", timed([0.5, 0.03], [0.5, 0.03], "RuntimeError: no cc")
    )
    g = measure_graph_mode(linear_model()[0], rows(), steps=1)
    assert g.error == "RuntimeError: no cc" and g.compiled is None
    assert "torch.compile failed on this model (RuntimeError: no cc)" in g.advice


def test_too_little_data_is_not_measured():
    profiler = diagnose_training(
        linear_model()[0], rows(n=16), steps=1, precision_steps=0, graph_steps=4
    )
    assert profiler.graph is None
    assert profiler.graph_note == "the data set has fewer than 2 batches"
    assert "not measured" in profiler.report()


def test_the_doctor_can_leave_graph_mode_unmeasured(monkeypatch):
    monkeypatch.setattr(measure_module, "_timed_copy", None)  # never called
    profiler = diagnose_training(linear_model()[0], rows(), steps=2, graph_steps=0)
    assert profiler.graph is None and profiler.graph_note == "turned off"
    assert "graph mode: not measured (turned off)" in profiler.report(verdict=False)


def test_a_failed_graph_measurement_is_a_warning(monkeypatch):
    from jisu.profiler import doctor

    def fails(*args, **kwargs):
        raise RuntimeError("out of memory\nmore lines")

    monkeypatch.setattr(doctor, "measure_graph_mode", fails)
    with pytest.warns(UserWarning, match="RuntimeError: out of memory"):
        profiler = diagnose_training(linear_model()[0], rows(), steps=2, precision_steps=0)
    assert profiler.graph is None and len(profiler.epochs) == 3
    assert profiler.graph_note == "the measurement failed: RuntimeError: out of memory"


# ---------------------------------------------------------------- real runs: structure only


def weights_of(net: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in net.state_dict().items()}


@pytest.fixture
def stand_in_compile(monkeypatch):
    """torch.compile replaced by a function that returns what it is given (no compile)."""
    monkeypatch.setattr(torch, "compile", lambda fn, **_: fn)


@pytest.mark.parametrize("mode", [jisu.PYNATIVE_MODE, jisu.GRAPH_MODE])
def test_copies_are_timed_eager_and_compiled(stand_in_compile, mode):
    jisu.set_context(mode=mode)
    try:
        model, net, optimizer = linear_model("O2")
    finally:
        jisu.set_context(mode=jisu.PYNATIVE_MODE)
    model.train(1, rows())
    before = weights_of(net)
    state = {id(p): {k: v.clone() for k, v in s.items()} for p, s in optimizer.state.items()}
    g = measure_graph_mode(model, rows(), steps=2)
    assert g.current == ("graph" if mode == jisu.GRAPH_MODE else "eager")
    assert g.error is None and g.eager > 0 and g.compiled > 0 and g.compile_seconds >= 0
    assert g.steps == 2 and g.epoch_steps == 6
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert all(
        torch.equal(state[id(q)][k], v) for q, s in optimizer.state.items() for k, v in s.items()
    )
    assert jisu.get_context("mode") == jisu.PYNATIVE_MODE  # the context is as it was


def test_a_compile_that_fails_is_measured_as_failed(monkeypatch):
    """GRAPH_MODE's step falls back to eager when compiling fails; the measurement says why."""

    def broken_compile(fn, **_):
        def compiled(*inputs):
            raise RuntimeError("no C++ compiler found\nsecond line")

        return compiled

    monkeypatch.setattr(torch, "compile", broken_compile)
    g = measure_graph_mode(linear_model()[0], rows(), steps=2)
    assert g.error == "RuntimeError: no C++ compiler found" and g.compiled is None
    assert g.eager > 0 and "no C++ compiler found" in g.advice


@pytest.mark.slow  # 19 s on a 2-core CPU without a torch.compile cache (5 s with one)
def test_a_real_compile_is_timed_and_leaves_the_model_alone():
    """One real torch.compile of a tiny model: figures present and positive, weights as they
    were (which mode is faster depends on the machine)."""
    model, net, _ = linear_model()
    before = weights_of(net)
    g = measure_graph_mode(model, rows(), steps=2)
    assert g.error is None, g.error
    assert g.eager > 0 and g.compiled > 0 and g.compile_seconds >= 0
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert re.search(r"(graph mode|eager) ran|within 10%", g.advice), g.advice
