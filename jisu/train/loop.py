"""The loops of ``Model``: :class:`EpochLoop`, one epoch of training as windows of steps, and
:class:`EvalLoop`, one evaluation pass; both are a :class:`BatchLoop` (batches from a feeder,
the state's clocks, the step call).

A *window* is a run of steps the loop dispatches without reading anything back from the
device; then each of its steps is handed, in order, to the step callbacks. Sink mode and the
eager mode are the same loop with different windows:

- **sink mode** (``replay``): a window is a whole sink (the epoch, or the ``sink_size`` steps
  left of it). At its end the losses are read back in one transfer (the sink's only host
  synchronisation) and checked: a NaN or inf loss stops training with an error, after that
  step's callbacks. The step callbacks are then replayed, each step with its own loss as a
  0-d CPU tensor in ``net_outputs``; ``weights_current`` is False but for the last step,
  whose weights are the current ones.
- **eager**: a window is one step, and its callbacks run live around it:
  ``on_train_step_begin`` before the step, ``on_train_step_end`` after it with the step's
  outputs as they are. Nothing is read back (a callback's ``float(loss)`` is then the
  step's sync), nor checked (``LossMonitor`` checks).

Either way, right after each step call returns and before its callbacks, the Model's
``lr_scheduler`` is stepped and ``on_train_step_dispatched`` (a jisu hook: the progress bar's,
``LearningRateScheduler``'s) is called, with ``dispatched_step_num`` counting the step: in sink
mode while the sink runs, with nothing read back, so whatever sets the next step's learning
rate there does so per step, exactly as in step mode. Sink mode changes when the host sees the
losses, never the updates applied; replayed callbacks that act on training anyway are reported
(:mod:`jisu.train.replay_guard`). In GRAPH_MODE ``on_train_compile_begin`` is called before
the step call that compiles (the first). The clocks in the
:class:`~jisu.train.state.TrainState` count each batch's wait and copy as it is fetched and
each step's call (and a sink's read) as it runs, so a sink's replayed callbacks see its
complete clocks. A stop request ends the epoch after the window in progress.

The state's ``epoch_ended`` turns True at the epoch's last step, before that step's callbacks:
when the epoch's ``batch_num`` steps are done, a sink ran to the end of the data or of its
steps, or (eager, data of unknown size, read one batch ahead) the data ended after the step's
batch. A checkpoint's position is then the next epoch (:meth:`TrainState.resume_point`).

Evaluation (:class:`EvalLoop`) runs eagerly, one step at a time, with the ``on_eval_step_*``
hooks around each step: its metrics need every output on the host anyway. It counts, clocks
and feeds the same :class:`~jisu.train.state.TrainState` (``mode`` "eval") the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .callbacks.base import CallbackList, RunContext
from .capture import GraphedStep
from .feeder import BatchSource, DeviceFeeder, InlineFeeder
from .replay_guard import STEP_HOOKS, ReplayGuard
from .schedules import LRSchedulerRunner
from .state import TrainState
from .steps import CompiledStep

#: a dispatched step: its outputs, the data iterator's state after its batch, its samples, the
#: learning rate it trained with
_Record = tuple[Any, Any, int, Any]


def open_feeder(
    batches: Iterator[Any],
    source: BatchSource,
    device: torch.device,
    limit: int | None,
    sink: bool,
    train: bool = False,
) -> InlineFeeder | DeviceFeeder:
    """The feeder of an epoch: sink mode's prefetching :class:`DeviceFeeder`, except on CPU
    for a jisu pipeline, which already reads ahead on its own threads; the eager loop's
    :class:`InlineFeeder`. For training (``train``) over data of unknown size, the eager
    feeder reads one batch ahead, so that the epoch's last step is known as it ends (a sink
    runs to the end of the data before its steps are handed over: it knows anyway)."""
    if sink and not (device.type == "cpu" and source.prefetches):
        return DeviceFeeder(batches, source, device, limit=limit)
    lookahead = train and not sink and limit is None and source.size is None
    return InlineFeeder(batches, source, device, limit, lookahead)


class BatchLoop:
    """What the loops share: batches from ``feeder`` with the state's data clocks kept (each
    batch's wait and copy, and the wait for the end of the data), and the step call, timed.
    ``step`` is an attribute: :class:`~jisu.train.first_step.FirstStepCheck` watches it."""

    def __init__(
        self,
        step: Callable[..., Any],
        feeder: InlineFeeder | DeviceFeeder,
        state: TrainState,
        run: RunContext,
        cbs: CallbackList,
    ) -> None:
        self.step = step
        self.feeder = feeder
        self.state = state
        self.run_context = run
        self.cbs = cbs
        self._waited, self._copied = state.data_wait_seconds, state.copy_seconds

    def _next_batch(self) -> tuple[list[torch.Tensor], Any, int]:
        """The next batch's ``(tensors, data state after it, samples)``; StopIteration at the
        end of the data."""
        try:
            return self.feeder.get()
        finally:  # the wait for the end of the data counts too
            self.state.data_wait_seconds = self._waited + self.feeder.waited
            self.state.copy_seconds = self._copied + self.feeder.copied

    def _call_step(self, tensors: list[torch.Tensor]) -> Any:
        """``step(*tensors)``, its time added to ``state.step_seconds``."""
        begin = time.perf_counter()
        outputs = self.step(*tensors)
        self.state.step_seconds += time.perf_counter() - begin
        return outputs


class EvalLoop(BatchLoop):
    """One evaluation pass: ``run()`` hands every batch to ``step`` (the eval network and the
    metrics' updates, :class:`~jisu.train.steps.EvalStep`) until the data ends, with
    ``on_eval_step_begin`` before and ``on_eval_step_end`` after each, ``net_outputs`` then
    the step's output; the feeder is closed after."""

    def run(self) -> None:
        state, run, cbs = self.state, self.run_context, self.cbs
        try:
            while True:
                try:
                    tensors, _, samples = self._next_batch()
                except StopIteration:
                    return
                state.begin_step()
                cbs.on_eval_step_begin(run)
                state.net_outputs = self._call_step(tensors)
                state.samples_seen += samples
                cbs.on_eval_step_end(run)
        finally:
            self.feeder.close()


class EpochLoop(BatchLoop):
    """One epoch of training: ``run(limit)`` runs ``limit`` steps, or until the data ends
    (``limit`` None), updating ``state`` and calling the step callbacks (see the module)."""

    def __init__(
        self,
        step: Callable[..., Any],
        feeder: InlineFeeder | DeviceFeeder,
        state: TrainState,
        run: RunContext,
        cbs: CallbackList,
        replay: bool,
        schedule: LRSchedulerRunner | None = None,
        guard: ReplayGuard | None = None,
    ) -> None:
        super().__init__(step, feeder, state, run, cbs)
        self.replay = replay
        self.schedule = schedule
        self.guard = guard
        # the per-step hook, looked up once (it skips the callbacks that do not override it)
        self._dispatched = cbs.on_train_step_dispatched
        self._graphed = step if isinstance(step, GraphedStep) else None
        inner = step.step if self._graphed is not None else step
        self._compiled = inner if isinstance(inner, CompiledStep) else None
        # sink mode on CUDA: each sink timed on the device (events) for the launch-bound check
        device = state.device
        self._timed = replay and device is not None and torch.device(device).type == "cuda"
        self._events: tuple[Any, Any] | None = None

    def run(self, limit: int | None) -> bool:
        """Windows of steps until ``limit`` steps ran, the data ended or a stop was
        requested; the feeder is closed after. Returns whether the epoch is complete (its
        steps ran or its data ended; not when a stop ended it before): ``state.epoch_ended``,
        which is set from its last step's callbacks on."""
        left = limit
        try:
            while left != 0:
                window, ended = self._dispatch(left if self.replay else 1)
                if left is not None:
                    left -= len(window)
                if window:
                    self._hand_over(window, ended or left == 0)
                if ended:  # the data ended (perhaps found only now, with no step left)
                    self.state.epoch_ended = True
                if ended or self.run_context.get_stop_requested():
                    return self.state.epoch_ended
            self.state.epoch_ended = True  # the limit's steps ran
            return True
        finally:
            self.feeder.close()

    def _dispatch(self, size: int | None) -> tuple[list[_Record], bool]:
        """Up to ``size`` steps (None: no bound), and whether the data ended."""
        state, window = self.state, []
        if self._graphed is not None:
            self._graphed.begin_window()
        while size is None or len(window) < size:
            try:
                tensors, data_state, samples = self._next_batch()
            except StopIteration:
                return window, True
            if not self.replay:
                state.begin_step()
                self.cbs.on_train_step_begin(self.run_context)
            if self._compiled is not None and not self._compiled.proven:
                self.cbs.on_train_compile_begin(self.run_context)
            if self._timed and not window:
                outputs = self._first_call(tensors)
            else:
                outputs = self._call_step(tensors)
            window.append((outputs, data_state, samples, self._rate()))
            state.dispatched_step_num += 1
            if self.schedule is not None:  # the next step's rate, set before it is dispatched
                self.schedule.after_step()
            self._dispatched(self.run_context)  # no host sync: the outputs are not read
            if self.feeder.exhausted:  # a feeder reading ahead saw the end of the data
                self._end_timing()
                return window, True
        self._end_timing()
        return window, False

    def _first_call(self, tensors: list[torch.Tensor]) -> Any:
        """A sink's first step call, on CUDA: its host time counted apart, and an event
        recorded before it on the device (the sink's clock starts)."""
        start = torch.cuda.Event(enable_timing=True)
        start.record()
        begin = time.perf_counter()
        outputs = self._call_step(tensors)
        self.state.sink_first_launch_seconds += time.perf_counter() - begin
        self._events = (start, None)
        return outputs

    def _end_timing(self) -> None:
        """The sink's last step is dispatched: an event after it (read with the losses)."""
        if self._events is not None and self._events[1] is None:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            self._events = (self._events[0], end)

    def _rate(self) -> Any:
        """The first parameter group's rate, as the step just dispatched used it: a float, or
        a copy of a tensor rate (no host sync; read when a callback reads it)."""
        optimizer = self.state.optimizer
        if optimizer is None or not optimizer.param_groups:
            return None
        lr = optimizer.param_groups[0].get("lr")
        return lr.detach().clone() if isinstance(lr, torch.Tensor) else lr

    def _hand_over(self, window: list[_Record], ends_epoch: bool) -> None:
        """The window's steps to the callbacks, in order (a sink's after its one read);
        ``ends_epoch``: its last step is the epoch's last (``state.epoch_ended`` from then on,
        as when the epoch's ``batch_num`` steps are done)."""
        state, run, cbs = self.state, self.run_context, self.cbs
        values = self._read(window) if self.replay else None  # eager: the outputs as they are
        bad = None if values is None else _first_non_finite(values)
        last = len(window) - 1
        for i, (outputs, data_state, samples, rate) in enumerate(window):
            if values is not None:
                state.begin_step()  # the loss read on the host; a tuple's other outputs stay
                rest = outputs[1:] if isinstance(outputs, (tuple, list)) else None
                outputs = values[i] if not rest else type(outputs)((values[i], *rest))
            state.net_outputs = outputs
            state.learning_rate = rate
            state.samples_seen += samples
            state.dataset_state = data_state
            state.weights_current = i == last  # the weights are those after the last step
            state.epoch_ended = (i == last and ends_epoch) or bool(
                state.batch_num and state.step_in_epoch >= state.batch_num
            )
            if self.guard is not None:  # replayed: callbacks that act are watched
                for hook in STEP_HOOKS:
                    self.guard.call(hook, run, i, last)
            else:
                if values is not None:
                    cbs.on_train_step_begin(run)
                cbs.on_train_step_end(run)
            if i == bad:
                raise ValueError(
                    f"In epoch: {state.cur_epoch_num} step: {state.step_in_epoch}, loss is "
                    f"{outputs.tolist()}: training cannot continue (sink mode checks every loss "
                    "at the sink's end)"
                )
        state.weights_current = True

    def _read(self, window: list[_Record]) -> torch.Tensor:
        """The window's losses on the host: one transfer, counted as step time."""
        begin = time.perf_counter()
        losses = [o[0] if isinstance(o, (tuple, list)) else o for o, *_ in window]
        values = torch.stack(  # a per-sample loss (reduction "none") stays whole
            [
                loss.detach().float().reshape(() if loss.numel() == 1 else loss.shape)
                for loss in losses
            ]
        ).cpu()
        self.state.step_seconds += time.perf_counter() - begin
        if self._events is not None and self._events[1] is not None:
            start, end = self._events  # the read synchronised: both events are done
            end.synchronize()
            self.state.sink_device_seconds += start.elapsed_time(end) / 1000.0
            self.state.sinks += 1
        self._events = None
        return values


def _first_non_finite(values: torch.Tensor) -> int | None:
    """The index of the first NaN or inf in ``values`` (on the host); None if all are finite."""
    finite = values.reshape(len(values), -1).isfinite().all(1).tolist()
    return next((i for i, ok in enumerate(finite) if not ok), None)
