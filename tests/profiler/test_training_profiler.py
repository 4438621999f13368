"""The training profiler names the bottleneck of a run correctly.

The verdicts are tested on a fake clock: a simulated training loop drives the profiler's
hooks as ``Model.train`` does, and each part of a step (waiting for data, copying, the step,
other host work) advances the clock by a fixed amount, so the shares and the verdict follow
from the figures by construction, whatever the load of the machine. Runs on the real clock
check only what no timing can change (counts, shares that add up, lower bounds).
"""

from __future__ import annotations

import re
import time
import types

import numpy as np
import pytest
import torch
from torch import nn

import jisu
import jisu.dataset as ds
from jisu.profiler import TrainingProfiler
from jisu.profiler.doctor import diagnose_training, measure_precision
from jisu.profiler.training import PrecisionComparison, TimeBreakdown
from jisu.train import LambdaCallback
from jisu.train.callback import CallbackParams, RunContext
from jisu.train.capture import StepCapture

VERDICTS = {"input-bound", "compute-bound", "host-bound"}


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0  # any origin: only differences count

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def simulate(
    *,
    data_wait: float = 0.0,
    copy: float = 0.0,
    step: float = 0.0,
    host: float = 0.0,
    warmup: float = 0.0,
    epochs: int = 3,
    steps: int = 4,
    batch: int = 8,
    **params,
) -> TrainingProfiler:
    """A training run on a fake clock, through the profiler's hooks in ``Model.train``'s order.

    Each step waits ``data_wait`` seconds for its batch, copies it in ``copy``, runs the train
    step in ``step`` (the loop's own clocks count these three in ``cb_params``) and spends
    ``host`` on other host work (callbacks, logging: no clock of the loop counts it). The
    first epoch also spends ``warmup`` in the step (compilation)."""
    clock = FakeClock()
    profiler = TrainingProfiler(verbose=False, count_device_syncs=False, clock=clock)
    cb = CallbackParams(
        data_wait_seconds=0.0,
        copy_seconds=0.0,
        step_seconds=0.0,
        cur_step_num=0,
        samples_seen=0,
        device="cpu",
        amp_level="O0",
        graph_mode=False,
        dataset_sink_mode=False,
    )
    cb.update(params)
    run = RunContext(cb)
    profiler.on_train_begin(run)
    for epoch in range(epochs):
        profiler.on_train_epoch_begin(run)
        if epoch == 0:
            clock.advance(warmup)
            cb.step_seconds += warmup
        for _ in range(steps):
            clock.advance(data_wait)
            cb.data_wait_seconds += data_wait
            clock.advance(copy)
            cb.copy_seconds += copy
            clock.advance(step)
            cb.step_seconds += step
            cb.cur_step_num += 1
            cb.samples_seen += batch
            clock.advance(host)
        profiler.on_train_epoch_end(run)
    profiler.on_train_end(run)
    return profiler


# per step, in units of time: the figures, then the shares they must give and the verdict
SCENARIOS = {
    "waits for data": (
        dict(data_wait=3.0, step=1.0),
        dict(data_wait=0.75, copy=0.0, step=0.25, host=0.0),
        "input-bound",
    ),
    "copies count as input": (
        dict(data_wait=0.5, copy=1.0, step=2.5),
        dict(data_wait=0.125, copy=0.25, step=0.625, host=0.0),
        "input-bound",
    ),
    "logs between steps": (
        dict(data_wait=0.5, step=1.0, host=2.5),
        dict(data_wait=0.125, copy=0.0, step=0.25, host=0.625),
        "host-bound",
    ),
    "computes": (
        dict(data_wait=0.25, copy=0.25, step=3.0, host=0.5),
        dict(data_wait=0.0625, copy=0.0625, step=0.75, host=0.125),
        "compute-bound",
    ),
    "input at the bound": (  # a quarter is enough (>=)
        dict(data_wait=1.0, step=3.0),
        dict(data_wait=0.25, copy=0.0, step=0.75, host=0.0),
        "input-bound",
    ),
    "host at the bound": (
        dict(step=3.0, host=1.0),
        dict(data_wait=0.0, copy=0.0, step=0.75, host=0.25),
        "host-bound",
    ),
    "input just under the bound": (
        dict(data_wait=0.9, step=3.1),
        dict(data_wait=0.225, copy=0.0, step=0.775, host=0.0),
        "compute-bound",
    ),
    "input and host as large: input first": (
        dict(data_wait=1.5, step=1.0, host=1.5),
        dict(data_wait=0.375, copy=0.0, step=0.25, host=0.375),
        "input-bound",
    ),
    "host larger than a bound input": (
        dict(data_wait=1.0, step=1.0, host=2.0),
        dict(data_wait=0.25, copy=0.0, step=0.25, host=0.5),
        "host-bound",
    ),
}


@pytest.mark.parametrize("figures, shares, verdict", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_verdict_and_shares_follow_from_the_figures(figures, shares, verdict):
    profiler = simulate(**figures, warmup=50.0)  # the first epoch's warm-up is left out
    s = profiler.summary()
    assert (s.steps, s.samples) == (8, 64)  # the 2 epochs after the first, 4 steps of 8
    assert s.wall == pytest.approx(8 * sum(figures.values()), abs=1e-9)
    assert s.shares() == pytest.approx(shares, abs=1e-9)
    assert profiler.verdict == verdict, profiler.report()


def test_the_advice_and_the_report_name_the_lever():
    profiler = simulate(data_wait=3.0, step=1.0)
    assert "num_parallel_workers" in profiler.advice and "75%" in profiler.advice
    report = profiler.report()
    assert "waiting for data 75%" in report and "train step 25%" in report
    assert "(8 steps, 2 samples/s)" in report  # 64 samples in 32 units of time
    assert "verdict: input-bound" in report

    profiler = simulate(step=1.0, host=3.0)
    assert "75% of the time went to the host" in profiler.advice
    assert "dataset_sink_mode=True" in profiler.advice
    sinking = simulate(step=1.0, host=3.0, dataset_sink_mode=True)
    assert sinking.verdict == "host-bound" and "dataset_sink_mode" not in sinking.advice

    profiler = simulate(data_wait=0.5, step=3.0, host=0.5)
    assert profiler.advice.startswith("the train step takes 75% of the time")
    assert "amp_level='O2'" in profiler.advice and "GRAPH_MODE" in profiler.advice


def test_the_first_epoch_is_left_out_only_when_there_are_others():
    profiler = simulate(data_wait=1.0, step=3.0, warmup=1000.0)
    assert [e.wall for e in profiler.epochs] == pytest.approx([1016.0, 16.0, 16.0])
    assert profiler.verdict == "input-bound"  # the warm-up's step time does not count
    alone = simulate(data_wait=1.0, step=3.0, warmup=1000.0, epochs=1)
    s = alone.summary()
    assert (s.steps, s.wall, s.step) == (4, pytest.approx(1016.0), pytest.approx(1012.0))
    assert alone.verdict == "compute-bound"


@pytest.mark.parametrize(
    "params, says, not_says",
    [
        ({"amp_level": "O2", "device": "cpu"}, ["amp_level='O0'", "GRAPH_MODE"], ["'O2'"]),
        ({"amp_level": "O2", "device": "cuda:0", "graph_mode": True}, ["already"], ["amp_level"]),
        ({"amp_level": "O0", "device": "cpu", "graph_mode": True}, ["amp_level='O2'"], ["GRAPH"]),
    ],
)
def test_compute_bound_advice_follows_how_the_step_already_runs(params, says, not_says):
    """No advice to switch on what is on already; without a measurement, no claim on which
    precision is faster on a CPU, only the advice to measure (``jisu doctor`` does)."""
    profiler = TrainingProfiler(verbose=False)
    profiler._params = params
    profiler.epochs = [TimeBreakdown(steps=10, samples=640, wall=1.0, step=0.95)]
    assert profiler.verdict == "compute-bound"
    assert all(s in profiler.advice for s in says), profiler.advice
    assert not any(s in profiler.advice for s in not_says), profiler.advice


class _AutoStep:
    """What the advice reads of a GRAPH_MODE auto step: its chooser and whether it compiled."""

    def __init__(self, compiled: bool, measuring: bool = False) -> None:
        self.is_compiled = compiled
        self.chooser = types.SimpleNamespace(measuring=measuring)


@pytest.mark.parametrize(
    "step, says, not_says",
    [
        (_AutoStep(False), ["runs it eagerly", "fastest measured setting, eager,"], ["compiled"]),
        (_AutoStep(True), ["runs it compiled", "already runs compiled in O2"], ["eager"]),
        (_AutoStep(False, measuring=True), ["GRAPH_MODE"], ["keep graph mode auto"]),
    ],
)
def test_the_advice_follows_graph_mode_autos_choice_and_the_measured_amp_level(
    step, says, not_says
):
    """A step that graph mode auto chose to run eagerly is not called compiled (the
    ``graph_mode`` flag only says GRAPH_MODE was set); a level that ``amp_level="fastest"``
    measured is not questioned."""
    model = types.SimpleNamespace(amp_choice=object())
    params = {"amp_level": "O2", "device": "cpu", "graph_mode": True, "train_network": step}
    profiler = TrainingProfiler(verbose=False)
    profiler._params = dict(params, model=model)
    profiler.epochs = [TimeBreakdown(steps=10, samples=640, wall=1.0, step=0.95)]
    assert "keep amp_level='fastest': O2 was measured fastest here" in profiler.advice
    assert "measure amp_level='O0'" not in profiler.advice
    assert all(s in profiler.advice for s in says), profiler.advice
    assert not any(s in profiler.advice for s in not_says), profiler.advice


# ---------------------------------------------------------------- real runs, real clock


def fit(data, net, callbacks=(), sink=False, epochs=3, verbose=False):
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    profiler = TrainingProfiler(verbose=verbose)
    model = jisu.Model(net, nn.CrossEntropyLoss(), opt)
    model.train(epochs, data, callbacks=[profiler, *callbacks], dataset_sink_mode=sink)
    return profiler


def slow_rows(n=48, features=16, delay=0.004):
    """A source that takes ``delay`` seconds per row (a slow disk, a slow decoder)."""

    def rows():
        for i in range(n):
            time.sleep(delay)
            yield np.full(features, i % 3, np.float32), np.int64(i % 3)

    return ds.GeneratorDataset(rows, ["x", "y"]).batch(8)


def fast_rows(n=512, features=16, batch=64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, features)).astype(np.float32)
    return ds.NumpySlicesDataset({"x": x, "y": (x[:, 0] > 0).astype(np.int64)}).batch(batch)


def tiny(features=16):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(features, 8), nn.ReLU(), nn.Linear(8, 3))


def assert_consistent(profiler: TrainingProfiler) -> None:
    """What holds whatever the timing: the loop's clocks measure disjoint stretches inside each
    epoch, so no part exceeds the wall time and the shares add up to one."""
    for e in profiler.epochs:
        assert min(e.data_wait, e.copy, e.step) >= 0.0 and e.wall > 0.0
        assert e.data_wait + e.copy + e.step <= e.wall * (1 + 1e-9)
    shares = profiler.summary().shares()
    assert all(0.0 <= v <= 1.0 for v in shares.values()), shares
    assert sum(shares.values()) == pytest.approx(1.0)
    assert profiler.verdict in VERDICTS and profiler.advice


@pytest.mark.parametrize("sink", [False, True])
def test_a_real_run_is_measured_consistently(sink):
    profiler = fit(slow_rows(), tiny(), sink=sink)
    assert len(profiler.epochs) == 3 and [e.steps for e in profiler.epochs] == [6, 6, 6]
    s = profiler.summary()
    assert (s.steps, s.samples) == (12, 96)
    assert_consistent(profiler)


@pytest.mark.parametrize("sink", [False, True])
def test_time_spent_in_a_callback_counts_as_host_work(sink):
    """A logging callback sleeping 5 ms per step: at least that much is host time (a lower
    bound: a busy machine only adds to it)."""
    logging = LambdaCallback(on_train_step_end=lambda rc: time.sleep(0.005))
    profiler = fit(fast_rows(), tiny(), callbacks=[logging], sink=sink)
    s = profiler.summary()
    assert s.steps == 16
    assert s.host >= 16 * 0.005
    assert_consistent(profiler)


def test_figures_add_up_and_the_report_prints_once(capsys):
    profiler = fit(fast_rows(), tiny(), epochs=2, verbose=True)
    s = profiler.summary()
    assert len(profiler.epochs) == 2 and s.steps == 8 and s.samples == 512
    assert_consistent(profiler)
    out = capsys.readouterr().out
    assert out.count("where the time went") == 1 and "verdict:" in out


# ---------------------------------------------------------------- precision, measured

# (current level, other level, seconds per step by level, device) -> the advice, with the
# ratio worked out here from the seconds, and the level to switch to (None: keep)
PRECISION = {
    "O2 faster: keep it": (
        ("O2", "O0", {"O0": 0.013, "O2": 0.010}, "cpu"),
        f"O2 ran {0.013 / 0.010:.2f}x faster than O0 on this CPU (O2 10.0 ms, O0 13.0 ms per "
        "step): keep amp_level='O2'",
        None,
    ),
    "O0 faster than O2: switch": (
        ("O2", "O0", {"O0": 0.010, "O2": 0.012}, "cpu"),
        f"O0 ran {0.012 / 0.010:.2f}x faster than O2 on this CPU (O0 10.0 ms, O2 12.0 ms per "
        "step): use amp_level='O0'",
        "O0",
    ),
    "at O0, O2 faster: switch": (
        ("O0", "O2", {"O0": 0.010, "O2": 0.008}, "cuda:0"),
        f"O2 ran {0.010 / 0.008:.2f}x faster than O0 on this GPU (O2 8.0 ms, O0 10.0 ms per "
        "step): use amp_level='O2'",
        "O2",
    ),
    "within 10%, the current level faster: keep": (
        ("O3", "O0", {"O0": 0.0105, "O3": 0.0100}, "cpu"),
        "O3 and O0 ran within 10% of each other on this CPU (O3 10.0 ms, O0 10.5 ms per "
        "step): precision is not the lever; keep amp_level='O3'",
        None,
    ),
    # the doctor once said "keep amp_level='O2'" of a level it had measured 9 % slower
    "within 10%, the current level slower: not kept, not switched": (
        ("O2", "O0", {"O0": 0.9018, "O2": 0.9852}, "cpu"),
        "O2 and O0 ran within 10% of each other on this CPU (O0 901.8 ms, O2 985.2 ms per "
        f"step): precision is not the lever (O0 was {0.9852 / 0.9018 - 1:.0%} faster, within "
        "what a few steps tell apart)",
        None,
    ),
}


@pytest.mark.parametrize("measured, advice, change", PRECISION.values(), ids=PRECISION.keys())
def test_the_precision_advice_follows_the_measured_times(measured, advice, change):
    current, other, seconds, device = measured
    comparison = PrecisionComparison(current, other, seconds, device=device, steps=4)
    assert comparison.advice == advice
    assert comparison.change == change


def test_the_compute_bound_advice_uses_the_measurement():
    """Measured: the advice says what the numbers say, not what CPUs are supposed to do."""
    profiler = TrainingProfiler(verbose=False)
    profiler._params = {"amp_level": "O2", "device": "cpu", "graph_mode": True}
    profiler.epochs = [TimeBreakdown(steps=10, samples=640, wall=1.0, step=0.95)]
    profiler.precision = PrecisionComparison("O2", "O0", {"O0": 0.02, "O2": 0.01}, steps=4)
    assert "O2 ran 2.00x faster than O0" in profiler.advice
    assert "keep amp_level='O2'" in profiler.advice and "already runs compiled" in profiler.advice
    assert "bf16" not in profiler.advice
    report = profiler.report()
    assert "precision (4 steps each after a warm-up step): O0 20.0 ms per step, O2 10.0 ms" in (
        report
    )

    profiler.precision = PrecisionComparison("O2", "O0", {"O0": 0.01, "O2": 0.02}, steps=4)
    assert "O0 ran 2.00x faster than O2" in profiler.advice
    assert "use amp_level='O0'" in profiler.advice and "already" not in profiler.advice
    assert "verdict" not in profiler.report(verdict=False)


def amp_model(level: str = "O2", scheduler: bool = True):
    """A tiny model at ``level``, with momentum and a learning-rate scheduler."""
    net = tiny()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    if scheduler:
        torch.optim.lr_scheduler.StepLR(optimizer, 1)  # wraps optimizer.step
    return jisu.Model(net, nn.CrossEntropyLoss(), optimizer, amp_level=level), net, optimizer


def test_doctor_times_the_model_at_o0_and_at_its_level():
    model = amp_model()[0]
    data = fast_rows(n=256, batch=32)
    profiler = diagnose_training(model, data, steps=2, precision_steps=2, graph_steps=0)
    p = profiler.precision
    assert (p.current, p.other, p.steps) == ("O2", "O0", 2)
    assert set(p.seconds) == {"O0", "O2"} and min(p.seconds.values()) > 0
    assert "O0" in p.advice and "O2" in p.advice  # which is faster depends on the machine
    assert re.search(r"O0 [0-9.]+ ms per step, O2 [0-9.]+ ms per step", profiler.report())


@pytest.mark.parametrize("level", ["O0", "O3"])
def test_measuring_precision_leaves_the_users_model_alone(level):
    """Copies are measured: the user's weights, optimizer state and AMP conversion stay as
    they were (O3 casts the weights in place; a scheduler wraps optimizer.step)."""
    model, net, optimizer = amp_model(level)
    data = fast_rows(n=128, batch=32)
    model.train(1, data)
    weights = {k: v.clone() for k, v in net.state_dict().items()}
    state = {id(p): {k: v.clone() for k, v in s.items()} for p, s in optimizer.state.items()}
    p = measure_precision(model, data, steps=2)
    assert set(p.seconds) == {"O0", "O2" if level == "O0" else level}
    assert all(torch.equal(weights[k], v) for k, v in net.state_dict().items())
    assert {id(p) for p in optimizer.state} == set(state)
    assert all(
        torch.equal(state[id(q)][k], v) for q, s in optimizer.state.items() for k, v in s.items()
    )
    assert getattr(net, "_jisu_amp", None) == (None if level == "O0" else level)
    model.train(1, data)  # and it still trains


def test_a_failed_precision_measurement_is_a_warning(monkeypatch):
    from jisu.profiler import doctor

    def fails(*args, **kwargs):
        raise RuntimeError("no low precision here")

    monkeypatch.setattr(doctor, "measure_precision", fails)
    with pytest.warns(UserWarning, match="no low precision here"):
        profiler = diagnose_training(
            amp_model()[0], fast_rows(n=128, batch=32), steps=2, graph_steps=0
        )
    assert profiler.precision is None and len(profiler.epochs) == 3


def sink_run(first_launch: float, device_per_step: float, capture, steps: int = 4):
    """Three epochs of one sink each on a fake clock: the first step call of each sink takes
    ``first_launch`` on the host and every step ``device_per_step`` on the device (the loop's
    CUDA events), as ``Model.train`` records them in sink mode on CUDA."""
    clock = FakeClock()
    profiler = TrainingProfiler(verbose=False, count_device_syncs=False, clock=clock)
    cb = CallbackParams(
        data_wait_seconds=0.0, copy_seconds=0.0, step_seconds=0.0, cur_step_num=0,
        samples_seen=0, device="cpu", amp_level="O2", graph_mode=False, dataset_sink_mode=True,
        step_capture=capture, sink_device_seconds=0.0, sink_first_launch_seconds=0.0, sinks=0,
    )  # fmt: skip
    run = RunContext(cb)
    profiler.on_train_begin(run)
    for _ in range(3):
        profiler.on_train_epoch_begin(run)
        clock.advance(steps * device_per_step)
        cb.step_seconds += steps * device_per_step
        cb.cur_step_num += steps
        cb.samples_seen += 8 * steps
        cb.sinks += 1
        cb.sink_first_launch_seconds += first_launch
        cb.sink_device_seconds += steps * device_per_step
        profiler.on_train_epoch_end(run)
    profiler.on_train_end(run)
    return profiler


def test_a_launch_bound_uncaptured_step_is_named_with_the_reason_it_was_not_captured():
    reason = "the optimizer Adam keeps its step count on the host: pass capturable=True"
    profiler = sink_run(0.009, 0.010, StepCapture(None, reason))
    assert profiler.launch_bound is True and profiler.verdict == "compute-bound"
    report = profiler.report()
    assert f"step capture: not captured ({reason})" in report
    assert (
        "step launch: 9.00 ms on the host to launch a step, 10.00 ms on the device to run one: "
        "launch-bound"
    ) in report
    assert f"the step is launch-bound and was not captured as a CUDA graph ({reason})" in (
        profiler.advice
    )


def test_a_captured_step_that_the_device_keeps_busy_is_not_launch_bound():
    profiler = sink_run(0.001, 0.010, StepCapture("cuda_graph", replays=12, eager_steps=3))
    assert profiler.launch_bound is False
    report = profiler.report()
    assert "step capture: CUDA graph of the whole step: 12 replays, 3 eager steps" in report
    assert "10.00 ms on the device to run one: not launch-bound" in report
    assert "launch-bound" not in profiler.advice


def test_step_mode_has_no_capture_lines():
    profiler = simulate(step=1.0)
    assert profiler.launch_bound is None
    assert "step capture" not in profiler.report() and "step launch" not in profiler.report()
