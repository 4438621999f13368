"""Sink mode's captured train step (jisu.train.capture), everything that runs without CUDA.

The graph itself is behind a backend; here a CPU stand-in plays it as CUDA does: a capture
records the step without training (whatever the recording touched is put back, the random
generator included), a replay runs the recorded step again on the static input buffers and
writes into the captured outputs. Against it the tests check what jisu decides and does around
the graph: a captured run trains exactly the eager run (weights, loss-scale state, losses,
dropout), batches of other shapes run eagerly, any change the graph cannot see makes the step
fall back before the next replay (never a stale replay), a failed capture trains its batch
once, and the capture decision names what rules capture out. The `gpu` tests in
test_capture_gpu.py run the same comparisons with real CUDA graphs.
"""

from __future__ import annotations

import copy
import logging

import pytest
import torch
from torch import nn

import jisu
from jisu import amp
from jisu.train import LearningRateScheduler, LossMonitor
from jisu.train.callbacks.progress_bar import ProgressBar
from jisu.train.capture import (
    UNSETTLED_STEPS,
    WARMUP_STEPS,
    GraphedStep,
    StaticInputs,
    StepSnapshot,
    acts_per_step,
    capture_blockers,
    changes_rates_per_step,
    optimizer_blocker,
    sink_step,
)
from jisu.train.schedules import LRSchedulerRunner
from jisu.train.steps import CompiledStep

CUDA = torch.device("cuda")  # a device name only: nothing here runs on it
STEPS = 9


class RecordingBackend:
    """A CPU stand-in for a CUDA graph (see the module docstring)."""

    def __init__(self, network, optimizer, manager=None, fail: Exception | None = None):
        self.network, self.optimizer, self.manager, self.fail = network, optimizer, manager, fail
        self.warmups = self.captures = self.replays = 0
        self.sync = None
        self._fn = self._outputs = None

    def warm_up(self, fn):
        self.warmups += 1
        return fn()

    def probe(self, fn):  # ``sync``: what CUDA's sync-debug mode would have named
        return self.warm_up(fn), self.sync

    def _state(self):
        tensors = [*self.network.parameters(), *self.network.buffers()]
        for state in self.optimizer.state.values():
            tensors += [v for v in state.values() if torch.is_tensor(v)]
        if self.manager is not None:
            tensors += [self.manager._scale, self.manager._good, self.manager._bad]
        return tensors, [t.detach().clone() for t in tensors]

    def capture(self, fn):
        if self.fail is not None:
            raise self.fail
        tensors, saved = self._state()
        keys = {id(p): set(s) for p, s in self.optimizer.state.items()}
        rng = torch.get_rng_state()
        outputs = fn()
        with torch.no_grad():  # a capture trains nothing
            for t, old in zip(tensors, saved):
                t.copy_(old)
        assert {id(p): set(s) for p, s in self.optimizer.state.items()} == keys
        torch.set_rng_state(rng)
        self.captures += 1
        self._fn, self._outputs = fn, outputs
        return outputs

    def replay(self):
        self.replays += 1
        new = self._fn()
        pairs = zip(self._outputs, new) if isinstance(new, tuple) else [(self._outputs, new)]
        for out, value in pairs:
            out.copy_(value)


def network() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))


def batches(n=STEPS, size=8):
    g = torch.Generator().manual_seed(1)
    return [
        (torch.randn(size, 6, generator=g), torch.randint(0, 3, (size,), generator=g))
        for _ in range(n)
    ]


def make(manager=True, lr=0.1):
    net = network()
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    scale = amp.DynamicLossScaleManager(2.0**10, scale_window=3) if manager else None
    step = amp.TrainStep(amp.train_step.loss_forward(net, nn.CrossEntropyLoss()), opt, scale)
    return net, opt, scale, step


def graphed(manager=True, fail=None, lr=0.1):
    """A graphed step whose snapshot is checked whole before every replay (as a sink's first
    step is; the test of begin_window checks the rest)."""
    net, opt, scale, step = make(manager, lr)
    backend = RecordingBackend(net, opt, scale, fail)
    graphed_step = GraphedStep(step, backend, net, opt, scale, watch_every_step=True)
    return net, opt, scale, graphed_step, backend


def run(step, data, between=None):
    torch.manual_seed(5)  # dropout draws
    losses = []
    for i, (x, y) in enumerate(data):
        losses.append(step(x, y))
        if between is not None:
            between(i)
    return losses


def assert_same_weights(a: nn.Module, b: nn.Module):
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        torch.testing.assert_close(p, q, rtol=0, atol=0, msg=f"{name} differs")


def test_a_captured_step_trains_exactly_the_eager_step_dropout_and_loss_scale_included():
    eager_net, _, eager_scale, eager = make()
    net, _, scale, step, backend = graphed()
    eager_losses = run(eager, batches())
    losses = run(step, batches())
    assert_same_weights(eager_net, net)
    assert scale.state_dict() == eager_scale.state_dict()  # the host count ran per replay too
    assert [float(v) for v in losses] == [float(v) for v in eager_losses]
    assert backend.warmups == WARMUP_STEPS and backend.captures == 1
    assert backend.replays == step.report.replays == STEPS - WARMUP_STEPS
    assert step.report.eager_steps == WARMUP_STEPS and step.report.reason is None
    assert step.captured
    # each step's loss is its own tensor, not the graph's output overwritten by the next replay
    assert len({id(v) for v in losses}) == STEPS


def test_the_capture_batch_is_trained_once_by_its_replay():
    net, _, _, step, backend = graphed(manager=False)
    eager_net, _, _, eager = make(manager=False)
    data = batches(WARMUP_STEPS + 1)
    run(step, data)
    run(eager, data)
    assert backend.captures == backend.replays == 1
    assert_same_weights(eager_net, net)


def test_a_batch_of_other_shapes_runs_eagerly_and_the_graph_stays(caplog):
    data = batches(6) + batches(1, size=5) + batches(2)
    eager_net, _, _, eager = make()
    net, _, _, step, backend = graphed()
    with caplog.at_level(logging.INFO, logger="jisu.train"):
        run(step, data)
    run(eager, data)
    assert_same_weights(eager_net, net)
    assert step.captured and backend.replays == len(data) - WARMUP_STEPS - 1
    assert step.report.eager_steps == WARMUP_STEPS + 1
    assert "(5, 6), (5,), not (8, 6), (8,)" in caplog.text


def test_a_failed_capture_trains_its_batch_eagerly_and_says_why(caplog):
    failure = RuntimeError("CUDA error: operation not permitted when stream is capturing\nmore")
    eager_net, _, _, eager = make()
    net, _, _, step, backend = graphed(fail=failure)
    with caplog.at_level(logging.WARNING, logger="jisu.train"):
        run(step, batches())
    run(eager, batches())
    assert_same_weights(eager_net, net)
    assert not step.captured and backend.replays == 0
    assert step.report.eager_steps == STEPS
    assert step.report.reason == (
        "the capture failed: RuntimeError: CUDA error: operation not permitted when stream is "
        "capturing"
    )
    assert caplog.text.count("runs eagerly from here on") == 1


def set_float_lr(opt):
    def change(i):
        if i == 5:
            opt.param_groups[0]["lr"] = 0.05

    return change


@pytest.mark.parametrize(
    "change, what",
    [
        (lambda net, opt, scale: set_float_lr(opt), "parameter group 0's lr"),
        (
            lambda net, opt, scale: lambda i: i == 5 and setattr(net[2], "p", 0.0),
            "module 2's attributes",
        ),
        (lambda net, opt, scale: lambda i: i == 5 and net[2].eval(), "module 2's attributes"),
        (
            lambda net, opt, scale: lambda i: i == 5 and net[0].weight.requires_grad_(False),
            "module 0's parameters",
        ),
        (
            lambda net, opt, scale: (
                lambda i: i == 5 and opt.load_state_dict(copy.deepcopy(opt.state_dict()))
            ),
            "the optimizer's param_groups",
        ),
        (
            lambda net, opt, scale: lambda i: i == 5 and scale.load_state_dict(scale.state_dict()),
            "the loss-scale manager's state",
        ),
    ],
    ids=["float-lr", "dropout-p", "eval-mode", "frozen", "optimizer-loaded", "scale-loaded"],
)
def test_a_change_the_graph_cannot_see_makes_the_step_eager_before_the_next_replay(
    change, what, caplog
):
    eager_net, eager_opt, eager_scale, eager = make()
    net, opt, scale, step, backend = graphed()
    with caplog.at_level(logging.WARNING, logger="jisu.train"):
        run(step, batches(), change(net, opt, scale))
    run(eager, batches(), change(eager_net, eager_opt, eager_scale))
    assert_same_weights(eager_net, net)
    assert backend.replays == 6 - WARMUP_STEPS  # steps 3..5 replayed, none after the change
    assert step.report.reason == f"{what} changed after the capture"
    assert "runs eagerly from here on" in caplog.text and what in caplog.text


def test_a_tensor_rate_filled_in_place_keeps_the_graph_and_every_step_trains_at_its_rate():
    def schedule(opt):
        return lambda i: opt.param_groups[0]["lr"].fill_(0.1 / (i + 2))

    eager_net, eager_opt, _, eager = make(lr=torch.tensor(0.1))
    net, opt, _, step, backend = graphed(lr=torch.tensor(0.1))
    run(step, batches(), schedule(opt))
    run(eager, batches(), schedule(eager_opt))
    assert_same_weights(eager_net, net)
    assert step.captured and backend.replays == STEPS - WARMUP_STEPS


def test_a_forward_that_changes_its_own_attributes_is_not_replayed():
    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(6, 3)
            self.calls = 0

        def forward(self, x):
            self.calls += 1  # Python state a replay would not advance
            return self.linear(x)

    torch.manual_seed(0)
    net = Counting()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    step = amp.TrainStep(amp.train_step.loss_forward(net, nn.CrossEntropyLoss()), opt)
    graphed_step = GraphedStep(step, RecordingBackend(net, opt), net, opt)
    run(graphed_step, batches())
    assert graphed_step.report.reason == "module Counting's attributes changed after the capture"
    assert graphed_step.report.replays == 1  # the capture batch's own, then eager


def test_layers_without_a_bias_and_a_loss_with_settings_are_captured_and_watched():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 16, bias=False), nn.BatchNorm1d(16, affine=False),
                        nn.ReLU(), nn.Linear(16, 3))  # fmt: skip
    loss = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    step = amp.TrainStep(amp.train_step.loss_forward(net, loss), opt)
    graphed_step = GraphedStep(step, RecordingBackend(net, opt), [net, loss], opt)
    graphed_step.watch_every_step = True
    run(graphed_step, batches(6))
    assert graphed_step.captured and graphed_step.report.replays == 6 - WARMUP_STEPS
    loss.label_smoothing = 0.1  # frozen in the graph: seen before the next replay
    run(graphed_step, batches(1))
    assert (
        graphed_step.report.reason
        == "module CrossEntropyLoss's attributes changed after the capture"
    )


def test_cleared_optimizer_state_and_moved_storage_are_seen():
    _, opt, _, step, _ = graphed()
    run(step, batches(5))
    assert step.captured
    opt.state.clear()
    run(step, batches(1))
    assert step.report.reason == "parameter group 0's optimizer state changed after the capture"
    net, _, _, step, _ = graphed()
    run(step, batches(5))
    with torch.no_grad():
        net[0].weight.data = net[0].weight.data.clone()  # the same Parameter, new storage
    run(step, batches(1))
    assert step.report.reason == "parameter group 0's params changed after the capture"
    assert step.inputs is None and step.snapshot is None  # the graph's buffers given back


def test_a_step_that_synchronises_with_the_host_is_not_captured(caplog):
    net, opt, scale, step = make()
    backend = RecordingBackend(net, opt, scale)
    backend.sync = "called a synchronizing CUDA operation"
    graphed_step = GraphedStep(step, backend, net, opt, scale)
    eager_net, _, _, eager = make()
    with caplog.at_level(logging.WARNING, logger="jisu.train"):
        run(graphed_step, batches())
    run(eager, batches())
    assert_same_weights(eager_net, net)
    assert backend.captures == 0 and graphed_step.report.eager_steps == STEPS
    assert graphed_step.report.reason == (
        "the step synchronises with the host (called a synchronizing CUDA operation)"
    )


def test_the_capture_batch_has_the_shapes_of_the_batch_before_it():
    # warm-up batches of 8, then a short one where the capture would come: it runs eagerly,
    # and the graph is made on the next two full batches' shapes
    data = batches(WARMUP_STEPS) + batches(1, size=5) + batches(4)
    net, _, _, step, backend = graphed()
    eager_net, _, _, eager = make()
    run(step, data)
    run(eager, data)
    assert_same_weights(eager_net, net)
    assert step.inputs.signature[0][0] == (8, 6)
    assert backend.replays == 3 and step.report.eager_steps == WARMUP_STEPS + 2


def test_shapes_that_never_settle_give_capture_up():
    data = [batches(1, size=4 + i)[0] for i in range(WARMUP_STEPS + UNSETTLED_STEPS)]
    _, _, _, step, backend = graphed()
    run(step, data)
    assert backend.captures == 0 and step.report.reason.startswith(
        f"the batches' shapes changed at each of {UNSETTLED_STEPS} steps in a row"
    )


def test_static_inputs_take_batches_of_their_shapes_only():
    x, y = torch.ones(4, 3), torch.zeros(4, dtype=torch.int64)
    inputs = StaticInputs([x, y])
    assert inputs.tensors[0] is not x and inputs.matches([x * 2, y + 1])
    assert not inputs.matches([x, y.int()])
    assert not inputs.matches([x[:3], y[:3]])
    assert not inputs.matches([x])
    inputs.load([x * 2, y + 1])
    assert inputs.tensors[0].eq(2).all() and inputs.tensors[1].eq(1).all()
    with pytest.raises(TypeError, match="must all be tensors"):
        StaticInputs([x, "label"])


def test_a_snapshot_is_unchanged_by_training_itself():
    net, opt, scale, step = make()
    for x, y in batches(3):
        step(x, y)
    snapshot = StepSnapshot(net, opt, scale, step)
    for x, y in batches(3):
        step(x, y)  # weights, moments, the scale: in place
    assert snapshot.changed() is None


def test_the_device_step_and_its_host_bookkeeping_make_one_step():
    a_net, _, a_scale, a = make()
    b_net, _, b_scale, b = make()
    run(a, batches(4))
    torch.manual_seed(5)
    for x, y in batches(4):
        b.device_step(x, y)
        b.after_device_step()
    assert_same_weights(a_net, b_net)
    assert a_scale.state_dict() == b_scale.state_dict() and a_scale.state_dict()["steps"] == 4


# ---------------------------------------------------------------- the decision
def params():
    return [nn.Parameter(torch.zeros(2))]


class Custom(torch.optim.Optimizer):
    def __init__(self, ps, capturable=None):
        super().__init__(ps, {"lr": 0.1})
        if capturable is not None:
            self.capturable = capturable

    def step(self, closure=None):
        pass


@pytest.mark.parametrize(
    "optimizer, reason",
    [
        (lambda: torch.optim.SGD(params(), lr=0.1, momentum=0.9), None),
        (lambda: torch.optim.Adam(params(), capturable=True), None),
        (lambda: torch.optim.AdamW(params(), capturable=True), None),
        (lambda: torch.optim.Adam(params()), "Adam keeps its step count on the host"),
        (lambda: torch.optim.RMSprop(params()), "RMSprop keeps its step count on the host"),
        (lambda: Custom(params()), "Custom is not known to be capturable"),
        (lambda: Custom(params(), capturable=True), None),
        (lambda: torch.optim.LBFGS(params()), "LBFGS is not known to be capturable"),
        (lambda: type("Lars", (torch.optim.SGD,), {})(params(), lr=0.1),
         "Lars is not known to be capturable"),
    ],
    ids=["sgd", "adam-capturable", "adamw-capturable", "adam", "rmsprop", "custom",
         "custom-declared", "lbfgs", "sgd-subclass"],
)  # fmt: skip
def test_which_optimizers_can_be_captured(optimizer, reason):
    got = optimizer_blocker(optimizer())
    assert (got is None) if reason is None else (reason in got)


def test_what_rules_capture_out_is_named():
    sgd = torch.optim.SGD(params(), lr=0.1)
    assert capture_blockers(sgd, torch.device("cpu"), False) == [
        "the step runs on cpu, and CUDA graphs need CUDA"
    ]
    assert capture_blockers(sgd, CUDA, False) == []
    assert capture_blockers(sgd, CUDA, False, world_size=2) == [
        "data parallel (DistributedDataParallel) steps are not captured"
    ]
    (float_rate,) = capture_blockers(sgd, CUDA, per_step_schedule=True)
    assert float_rate.startswith("the learning rate of parameter group 0 is a float")
    tensor_rate = torch.optim.SGD(params(), lr=torch.tensor(0.1))
    assert capture_blockers(tensor_rate, CUDA, per_step_schedule=True) == []
    both = capture_blockers(torch.optim.Adam(params()), CUDA, True, world_size=2)
    assert len(both) == 3


def test_what_changes_the_rate_per_step():
    net = network()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    per_step = LRSchedulerRunner(torch.optim.lr_scheduler.StepLR(opt, 2), opt)
    per_epoch = LRSchedulerRunner(
        {"scheduler": torch.optim.lr_scheduler.StepLR(opt, 2), "interval": "epoch"}, opt
    )
    assert changes_rates_per_step(per_step, [])
    assert not changes_rates_per_step(per_epoch, [LossMonitor(), ProgressBar()])
    assert changes_rates_per_step(None, [LearningRateScheduler(lambda lr, step: lr)])
    assert not changes_rates_per_step(None, [])


@pytest.fixture
def context():
    yield jisu.set_context
    jisu.set_context(sink_capture="cuda_graph")


def test_sink_step_follows_the_context_and_the_device(context, caplog):
    net, opt, scale, step = make()
    args = (net, opt, scale)
    same, report = sink_step(step, torch.device("cpu"), *args, per_step_schedule=False)
    assert same is step and report.kind is None and "runs on cpu" in report.describe()
    backend = RecordingBackend(*args)
    graphed_step, report = sink_step(step, CUDA, *args, False, backend=backend)
    assert isinstance(graphed_step, GraphedStep) and graphed_step.backend is backend
    assert report is graphed_step.report and report.kind == "cuda_graph"
    with caplog.at_level(logging.WARNING, logger="jisu.train"):
        same, report = sink_step(step, CUDA, *args, per_step_schedule=True, backend=backend)
    assert same is step and report.reason.startswith("the learning rate of parameter group 0")
    assert "not captured as a CUDA graph: the learning rate" in caplog.text
    context(sink_capture="off")
    same, report = sink_step(step, CUDA, *args, False, backend=backend)
    assert same is step and report.describe() == "not captured (set_context(sink_capture='off'))"
    context(sink_capture="reduce-overhead")
    compiled, report = sink_step(step, CUDA, *args, False)
    assert isinstance(compiled, CompiledStep) and compiled.mode == "reduce-overhead"
    assert compiled.eager is step and report.kind == "reduce-overhead"
    with pytest.raises(ValueError, match="sink_capture must be one of"):
        context(sink_capture="graph")


def test_model_train_in_sink_mode_says_how_the_step_ran():
    net = network()
    model = jisu.Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    data = jisu.dataset.NumpySlicesDataset(
        {"x": torch.randn(32, 6).numpy(), "y": torch.randint(0, 3, (32,)).numpy()}, shuffle=False
    ).batch(8)
    model.train(1, data, dataset_sink_mode=True)
    capture = model._state.step_capture
    assert capture.kind is None and capture.reason.startswith("the step runs on cpu")
    model.train(1, data)
    assert model._state.step_capture is None  # step mode: no sink, nothing to capture


def test_the_deep_check_runs_once_per_sink_unless_a_callback_acts_per_step():
    # a module attribute changed inside a sink: seen at the next sink's first replay (replayed
    # callbacks act between sinks), or at once when a callback acts as steps are dispatched
    for every_step, replays in ((False, 3), (True, 2)):
        net, opt, scale, step = make()
        graphed_step = GraphedStep(
            step, RecordingBackend(net, opt, scale), net, opt, scale, watch_every_step=every_step
        )
        data = batches()
        for i, (x, y) in enumerate(data):
            if i % 3 == 0:
                graphed_step.begin_window()  # sinks of 3 steps
            graphed_step(x, y)
            if i == 4:
                net[2].p = 0.0
        assert graphed_step.report.replays == replays
        assert graphed_step.report.reason == "module 2's attributes changed after the capture"


def test_which_callbacks_act_per_step():
    class Acting(jisu.train.Callback):
        def on_train_step_dispatched(self, run_context):
            pass

    assert acts_per_step([Acting()])
    assert not acts_per_step(
        [LearningRateScheduler(lambda lr, s: lr), ProgressBar(), LossMonitor()]
    )
