"""What rules capturing the train step out, and how a run's step ran (:class:`StepCapture`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..callbacks.base import Callback
from ..callbacks.learning_rate_scheduler import LearningRateScheduler

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
