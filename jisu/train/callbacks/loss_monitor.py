"""``LossMonitor``: the loss every few steps, and a stop on a NaN/inf loss (MindSpore's)."""

from __future__ import annotations

import math
from typing import Any

from .base import Callback, RunContext, loss_value, report


def _step_in_epoch(params: Any) -> int:
    return (
        (params.cur_step_num - 1) % params.batch_num + 1
        if params.batch_num
        else params.cur_step_num
    )


class LossMonitor(Callback):
    """Prints ``epoch: E step: S, loss is L`` every ``per_print_times`` steps (0: never) and
    raises on a NaN/inf loss, as MindSpore does. Under sink mode it still prints every step
    (the steps are replayed at each sink's end)."""

    acts_on_training = False

    def __init__(self, per_print_times: int = 1) -> None:
        if (
            isinstance(per_print_times, bool)
            or not isinstance(per_print_times, int)
            or per_print_times < 0
        ):
            raise ValueError(
                f"LossMonitor: per_print_times must be an int >= 0. Received {per_print_times!r}"
            )
        self._per_print_times = per_print_times

    def on_train_step_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        loss = loss_value(params.net_outputs)
        step = _step_in_epoch(params)
        if math.isnan(loss) or math.isinf(loss):
            raise ValueError(
                f"In epoch: {params.cur_epoch_num} step: {step}, loss is NAN or INF, training "
                "process cannot continue, terminating training."
            )
        if self._per_print_times and params.cur_step_num % self._per_print_times == 0:
            report(f"epoch: {params.cur_epoch_num} step: {step}, loss is {loss}", flush=True)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        metrics = run_context.original_args().get("metrics")
        if metrics:
            report(
                f"Eval result: epoch {run_context.original_args().cur_epoch_num}, "
                f"metrics: {metrics}",
                flush=True,
            )
