"""Ordered parallel stages: items in, results out in input order, bounded work in flight."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from ..core.cpus import available_cpus
from .context import ExecContext, Stopped
from .errors import with_context
from .watchdog import StuckTaskWatch, stage_ops

if TYPE_CHECKING:
    from .plan import Stage
    from .tasks import StageTask

_DONE = object()
EPOCH_END = object()  # marks the end of an epoch in a multi-epoch row stream


def at_epoch(epoch: int, items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
    """``(epoch, item)`` pairs for the items of one epoch."""
    for item in items:
        yield epoch, item


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def ordered_map(
    ctx: ExecContext,
    task: StageTask,
    items: Iterable[tuple[int, Any]],
    *,
    key: Any,
    name: str,
    stage: Stage,
    chunker: AdaptiveChunker | None = None,
) -> Iterator[Any]:
    """Run ``task(ctx, epoch, item)`` for ``(epoch, item)`` pairs; yield results in order.

    A feeder thread pulls ``items`` (so a slow sequential source, such as a user generator,
    runs on its own thread) and submits them to the stage's pool (threads, or processes when
    the stage asked for them); at most ``inflight`` items are submitted but not yet consumed.
    An exception raised by the task or by ``items`` is raised here, at its place in the order,
    with its original traceback. ``chunker`` learns the time each item took.

    While it waits for a result, a :class:`.watchdog.StuckTaskWatch` warns about a task that
    runs too long and raises :class:`.errors.TaskTimeoutError` past ``config``'s sample timeout.
    """
    stage_id = stage.name  # the same in every run of this pipeline
    max_workers = stage.max_workers  # an op's explicit num_parallel_workers
    # the plan decides the width and the work in flight (a saved AutoTune result included)
    workers, inflight = ctx.plan.shape(
        stage, ctx.prefetch_size, ctx.tuned.get(stage_id), available_cpus()
    )
    pool = ctx.pool(key, name, workers, task)
    # a remote pool (Ray) may run more workers than planned, and wants bigger tasks
    inflight += pool.extra_inflight
    if chunker is not None:
        chunker.target_s = max(chunker.target_s, pool.task_target_s)
    watch = StuckTaskWatch(name, task, pool, ctx.settings)
    stats = ctx.stage_stats(key, stage_id, workers)  # None unless profiling or tuning
    slots = threading.Semaphore(max(1, inflight))
    if ctx.tuner is not None:
        ctx.tuner.register(stage_id, pool, slots, stats, max(1, inflight), max_workers)
    futures: queue.SimpleQueue = queue.SimpleQueue()
    closed = threading.Event()

    def feed() -> None:
        iterator = iter(items)
        try:
            for epoch, item in iterator:
                acquired = slots.acquire(blocking=False)
                if stats is not None:
                    stats.submits += 1
                    stats.full += not acquired  # every slot taken: the consumer is behind
                while not acquired:
                    acquired = slots.acquire(timeout=0.05)
                    if not acquired:
                        if closed.is_set():
                            return
                        ctx.check()
                if closed.is_set():
                    return
                futures.put((pool.submit(epoch, item), len(item) if chunker else 0))
        except Stopped:
            pass
        except BaseException as exc:
            futures.put(_Failure(exc))
        finally:
            futures.put(_DONE)
            close = getattr(iterator, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:  # the stream is being torn down; nothing to report to
                    pass

    def died(exc: BaseException) -> None:  # feed failed outside its own guard
        futures.put(_Failure(with_context(exc, f"{stage_ops(task)}: its feeder thread failed")))
        futures.put(_DONE)

    ctx.spawn(feed, f"{name}-feeder", died)
    try:
        while True:
            entry = ctx.get(futures)
            if entry is _DONE:
                return
            if isinstance(entry, _Failure):
                raise entry.exc
            future, size = entry
            ready, begin = future.done(), time.perf_counter()
            while True:
                try:
                    result = future.result(timeout=0.05)
                    break
                except FutureTimeout:  # a distinct class before Python 3.11
                    ctx.check()
                    watch.check(future)
            slots.release()
            if stats is not None:
                waited = time.perf_counter() - begin
                stats.finished(result, future.compute_s, waited, ready)
            if chunker is not None:
                chunker.observe(future.compute_s, size)
            yield result
    finally:
        closed.set()


def chunked(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """Consecutive lists of ``size`` items (the last may be shorter)."""
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class AdaptiveChunker:
    """Groups items into tasks of roughly ``target_s`` seconds of work.

    Tiny rows dispatched one per task would spend more time in queues than in work; big rows
    grouped would add latency. The chunk size follows the measured time per item; output is the
    same whatever the chunking.
    """

    def __init__(self, target_s: float = 0.002, max_size: int = 256) -> None:
        self.target_s = target_s
        self.max_size = max_size
        self.size = 1
        self._per_item_s: float | None = None

    def observe(self, seconds: float, items: int) -> None:
        """Learn from a task that took ``seconds`` for ``items`` items."""
        per_item = seconds / max(1, items)
        prev = self._per_item_s
        self._per_item_s = per_item if prev is None else 0.8 * prev + 0.2 * per_item
        self.size = int(min(self.max_size, max(1, self.target_s / max(self._per_item_s, 1e-7))))

    def split(self, items: Iterable[Any]) -> Iterator[list[Any]]:
        chunk: list[Any] = []
        for item in items:
            chunk.append(item)
            if len(chunk) >= self.size:
                yield chunk
                chunk = []
        if chunk:
            yield chunk
