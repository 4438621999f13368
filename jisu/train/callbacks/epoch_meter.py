"""How the training logs (:class:`~.summary_collector.SummaryCollector`,
:class:`~.csv_logger.CSVLogger`) measure an epoch, and read a value as one number.

An epoch's wall time runs from ``on_train_epoch_begin`` to its last step's
``on_train_step_end`` (so ``Model.fit``'s evaluation is not counted as training time), its
throughput is the samples of its steps over that time, and its data-stall share is the time the
loop waited for batches (``cb_params.data_wait_seconds``) over that time, at most 1.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
import torch


def scalar(value: Any) -> float | None:
    """``value`` as a float if it is one real number (a Python or NumPy number, a
    one-element array or tensor); None otherwise (a per-class metric, a string)."""
    if isinstance(value, torch.Tensor):
        return float(value.detach().reshape(-1)[0].item()) if value.numel() == 1 else None
    if isinstance(value, np.ndarray):
        return float(value.reshape(-1)[0]) if value.size == 1 else None
    if isinstance(value, numbers.Real):
        return float(value)
    return None


def step_lr(params: Any) -> Any:
    """The learning rate the step at hand trained with, as the loop recorded it when the step
    was dispatched (right in sink mode's replayed callbacks too): a float, or a copy of a
    tensor rate, read when written."""
    return params.get("learning_rate")


class EpochMeter:
    """Samples/s and the data-stall share of an epoch's training: from its begin to its last
    step's end (see the module)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._begin: tuple[float, float, int] = (0.0, 0.0, 0)
        self._end: tuple[float, float, int] | None = None

    def begin(self, params: Any) -> None:
        self._begin = (self.clock(), params.get("data_wait_seconds", 0.0), params.samples_seen)
        self._end = None

    def step_end(self, params: Any) -> None:
        self._end = (self.clock(), params.get("data_wait_seconds", 0.0), params.samples_seen)

    def result(self) -> tuple[float, float] | None:
        """``(samples_per_second, data_wait_share)``; None if no step ran this epoch."""
        if self._end is None:
            return None
        seconds = max(self._end[0] - self._begin[0], 1e-9)
        samples = self._end[2] - self._begin[2]
        wait = self._end[1] - self._begin[1]
        return samples / seconds, min(1.0, max(0.0, wait / seconds))
