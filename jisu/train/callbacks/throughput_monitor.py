"""``ThroughputMonitor``: samples/s per epoch and the share of it spent waiting for data."""

from __future__ import annotations

import time

from .base import Callback, RunContext, report


class ThroughputMonitor(Callback):
    """Samples/s per epoch and the share of the epoch spent waiting for data (the data-stall
    share: near 0 when the input pipeline keeps up, near 1 when the model waits on it).
    Results accumulate in ``self.epochs`` (dicts); ``verbose`` prints a line per epoch."""

    def __init__(self, verbose: bool = True) -> None:
        self.verbose = verbose
        self.epochs: list[dict[str, float]] = []
        self._start = self._wait = 0.0
        self._samples = 0

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        self._start = time.perf_counter()
        self._wait = params.get("data_wait_seconds", 0.0)
        self._samples = params.get("samples_seen", 0)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        seconds = max(time.perf_counter() - self._start, 1e-9)
        samples = params.get("samples_seen", 0) - self._samples
        wait = params.get("data_wait_seconds", 0.0) - self._wait
        record = {
            "epoch": params.cur_epoch_num,
            "samples_per_second": samples / seconds,
            "data_wait_share": min(1.0, wait / seconds),
            "seconds": seconds,
        }
        self.epochs.append(record)
        if self.verbose:
            report(
                f"epoch {record['epoch']}: {record['samples_per_second']:.0f} samples/s, "
                f"waiting for data {record['data_wait_share']:.0%} of the time",
                flush=True,
            )
