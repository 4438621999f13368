"""Sink mode replays the step callbacks after the sink: one that acts on training there acts
late, and jisu says so.

In sink mode ``on_train_step_begin``/``on_train_step_end`` of a sink's steps run when the sink
has ended (its losses read in one transfer). Reading is fine there; *acting* is not: a callback
that changes the learning rate, the optimizer, the loss scale or the weights at "step 5" of a
32-step sink changes them after step 32, and a stop requested at step 5 comes after 27 more
steps have trained. The :class:`ReplayGuard` calls those hooks for the loop and watches every
callback that may act (one overriding a step hook, unless its class declares
``acts_on_training = False``, as jisu's monitors, loggers and checkpoints do): if a replayed
hook changed what is trained, it warns once per callback and kind of change, naming the
callback, the hook and the fix. The checks read host-side values only (hyper-parameters,
tensor version counters): no host synchronisation.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from .callbacks.base import Callback, RunContext

STEP_HOOKS = ("on_train_step_begin", "on_train_step_end")

FIX = (
    "act from on_train_step_dispatched (it runs as each step is dispatched, inside the sink), "
    "use LearningRateScheduler or Model(lr_scheduler=...) for rates, or pass sink_size=1"
)


class SinkReplayWarning(UserWarning):
    """A callback replayed after a sink changed what is trained: its change came late."""


def _value(value: Any) -> Any:
    """A comparable, host-side picture of a hyper-parameter (a tensor by identity and version)."""
    if isinstance(value, torch.Tensor):
        return ("tensor", id(value), value._version)
    if isinstance(value, (list, tuple)):
        return tuple(_value(v) for v in value)
    return value


def _tensors_of(obj: Any) -> tuple:
    """The identity and version of each tensor attribute of ``obj`` and its plain attributes."""
    if obj is None:
        return ()
    return tuple(
        (name, _value(v))
        for name, v in sorted(vars(obj).items())
        if isinstance(v, (torch.Tensor, int, float, bool, str))
    )


class ReplayGuard:
    """Runs a sink's replayed step hooks and warns when a callback changed training there."""

    def __init__(self, callbacks: list[Callback], state: Any, sink_steps: int) -> None:
        self.callbacks = callbacks
        self.state = state
        self.sink_steps = sink_steps
        self.watched = {
            id(cb)
            for cb in callbacks
            if getattr(cb, "acts_on_training", True) is not False
            and any(cb.wants_hook(hook) for hook in STEP_HOOKS)
        }
        self._warned: set[tuple[int, str]] = set()

    # what a callback could change
    def _optimizer(self) -> tuple:
        optimizer = self.state.optimizer
        if optimizer is None:
            return ()
        return tuple(
            (len(g["params"]), tuple((k, _value(v)) for k, v in g.items() if k != "params"))
            for g in optimizer.param_groups
        )

    def _network(self) -> tuple:
        network = self.state.network
        if network is None:
            return ()
        params = list(network.parameters())
        return (
            len(params),
            sum(p._version for p in params),
            sum(p.requires_grad for p in params),
        )

    def _loss_scale(self) -> tuple:
        return _tensors_of(self.state.loss_scale_manager)

    def _changed(self, before: tuple, after: tuple) -> list[str]:
        names = ("the optimizer's parameter groups", "the network's parameters", "the loss scale")
        return [n for n, b, a in zip(names, before, after) if b != a]

    def _snapshot(self) -> tuple:
        return (self._optimizer(), self._network(), self._loss_scale())

    def call(self, hook: str, run: RunContext, index: int, last: int) -> None:
        """``hook`` on every callback for the ``index``-th step of a sink whose last is
        ``last``; watched callbacks are checked around their call."""
        for cb in self.callbacks:
            if id(cb) not in self.watched:
                getattr(cb, hook)(run)
                continue
            stopped, before = run.get_stop_requested(), self._snapshot()
            getattr(cb, hook)(run)
            for what in self._changed(before, self._snapshot()):
                self._warn(cb, hook, what, f"changed {what}")
            if run.get_stop_requested() and not stopped and index < last:
                self._warn(
                    cb,
                    hook,
                    "stop",
                    f"requested a stop, after which this sink had already trained "
                    f"{last - index} more step(s)",
                )

    def _warn(self, cb: Callback, hook: str, kind: str, what: str) -> None:
        key = (id(cb), kind)
        if key in self._warned:
            return
        self._warned.add(key)
        step = self.state.cur_step_num
        warnings.warn(
            f"sink mode: {type(cb).__name__} {what} in {hook} at step {step}, which sink mode "
            f"runs after the sink (up to {self.sink_steps} steps) has trained: the change takes "
            f"effect from the next sink, not at step {step}. To act at the step, {FIX}.",
            SinkReplayWarning,
            stacklevel=2,
        )
