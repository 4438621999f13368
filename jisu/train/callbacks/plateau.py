"""What ``EarlyStopping`` and ``ReduceLROnPlateau`` share: the monitored value (also read by
``Model(lr_scheduler=ReduceLROnPlateau)``, :mod:`jisu.train.schedules`) and the
bookkeeping of a value that stopped improving."""

from __future__ import annotations

import sys
from typing import Any

from .base import RunContext, loss_value, report


def _monitored(params: Any, monitor: str) -> float | None:
    """The monitored value: ``"loss"`` is the training loss (the step's first output), as in
    MindSpore, also when an evaluation metric is named "loss" (that one is ``"eval_loss"``);
    other names are evaluation metrics, with or without ``eval_``. None when absent."""
    if monitor == "loss":
        return loss_value(params.net_outputs)
    metrics = params.get("metrics") or {}
    if monitor in metrics:
        return float(metrics[monitor])
    name = monitor[5:] if monitor.startswith("eval_") else None
    if name and name in metrics:
        return float(metrics[name])
    return None


class _Plateau:
    """Shared bookkeeping of EarlyStopping and ReduceLROnPlateau."""

    def __init__(self, owner: str, monitor: str, min_delta: float, patience: int, mode: str):
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"{owner}: mode must be 'auto', 'min' or 'max'. Received {mode!r}")
        self.owner = owner
        if mode == "auto":
            mode = "max" if "acc" in monitor else "min"
        self.monitor, self.min_delta, self.patience, self.mode = (
            monitor,
            abs(min_delta),
            patience,
            mode,
        )
        self.best: float | None = None
        self.wait = 0

    def _improved(self, value: float) -> bool:
        if self.best is None:
            return True
        if self.mode == "min":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta

    def _value(self, run_context: RunContext) -> float | None:
        value = _monitored(run_context.original_args(), self.monitor)
        if value is None:
            report(
                f"{self.owner}: '{self.monitor}' is not available (run Model.fit with "
                "a valid_dataset and metrics, or monitor 'loss'); nothing done",
                file=sys.stderr,
            )
        return value
