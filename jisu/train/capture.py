"""Sink mode's train step captured once as a CUDA graph and replayed per batch.

A small step on a GPU is launch-bound: Python launches its kernels one by one (forward,
backward, the optimizer's foreach kernels, the loss-scale update) and the device waits between
them. Sink mode already removes the host reads; with static shapes the whole step (forward,
loss, backward, the optimizer step, AMP casts, the device-side loss-scale update and overflow
skip) can then be recorded once as a CUDA graph and replayed with one launch per batch. That
is what MindSpore's sink mode does on Ascend, and what PyTorch's whole-network capture does.

:func:`sink_step` decides, once per ``Model.train``, how sink mode runs the step:

- ``set_context(sink_capture="cuda_graph")`` (the default): a :class:`GraphedStep` on CUDA
  when nothing rules it out (:func:`capture_blockers`: data parallel, an optimizer with
  host-side state, a float learning rate that a schedule changes per step);
- ``"reduce-overhead"``: the forward and backward through ``torch.compile(mode=
  "reduce-overhead")`` (Inductor's CUDA graphs; the optimizer step stays eager);
- ``"off"``: every kernel launched from Python, as on CPU.

Whatever rules capture out is said in one log line (logger ``jisu.train``), and the reason is
in ``cb_params.step_capture`` for ``jisu doctor``.

A :class:`GraphedStep` runs :data:`WARMUP_STEPS` eager steps first (they create the optimizer's
state, cuBLAS workspaces and a compiled step's kernels, on a side stream as PyTorch requires),
then captures the step's device work (:meth:`jisu.amp.TrainStep.device_step`) on the next batch
and replays it for that batch and every later one: each batch is copied into the graph's
static input buffers (:class:`StaticInputs`; the device feeder has already moved it to the
device on its own stream, so this is a device-to-device copy), the graph is replayed, the
step's host bookkeeping runs (the loss-scale manager's step count), and the outputs are cloned
so that the sink's losses stay distinct until its one read. Nothing is read back.

A captured graph freezes the step's Python: its control flow, its float hyper-parameters, the
tensors it was given. So a :class:`StepSnapshot` compares what the step was captured with (the
optimizer's groups, hyper-parameters and state tensors, the loss-scale manager's tensors and
settings, the step's clipping norm, and every module of the network and of the loss: its
training flag, plain attributes, hooks, parameters and buffers by identity and storage, which
parameters train) with what they are now: the hyper-parameters before every replay
(microseconds), the rest before each sink's first replay (between sinks, replayed callbacks and
evaluation may change anything; about 4 ms for a ResNet-50 on a CPU core) and, when a callback
acts as steps are dispatched, before every replay. If anything changed, the step falls back to
eager for the rest of the run, saying why, and the graph's memory is released.
What it cannot see is Python state outside modules and optimizers (a global counter or Python
random numbers read by the forward): such a step must run with ``sink_capture="off"``.

The capture batch has the shapes of the batch before it; a later batch of other shapes or
dtypes (a last partial batch) runs eagerly and the graph stays for the next one; batches whose
shapes never settle give capture up. The last warm-up step runs under CUDA's sync-debug mode:
a step that synchronises with the host (``.item()``, ``float()`` of a device tensor, a
BatchNorm with ``momentum=None``) is never captured. A capture that fails anyway has trained
nothing: the batch and the rest of the run go eagerly. Random ops stay correct under replay:
PyTorch's CUDA generator is graph-safe (each replay draws fresh numbers, as the eager step
would).

The graph itself sits behind :class:`GraphBackend` (:class:`CudaGraphBackend` on CUDA), so the
decisions above are tested on any machine.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import nn

from .. import distributed
from ..context import get_context
from .callbacks.base import Callback
from .callbacks.learning_rate_scheduler import LearningRateScheduler
from .steps import CompiledStep, cloned_outputs

__all__ = [
    "UNSETTLED_STEPS",
    "WARMUP_STEPS",
    "CudaGraphBackend",
    "GraphBackend",
    "GraphedStep",
    "StaticInputs",
    "StepCapture",
    "StepSnapshot",
    "acts_per_step",
    "capture_blockers",
    "changes_rates_per_step",
    "optimizer_blocker",
    "sink_step",
]

logger = logging.getLogger("jisu.train")

#: eager steps before the capture
WARMUP_STEPS = 3

#: warm-up steps in a row with batches of new shapes after which capture is given up
UNSETTLED_STEPS = 8

#: torch optimizers without host-side state beyond their hyper-parameters
_STATELESS_ON_HOST = (torch.optim.SGD,)


def optimizer_blocker(optimizer: torch.optim.Optimizer) -> str | None:
    """Why ``optimizer``'s step cannot be captured, or None. A captured step must keep its
    state on the device: torch's SGD does; torch's other optimizers with ``capturable=True``
    in every group do (their step counts are device tensors); an optimizer of another kind
    must say so with a ``capturable`` attribute that is True."""
    name = type(optimizer).__name__
    if type(optimizer) in _STATELESS_ON_HOST:  # not a subclass: it may keep state on the host
        return None
    groups = optimizer.param_groups
    if getattr(optimizer, "capturable", False) is True:
        return None
    if type(optimizer).__module__.startswith("torch.optim") and "capturable" in optimizer.defaults:
        if all(g.get("capturable") for g in groups):
            return None
        return f"the optimizer {name} keeps its step count on the host: pass capturable=True"
    return (
        f"the optimizer {name} is not known to be capturable (torch's SGD, or torch "
        "optimizers with capturable=True, are; another optimizer declares capturable = True)"
    )


def capture_blockers(
    optimizer: torch.optim.Optimizer | None,
    device: torch.device,
    per_step_schedule: bool,
    world_size: int = 1,
) -> list[str]:
    """What rules out capturing the train step on ``device`` (empty: nothing).

    ``per_step_schedule``: something changes the learning rate per step (``Model``'s
    ``lr_scheduler`` per step, a ``LearningRateScheduler`` callback); a float rate would then
    stay at its value of the capture, so the groups' rates must be device tensors, which
    :func:`~jisu.train.schedules.rates_on_device` makes of capturable optimizers' rates."""
    if device.type != "cuda":
        return [f"the step runs on {device.type}, and CUDA graphs need CUDA"]
    reasons = []
    if world_size > 1:
        reasons.append("data parallel (DistributedDataParallel) steps are not captured")
    if optimizer is None:
        return [*reasons, "no optimizer"]
    blocker = optimizer_blocker(optimizer)
    if blocker is not None:
        reasons.append(blocker)
    if per_step_schedule:
        floats = [i for i, g in enumerate(optimizer.param_groups) if not torch.is_tensor(g["lr"])]
        if floats:
            reasons.append(
                f"the learning rate of parameter group {floats[0]} is a float, which a graph "
                "keeps at its captured value, and a schedule changes it per step (capturable "
                "optimizers' rates are device tensors: pass capturable=True, or fused=True "
                "for SGD)"
            )
    return reasons


def changes_rates_per_step(schedule: Any, callbacks: list[Any]) -> bool:
    """Whether the learning rate may change between the steps of a sink: ``Model``'s
    ``lr_scheduler`` stepped per step, or a callback acting as each step is dispatched
    (``LearningRateScheduler``, or any that overrides ``on_train_step_dispatched`` and does not
    declare ``acts_on_training = False``)."""
    if schedule is not None and schedule.interval == "step":
        return True
    return any(_dispatches(cb) for cb in callbacks)


def acts_per_step(callbacks: list[Any]) -> bool:
    """Whether a callback may change training inside a sink, other than its rates: one that
    overrides ``on_train_step_dispatched``, is not a ``LearningRateScheduler`` (its rates
    are in the shallow check) and does not declare ``acts_on_training = False``."""
    return any(not isinstance(cb, LearningRateScheduler) and _dispatches(cb) for cb in callbacks)


def _dispatches(cb: Any) -> bool:
    """``cb`` overrides ``on_train_step_dispatched`` and may act on training."""
    hook = getattr(type(cb), "on_train_step_dispatched", Callback.on_train_step_dispatched)
    overrides = hook is not Callback.on_train_step_dispatched
    return overrides and getattr(cb, "acts_on_training", None) is not False


@dataclass
class StepCapture:
    """How sink mode ran the train step, for ``cb_params.step_capture`` and ``jisu doctor``:
    ``kind`` "cuda_graph" or "reduce-overhead" when the step is captured, None when it runs
    eagerly, then with the ``reason``; the replays and the steps run eagerly (the warm-up,
    batches of other shapes, all steps after a fallback) so far."""

    kind: str | None
    reason: str | None = None
    replays: int = 0
    eager_steps: int = 0

    def describe(self) -> str:
        if self.kind == "reduce-overhead":
            return "torch.compile(mode='reduce-overhead'): the forward and backward as CUDA graphs"
        if self.kind is None:
            return f"not captured ({self.reason})"
        line = (
            f"CUDA graph of the whole step: {self.replays} replays, {self.eager_steps} eager steps"
        )
        return line + (f"; then eager ({self.reason})" if self.reason else "")


class GraphBackend(Protocol):
    """Where a graph is recorded and replayed (:class:`CudaGraphBackend`; tests give a CPU one)."""

    def warm_up(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` eagerly, as the steps before a capture must run; its outputs."""

    def probe(self, fn: Callable[[], Any]) -> tuple[Any, str | None]:
        """Run ``fn`` as :meth:`warm_up` does, watched for host synchronisations: its outputs,
        and the first synchronisation seen (None: none; the step can be captured)."""

    def capture(self, fn: Callable[[], Any]) -> Any:
        """Record ``fn``'s device work without running it; its outputs, which each replay
        overwrites. An error leaves nothing recorded and nothing run."""

    def replay(self) -> None:
        """Run the recorded work once more."""


class CudaGraphBackend:
    """:class:`GraphBackend` on a CUDA device: warm-up on a side stream, ``torch.cuda.graph``."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.graph: torch.cuda.CUDAGraph | None = None
        self._side = torch.cuda.Stream(device)

    def warm_up(self, fn: Callable[[], Any]) -> Any:
        current = torch.cuda.current_stream(self.device)
        self._side.wait_stream(current)
        with torch.cuda.stream(self._side):
            outputs = fn()
        current.wait_stream(self._side)
        for t in _tensors(outputs):  # made on the side stream, used on the current one
            t.record_stream(current)
        return outputs

    def probe(self, fn: Callable[[], Any]) -> tuple[Any, str | None]:
        # CUDA's sync-debug mode "warn" lets the step run whole (an error would stop it
        # half-applied) and names each synchronising call; other warnings are passed on
        previous = torch.cuda.get_sync_debug_mode()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                outputs = self.warm_up(fn)
            finally:
                torch.cuda.set_sync_debug_mode(previous)
        syncs = [w for w in caught if "synchroniz" in str(w.message)]
        for w in caught:
            if w not in syncs:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return outputs, (str(syncs[0].message).splitlines()[0] if syncs else None)

    def capture(self, fn: Callable[[], Any]) -> Any:
        # torch.cuda.graph's steps, with two differences: the stream is restored when the
        # capture fails (torch.cuda.graph leaves it set when capture_end raises), and
        # "thread_local" mode, so that the device feeder's thread copying the next batches
        # on its own stream meanwhile is not taken for an unsafe call within the capture
        graph = torch.cuda.CUDAGraph()
        current = torch.cuda.current_stream(self.device)
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(current)
        with torch.cuda.stream(stream):
            graph.capture_begin(capture_error_mode="thread_local")
            try:
                outputs = fn()
            except BaseException:
                with contextlib.suppress(Exception):  # the capture is void already
                    graph.capture_end()
                raise
            graph.capture_end()
        current.wait_stream(stream)
        self.graph = graph
        return outputs

    def replay(self) -> None:
        self.graph.replay()


def _tensors(outputs: Any) -> list[torch.Tensor]:
    items = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    return [t for t in items if isinstance(t, torch.Tensor)]


def _signature(tensors: Any) -> tuple:
    return tuple(
        (tuple(t.shape), t.dtype, t.device) if isinstance(t, torch.Tensor) else ("value", t)
        for t in tensors
    )


class StaticInputs:
    """The graph's input buffers: copies of the capture batch's tensors, which every later
    batch of the same shapes, dtypes and devices is copied into before a replay."""

    def __init__(self, tensors: list[torch.Tensor]) -> None:
        if not all(isinstance(t, torch.Tensor) for t in tensors):
            raise TypeError("StaticInputs: a captured step's inputs must all be tensors")
        self.tensors = [t.detach().clone() for t in tensors]
        self.signature = _signature(self.tensors)

    def matches(self, tensors: list[Any]) -> bool:
        """Whether ``tensors`` fit the buffers (same count, shapes, dtypes and devices)."""
        return len(tensors) == len(self.tensors) and _signature(tensors) == self.signature

    def load(self, tensors: list[torch.Tensor]) -> None:
        """Copy ``tensors`` into the buffers (on the current stream, before the replay)."""
        for buffer, t in zip(self.tensors, tensors):
            buffer.copy_(t)


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _picture(value: Any) -> Any:
    """A host-side picture of a hyper-parameter: a tensor by identity, a plain value as it is."""
    if isinstance(value, torch.Tensor):
        return ("tensor", id(value))
    if isinstance(value, (tuple, list)):
        return tuple(_picture(v) for v in value)
    return value


def _tensor(t: Any) -> Any:
    """A tensor by identity and storage (``p.data = ...`` keeps the one, moves the other)."""
    if t is None:
        return None
    return (id(t), t.data_ptr(), t.dtype, tuple(t.shape))


def _attributes(obj: Any) -> tuple:
    """``obj``'s public plain attributes (hyper-parameters, flags), in a comparable form."""
    return tuple((k, v) for k, v in vars(obj).items() if not k.startswith("_") and _plain(v))


class StepSnapshot:
    """What a captured step froze, pictured from host values only (no device read).

    Built at the capture. Its *shallow* part, cheap enough for every step, pictures the
    optimizer's groups list and each group's hyper-parameters (a tensor by identity), the
    loss-scale manager (its tensors and settings) and the step's clipping norm: what
    schedules and per-step callbacks change. Its *deep* part adds the optimizer's state
    object and each parameter's state tensors, and every module of ``modules`` (the network,
    the loss when it is a module): their order, training flags, plain attributes, hooks,
    parameters and buffers (by identity and storage, and whether each parameter trains).
    :meth:`changed` says what differs now, or None. The snapshot holds the tensors it
    pictured, so that none the graph writes can be freed and its memory reused.
    """

    def __init__(
        self,
        modules: nn.Module | list[nn.Module],
        optimizer: torch.optim.Optimizer,
        manager: Any = None,
        step: Any = None,
    ) -> None:
        self.modules = [modules] if isinstance(modules, nn.Module) else list(modules)
        self.optimizer, self.manager, self.step = optimizer, manager, step
        self._held: list[torch.Tensor] = []
        self._shallow = self._shallow_entries()
        self._deep = self._deep_entries(self._held)

    def _shallow_entries(self) -> list[tuple]:
        opt = self.optimizer
        entries: list[tuple] = [("the optimizer's param_groups", id(opt.param_groups))]
        for i, group in enumerate(opt.param_groups):
            for key, value in group.items():
                if key != "params":
                    entries.append(("group", i, key, _picture(value)))
        manager = self.manager
        if manager is not None:
            tensors = (manager._scale, manager._good, manager._bad)
            entries.append(("the loss-scale manager's state", tuple(map(id, tensors))))
            entries.append(("the loss-scale manager's settings", _attributes(manager)))
        if self.step is not None:
            entries.append(("the step's max_grad_norm", getattr(self.step, "max_grad_norm", None)))
        return entries

    def _deep_entries(self, held: list[torch.Tensor] | None = None) -> list[tuple]:
        opt = self.optimizer
        entries: list[tuple] = [("the optimizer's state", id(opt.state))]
        for i, group in enumerate(opt.param_groups):
            entries.append(("group", i, "params", tuple(map(_tensor, group["params"]))))
            states = []
            for p in group["params"]:
                state = opt.state.get(p)
                items = state.items() if state is not None else ()
                tensors = [(k, v) for k, v in items if isinstance(v, torch.Tensor)]
                if held is not None:
                    held.extend(v for _, v in tensors)
                states.append((id(state), tuple((k, _tensor(v)) for k, v in tensors)))
            entries.append(("group", i, "optimizer state", tuple(states)))
        for root in self.modules:
            for name, module in root.named_modules():
                params, buffers = module._parameters, module._buffers
                entries.append((
                    "module", name or type(module).__name__, id(module), _attributes(module),
                    len(module._forward_hooks), len(module._forward_pre_hooks),
                    len(module._backward_hooks),
                    tuple((k, _tensor(p), p is not None and p.requires_grad)
                          for k, p in params.items()),
                    tuple((k, _tensor(b)) for k, b in buffers.items()),
                ))  # fmt: skip
                if held is not None:
                    held.extend(t for t in (*params.values(), *buffers.values()) if t is not None)
        return entries

    def changed(self, deep: bool = True) -> str | None:
        """What changed since the capture (None: nothing; the graph may replay); only the
        shallow part unless ``deep``."""
        why = _difference(self._shallow, self._shallow_entries())
        if why is None and deep:
            why = _difference(self._deep, self._deep_entries())
        return why


def _difference(taken: list[tuple], now: list[tuple]) -> str | None:
    """What differs between two pictures, in words (None: nothing)."""
    if now == taken:
        return None
    if len(now) != len(taken):
        return "the modules, or the optimizer's groups or hyper-parameters, changed"
    was, new = next((a, b) for a, b in zip(taken, now) if a != b)
    if was[0] == "group":
        what = f"parameter group {was[1]}'s {was[2]}"
    elif was[0] == "module":
        if was[1] != new[1]:
            return "the modules changed after the capture"
        parts = ("place", "attributes", "hooks", "hooks", "hooks", "parameters", "buffers")
        index = next(i for i in range(2, len(was)) if was[i] != new[i])
        what = f"module {was[1]}'s {parts[index - 2]}"
    else:
        what = was[0]
    return f"{what} changed after the capture"


class GraphedStep:
    """A train step whose device work is captured once and replayed (see the module).

    Args:
        step: the train step (:class:`~jisu.amp.TrainStep`, or a compiled one): called for the
            eager steps; its ``device_step`` is captured, its ``after_device_step`` runs after
            each replay.
        backend: where the graph lives (:class:`CudaGraphBackend` on CUDA).
        network, optimizer, manager: what the step trains (``network`` a module or a list:
            the network and a loss module), pictured at the capture (:class:`StepSnapshot`).
        warmup: eager steps before the capture.
        watch_every_step: the whole :class:`StepSnapshot` before every replay; otherwise its
            deep part only before the first replay after :meth:`begin_window` (a sink's first
            step: between sinks, replayed callbacks and evaluation can change anything) and
            its shallow part (what schedules change) before the others.
    """

    def __init__(
        self,
        step: Any,
        backend: GraphBackend,
        network: nn.Module | list[nn.Module],
        optimizer: torch.optim.Optimizer,
        manager: Any = None,
        warmup: int = WARMUP_STEPS,
        watch_every_step: bool = False,
    ) -> None:
        self.step = step
        self.watch_every_step = watch_every_step
        self.backend = backend
        self.network, self.optimizer, self.manager = network, optimizer, manager
        self.warmup = warmup
        self.report = StepCapture("cuda_graph")
        self.inputs: StaticInputs | None = None
        self.snapshot: StepSnapshot | None = None
        self._outputs: Any = None
        self._eager = False
        self._warmed = 0
        self._told_shapes = False
        self._last_signature: tuple | None = None
        self._deep_due = True  # the deep check before a window's first replay
        self._unsettled = 0  # warm-up steps in a row whose batch changed shapes

    @property
    def captured(self) -> bool:
        """Whether a graph is recorded and in use."""
        return self.inputs is not None and not self._eager

    def __call__(self, *tensors: Any) -> Any:
        if self._eager:
            return self._run_eagerly(tensors)
        if self.inputs is None:
            signature = _signature(tensors)
            if self._warmed < self.warmup or signature != self._last_signature:
                return self._warm_up(tensors, signature)
            return self._capture(list(tensors))
        why = self.snapshot.changed(deep=self._deep_due or self.watch_every_step)
        self._deep_due = False
        if why is not None:
            self._fall_back(why)
            return self._run_eagerly(tensors)
        if not self.inputs.matches(list(tensors)):
            if not self._told_shapes:
                self._told_shapes = True
                logger.info(
                    "sink mode: a batch of other shapes than the captured step's (%s, not %s) "
                    "runs eagerly; the graph stays for the batches that fit",
                    _shapes(tensors),
                    _shapes(self.inputs.tensors),
                )
            return self._run_eagerly(tensors)
        self.inputs.load(list(tensors))
        return self._replay()

    def __getattr__(self, name: str) -> Any:
        step = self.__dict__.get("step")  # absent while unpickling or copying
        if step is None:
            raise AttributeError(name)
        return getattr(step, name)

    def begin_window(self) -> None:
        """A sink begins: the next replay is preceded by the deep check."""
        self._deep_due = True

    def _warm_up(self, tensors: tuple, signature: tuple) -> Any:
        """An eager step before the capture. The capture batch must have the shapes of the
        batch before it (not a short last one), and the warm-up steps from the last planned
        one on are watched for host synchronisations, which a graph cannot hold."""
        self._unsettled = 0 if signature == self._last_signature else self._unsettled + 1
        self._last_signature = signature
        self._warmed += 1
        self.report.eager_steps += 1
        if self._warmed < self.warmup:
            return self.backend.warm_up(lambda: self.step(*tensors))
        outputs, sync = self.backend.probe(lambda: self.step(*tensors))
        if sync is not None:
            self._fall_back(f"the step synchronises with the host ({sync})")
        elif self._unsettled >= UNSETTLED_STEPS:
            self._fall_back(
                f"the batches' shapes changed at each of {UNSETTLED_STEPS} steps in a row "
                "(capture needs static shapes: drop_remainder=True or padded batches)"
            )
        return outputs

    def _run_eagerly(self, tensors: tuple) -> Any:
        self.report.eager_steps += 1
        return self.step(*tensors)

    def _replay(self) -> Any:
        self.backend.replay()
        self.step.after_device_step()
        self.report.replays += 1
        return cloned_outputs(self._outputs)

    def _capture(self, tensors: list[torch.Tensor]) -> Any:
        try:
            inputs = StaticInputs(tensors)
            snapshot_before = StepSnapshot(self.network, self.optimizer, self.manager, self.step)
            outputs = self.backend.capture(lambda: self.step.device_step(*inputs.tensors))
        except Exception as exc:  # nothing was recorded or run: the batch trains eagerly
            first = str(exc).splitlines()[0] if str(exc) else ""
            self._fall_back(f"the capture failed: {type(exc).__name__}: {first}")
            return self._run_eagerly(tuple(tensors))
        # the capture's own Python (zero_grad, the backward) rebinds the gradients only
        self.inputs, self._outputs, self.snapshot = inputs, outputs, snapshot_before
        logger.info(
            "sink mode: the train step is captured as a CUDA graph after %d eager steps "
            "(set_context(sink_capture='off') launches it per step)",
            self._warmed,
        )
        return self._replay()

    def _fall_back(self, reason: str) -> None:
        self._eager = True
        self.report.reason = reason
        # the graph's memory (a whole step's activations) goes back before the eager steps
        self.inputs = self._outputs = self.snapshot = None
        if isinstance(self.backend, CudaGraphBackend):
            self.backend.graph = None
        logger.warning("sink mode: the train step runs eagerly from here on: %s", reason)


def _shapes(tensors: Any) -> str:
    return ", ".join(
        str(tuple(t.shape)) if isinstance(t, torch.Tensor) else type(t).__name__ for t in tensors
    )


def sink_step(
    step: Any,
    device: torch.device,
    network: nn.Module | list[nn.Module],
    optimizer: torch.optim.Optimizer | None,
    manager: Any,
    per_step_schedule: bool,
    backend: GraphBackend | None = None,
    watch_every_step: bool = False,
) -> tuple[Any, StepCapture]:
    """The step sink mode runs on ``device`` and how it runs (see the module): ``step`` as it
    is, a :class:`GraphedStep` over it, or (``sink_capture="reduce-overhead"``) the step
    compiled with that mode. ``backend``: where a graph lives (default: CUDA's);
    ``watch_every_step``: a callback acts as each step is dispatched
    (:func:`acts_per_step`), so the whole snapshot is checked before every replay."""
    mode = get_context("sink_capture")
    if mode == "off":
        return step, StepCapture(None, "set_context(sink_capture='off')")
    blockers = capture_blockers(optimizer, device, per_step_schedule, distributed.get_group_size())
    if device.type != "cuda":  # not a fallback: the CPU loop is the same loop
        return step, StepCapture(None, blockers[0])
    if mode == "reduce-overhead":
        eager = step.eager if isinstance(step, CompiledStep) else step
        return CompiledStep(eager, mode="reduce-overhead"), StepCapture("reduce-overhead")
    if blockers:
        reason = "; ".join(blockers)
        logger.warning("sink mode: the train step is not captured as a CUDA graph: %s", reason)
        return step, StepCapture(None, reason)
    graphed = GraphedStep(
        step, backend or CudaGraphBackend(device), network, optimizer, manager,
        watch_every_step=watch_every_step,
    )  # fmt: skip
    return graphed, graphed.report
