"""``LearningRateScheduler``: a function of the rate and the step sets every step's rate."""

from __future__ import annotations

from collections.abc import Callable

from ..rates import get_lr, set_lr
from .base import Callback, RunContext


class LearningRateScheduler(Callback):
    """Sets the learning rate after every step: ``learning_rate_function(lr, cur_step_num)``
    returns the new rate (MindSpore's signature: the current rate and the number of steps
    done), applied to every parameter group.

    It runs as each step is dispatched (``on_train_step_dispatched``), so in sink mode every
    step of a sink gets its own rate, as in step mode (MindSpore applies it once per sink).
    Only host values are read: the rate it last set, not a device tensor.
    """

    def __init__(self, learning_rate_function: Callable[[float, int], float]) -> None:
        if not callable(learning_rate_function):
            raise TypeError("LearningRateScheduler: learning_rate_function must be callable")
        self.learning_rate_function = learning_rate_function
        self._lr: float | None = None  # the rate set last (a host value)

    def on_train_begin(self, run_context: RunContext) -> None:
        optimizer = run_context.original_args().optimizer
        if getattr(optimizer, "dynamic_lr", False):
            raise ValueError(
                "LearningRateScheduler: the optimizer's learning rate is already per step (a "
                "list or a LearningRateSchedule); use one or the other"
            )
        self._lr = None

    def on_train_step_dispatched(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        groups = params.optimizer.param_groups
        lr = self._lr if self._lr is not None else get_lr(groups[0])
        new = float(self.learning_rate_function(lr, params.dispatched_step_num))
        if new != lr:
            for group in groups:
                set_lr(group, new)
        self._lr = new
