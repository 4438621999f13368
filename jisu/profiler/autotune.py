"""AutoTune: during the first epoch, give workers to the stage that holds the pipeline back.

Every ``interval`` seconds the tuner looks at each stage's statistics over the last
interval (:mod:`.stats`): a stage whose consumer waited for it while its workers were busy
gets one more worker (and one more in-flight slot), as long as all stages together stay
within the CPUs the process may use and the work in flight within a memory budget. A change
that made the stage's output slower is undone, and that stage is left alone after. Every
change is logged with its reason. At the end of the first epoch tuning stops and, with a
file path, the settings are written as JSON, which ``config.load_autotune_config`` checks in
full and applies to later runs of the same pipeline (:mod:`jisu.dataset.core.tuning`: the
file's shape and its limits).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..dataset.core.tuning import MAX_TUNED_INFLIGHT, MAX_TUNED_WORKERS
from ..files import atomic_write

logger = logging.getLogger("jisu.dataset.autotune")

#: a stage whose consumer waited at least this share of an interval is holding it back
WAIT_SHARE = 0.05
#: and whose workers were at least this busy can use another worker
BUSY_SHARE = 0.75


@dataclass
class _Stage:
    pool: Any
    slots: threading.Semaphore
    stats: Any
    inflight: int
    frozen: bool = False  # a change made it slower: leave it
    last: dict[str, float] = field(default_factory=dict)
    # (workers before, output rate before, when to judge) of a change not yet judged
    pending: tuple[int, float, float] | None = None
    max_workers: int | None = None  # an op's explicit num_parallel_workers caps the stage


class AutoTuner:
    """Tunes the stages (threads or worker processes) of one running pipeline (see the
    module docstring)."""

    def __init__(
        self,
        cpus: int,
        budget_bytes: int,
        filepath: str | None = None,
        interval: float = 0.2,
    ) -> None:
        # a saved file must read back: it holds at most MAX_TUNED_WORKERS workers a stage
        self.cpus = min(cpus, MAX_TUNED_WORKERS)
        self.budget_bytes, self.filepath = budget_bytes, filepath
        self.interval = interval
        self._stages: dict[str, _Stage] = {}
        self._lock = threading.Lock()
        self._done = threading.Event()

    def register(
        self,
        stage_id: str,
        pool: Any,
        slots: threading.Semaphore,
        stats: Any,
        inflight: int,
        max_workers: int | None = None,
    ) -> None:
        """Watch a stage; ``max_workers``: never give it more (an op's explicit
        ``num_parallel_workers`` that the stage must not exceed)."""
        with self._lock:
            self._stages[stage_id] = _Stage(pool, slots, stats, inflight, max_workers=max_workers)

    # ------------------------------------------------------------------ the loop
    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self.interval) and not self._done.is_set():
            with self._lock:
                self.step()

    def _sample(self, stage: _Stage) -> dict[str, float]:
        s = stage.stats
        now = {"t": time.perf_counter(), "compute": s.compute_s, "wait": s.wait_s, "rows": s.rows}
        before, stage.last = stage.last, now
        if not before:
            return {}
        wall = max(now["t"] - before["t"], 1e-9)
        return {  # shares of the interval (a task can straddle two: clamp to 1)
            "busy": min(1.0, (now["compute"] - before["compute"]) / (wall * stage.pool.workers)),
            "waited": min(1.0, (now["wait"] - before["wait"]) / wall),
            "rate": (now["rows"] - before["rows"]) / wall,
        }

    def step(self) -> None:
        """One look at every stage: undo harmful changes, then grow the neediest stage."""
        samples = {sid: self._sample(stage) for sid, stage in self._stages.items()}
        for sid, stage in self._stages.items():
            sample = samples[sid]
            if stage.pending is None or not sample:
                continue
            workers_before, rate_before, judge_at = stage.pending
            if time.perf_counter() < judge_at:
                continue  # new worker processes are still starting
            stage.pending = None
            if sample["rate"] < 0.9 * rate_before:
                why = f"output fell from {rate_before:.1f} to {sample['rate']:.1f} rows/s"
                self._resize(sid, stage, workers_before, why)
                stage.frozen = True
        used = sum(stage.pool.workers for stage in self._stages.values())
        if used >= self.cpus:
            return
        needy = [
            (sample["waited"], sid)
            for sid, sample in samples.items()
            if sample
            and not self._stages[sid].frozen
            and self._stages[sid].pending is None
            and (self._stages[sid].max_workers or self.cpus) > self._stages[sid].pool.workers
            and sample["waited"] >= WAIT_SHARE
            and sample["busy"] >= BUSY_SHARE
        ]
        if not needy:
            return
        waited, sid = max(needy)
        stage = self._stages[sid]
        stats = stage.stats
        per_task = (
            stats.sampled_bytes / max(stats.sampled_rows, 1) * stats.rows / max(stats.tasks, 1)
        )
        if (stage.inflight + 1) * per_task > self.budget_bytes:
            return
        sample = samples[sid]
        settle = stage.pool.start_seconds  # a new worker process needs time to start
        stage.pending = (stage.pool.workers, sample["rate"], time.perf_counter() + settle)
        why = (
            f"busy {sample['busy']:.0%}, its consumer waited {waited:.0%} of the last "
            f"{self.interval:.1f} s"
        )
        self._resize(sid, stage, stage.pool.workers + 1, why)

    def _resize(self, sid: str, stage: _Stage, workers: int, why: str) -> None:
        old = stage.pool.workers
        stage.pool.resize(workers)
        stage.stats.workers = workers
        if workers > old:
            for _ in range(workers - old):
                stage.slots.release()
            stage.inflight += workers - old
        else:
            for _ in range(old - workers):
                if stage.slots.acquire(blocking=False):
                    stage.inflight -= 1
        message = f"autotune: stage {sid}: workers {old} -> {workers} ({why})"
        logger.info(message)

    # ------------------------------------------------------------------ the end
    def settings(self) -> dict[str, Any]:
        with self._lock:
            return {
                "version": 1,
                "cpus": self.cpus,
                "stages": {
                    sid: {
                        "workers": stage.pool.workers,
                        "inflight": min(stage.inflight, MAX_TUNED_INFLIGHT),
                    }
                    for sid, stage in self._stages.items()
                },
            }

    def finish(self) -> None:
        """Stop tuning (the first epoch is over) and write the settings."""
        if self._done.is_set():
            return
        self._done.set()
        if self.filepath:
            write_settings(self.filepath, self.settings())
            logger.info("autotune: settings written to %s", self.filepath)


def write_settings(path: str, settings: dict[str, Any]) -> None:
    """Write ``settings`` as JSON atomically."""
    with atomic_write(path, "w") as f:
        json.dump(settings, f, indent=2)
