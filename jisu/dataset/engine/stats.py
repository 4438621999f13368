"""Per-stage statistics for the pipeline profiler (``config.set_enable_profiler(True)``).

Each parallel stage counts, with plain additions on the threads that already handle its
items (no extra locks, no per-row work): tasks and rows done, the time its workers spent on
them, how often the consumer found the next result not ready (the stage's output queue was
empty) and how long it waited, how often the feeder found every in-flight slot taken (the
stage, or its consumer, is saturated), and the bytes of a sample of its results.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_BYTES_EVERY = 8  # sample the size of every 8th result


def count_rows(result: Any) -> int:
    """Output rows in a stage result: a list of rows, or one batch (a tuple of column
    arrays); the rows of a batch stage are its batches."""
    if isinstance(result, list):
        return len(result)
    return 1


def _nbytes(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    nbytes = getattr(value, "nbytes", None)  # a Deferred, a tensor
    return int(nbytes) if isinstance(nbytes, (int, np.integer)) else 0


@dataclass
class StageStats:
    name: str
    workers: int
    started: float = field(default_factory=time.perf_counter)
    tasks: int = 0
    rows: int = 0
    compute_s: float = 0.0
    wait_s: float = 0.0
    empty: int = 0
    submits: int = 0
    full: int = 0
    sampled_bytes: int = 0
    sampled_rows: int = 0

    def finished(self, result: Any, compute_s: float, waited: float, was_ready: bool) -> None:
        """Account one result handed to the consumer."""
        self.tasks += 1
        rows = count_rows(result)
        self.rows += rows
        self.compute_s += compute_s
        self.wait_s += waited
        if not was_ready:
            self.empty += 1
        if self.tasks % _BYTES_EVERY == 1:
            self.sampled_bytes += _nbytes(result)
            self.sampled_rows += rows

    def summary(self, now: float | None = None) -> dict[str, Any]:
        wall = max((time.perf_counter() if now is None else now) - self.started, 1e-9)
        return {
            "stage": self.name,
            "workers": self.workers,
            "rows": self.rows,
            "rows_per_s": self.rows / wall,
            "ms_per_row": 1000 * self.compute_s / max(self.rows, 1),
            "busy_share": min(1.0, self.compute_s / (wall * self.workers)),
            "queue_empty_share": self.empty / max(self.tasks, 1),
            "queue_full_share": self.full / max(self.submits, 1),
            "consumer_wait_s": self.wait_s,
            "bytes_per_row": self.sampled_bytes / max(self.sampled_rows, 1),
            "seconds": wall,
        }
