"""Per-stage statistics for the pipeline profiler (``config.set_enable_profiler(True)``).

Each parallel stage counts, with plain additions on the threads that already handle its
items (no extra locks, no per-row work): tasks and rows done, the time its workers spent on
them, how often the consumer found the next result not ready (the stage's output queue was
empty) and how long it waited, how often the feeder found every in-flight slot taken (the
stage, or its consumer, is saturated), and the bytes of a sample of its results.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_BYTES_EVERY = 8  # sample the size of every 8th result
OP_SAMPLE_EVERY = 64  # time the ops of one row in 64 (the profiler's cost stays ~1 %) ...
OP_FULL_ROWS = 64  # ... after timing every row (or batch) among an epoch's first 64


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
            "compute_s": self.compute_s,
            "bytes_per_row": self.sampled_bytes / max(self.sampled_rows, 1),
            "seconds": wall,
        }


class OpTimes:
    """Time spent in each op inside fused stages, from a sample of the calls.

    A fused stage runs several ops in one task, so its own figures cannot tell which op costs.
    Ops time the calls of the rows :meth:`weight` picks (every row among an epoch's first
    :data:`OP_FULL_ROWS`, so that a short run is measured too; then one in
    :data:`OP_SAMPLE_EVERY`; a batch decides for all its rows, by its own index) and report
    each with its weight, so ``seconds`` estimates the
    op's total time and ``calls`` its number of calls. Keys are ``(node id, part)``: the
    node's structural id (the same in a worker process, whose figures :meth:`drain` and
    :meth:`merge` carry over), and ``part`` a map's operation index, or a name (``"read"``,
    ``"assembly"``) for a node's own work.
    """

    def __init__(self, node_id: Callable[[Any], int]) -> None:
        self._node_id = node_id
        self._lock = threading.Lock()
        self.totals: dict[tuple[int, Any], list[float]] = {}

    @staticmethod
    def weight(index: int) -> int:
        """How many calls the timing of row ``index``'s stands for: 1 among an epoch's first
        rows, then :data:`OP_SAMPLE_EVERY` for one row in that many, scattered (a hash of the
        index, so that the sample is not always a batch's first row), 0 (not timed) for the
        others."""
        if index < OP_FULL_ROWS:
            return 1
        hit = ((index * 0x9E3779B1) >> 16) % OP_SAMPLE_EVERY == 0
        return OP_SAMPLE_EVERY if hit else 0

    def add(self, node: Any, part: Any, seconds: float, weight: int) -> None:
        """Account ``seconds`` of one call standing for ``weight`` calls."""
        key = (self._node_id(node), part)
        with self._lock:
            entry = self.totals.get(key)
            if entry is None:
                entry = self.totals[key] = [0.0, 0.0]
            entry[0] += seconds * weight
            entry[1] += weight

    def merge(self, figures: dict[tuple[int, Any], tuple[float, float]]) -> None:
        """Add ``{key: (seconds, calls)}`` (another process's :meth:`drain`)."""
        with self._lock:
            for key, (seconds, calls) in figures.items():
                entry = self.totals.get(key)
                if entry is None:
                    entry = self.totals[key] = [0.0, 0.0]
                entry[0] += seconds
                entry[1] += calls

    def drain(self) -> dict[tuple[int, Any], tuple[float, float]]:
        """The figures so far, which are then reset (a worker sends them with its result)."""
        with self._lock:
            totals, self.totals = self.totals, {}
        return {key: (seconds, calls) for key, (seconds, calls) in totals.items()}
