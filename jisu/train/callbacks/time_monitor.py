"""``TimeMonitor``: the epoch's time and the time per step (MindSpore's)."""

from __future__ import annotations

import time

from .base import Callback, RunContext, report


class TimeMonitor(Callback):
    """Prints ``Train epoch time: T ms, per step time: S ms`` after each epoch (and the time
    spent waiting for data per step with ``data_time=True``)."""

    def __init__(self, data_size: int | None = None, data_time: bool = False) -> None:
        if data_size is not None and (not isinstance(data_size, int) or data_size <= 0):
            raise ValueError(
                f"TimeMonitor: data_size must be a positive int. Received {data_size!r}"
            )
        self.data_size = data_size
        self.data_time = data_time
        self._start = 0.0
        self._wait = 0.0

    # MindSpore's hook names (epoch_begin/epoch_end), so that a subclass overriding them
    # replaces them, as the zoo's do (lstm_crf's EvalCabllBack(TimeMonitor) evaluates in
    # epoch_end and never calls TimeMonitor.__init__: the attributes are read with defaults)
    def epoch_begin(self, run_context: RunContext) -> None:
        self._start = time.perf_counter()
        self._wait = run_context.original_args().get("data_wait_seconds", 0.0)

    def epoch_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        ms = (time.perf_counter() - getattr(self, "_start", time.perf_counter())) * 1000
        size = getattr(self, "data_size", None)
        steps = params.get("steps_in_epoch") or params.batch_num or size or 1
        line = f"Train epoch time: {ms:5.3f} ms, per step time: {ms / steps:5.3f} ms"
        if getattr(self, "data_time", False):
            wait = (params.get("data_wait_seconds", 0.0) - getattr(self, "_wait", 0.0)) * 1000
            line += f" (data time: {wait / steps:5.3f} ms)"
        report(line, flush=True)
