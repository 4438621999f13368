"""Threads running one stage's task: the default executor (ops that release the GIL)."""

from __future__ import annotations

import queue
import threading
import time
from typing import TYPE_CHECKING, Any

from ..core.position import position
from .errors import with_context
from .watchdog import describe_items, stage_ops
from .worker_pool import TaskFuture

if TYPE_CHECKING:
    from .context import ExecContext

_local = threading.local()


def current_stop() -> threading.Event | None:
    """The stop flag of the run whose pool thread calls this (None on any other thread).

    A task that blocks on I/O it can abandon (a request to object storage, see
    :mod:`jisu.dataset.record.storage`) polls it, so that closing the iterator ends the wait at once
    instead of leaving the thread behind until the request gives up."""
    return getattr(_local, "stop", None)


def bind_stop(stop: threading.Event) -> None:
    """Make ``stop`` the calling thread's stop flag (:func:`current_stop`): a thread of a run
    that is not one of its pools' (a read-ahead thread) has its waits abandoned with it."""
    _local.stop = stop


class ThreadPool:
    """A set of daemon threads running one stage's task; a :class:`.worker_pool.WorkerPool`.

    Unlike ``concurrent.futures.ThreadPoolExecutor`` the threads are daemons that never block
    interpreter exit, and each finished future carries ``compute_s``, the time its task took
    (for chunk sizing and profiling). While a task runs its future carries ``running``:
    ``(start, thread, epoch, item)`` (None before and after), for :mod:`.watchdog`.

    A thread cannot be killed: one whose task was reported stuck (:meth:`mark_stuck`) is not
    waited for at shutdown; it ends by itself when its task returns.
    """

    def __init__(self, name: str, workers: int, ctx: ExecContext, task: Any) -> None:
        self.name = name
        self.workers = workers
        self.busy_s = 0.0
        self._ctx = ctx
        self._task = task
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._stuck: set[threading.Thread] = set()
        self._broken: BaseException | None = None  # a thread failed: every task fails
        self._threads = [
            threading.Thread(target=self._serve, name=f"jisu-{name}-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def pids(self) -> list[int]:
        return []  # threads of this process

    def submit(self, epoch: int, item: Any) -> TaskFuture:
        future = TaskFuture()
        self._tasks.put((future, epoch, item))
        if self._broken is not None:  # no thread may be left to run it
            self._fail_queued()
        return future

    def _serve(self) -> None:
        """A thread's target: :meth:`_run`, and should that fail (outside the task, which
        delivers its own errors), the pool breaks: every queued task fails with the error,
        naming the op and its sample, instead of waiting for a thread that is gone."""
        try:
            self._run()
        except BaseException as exc:
            self._broken = exc
            self._fail_queued()

    def _fail_queued(self) -> None:
        exc = self._broken
        assert exc is not None
        while True:
            try:
                entry = self._tasks.get_nowait()
            except queue.Empty:
                return
            if entry is None:
                continue
            future, epoch, item = entry
            if future.done():
                continue
            if future.running() or future.set_running_or_notify_cancel():
                where = f"{stage_ops(self._task)} at {describe_items(item)} of epoch {epoch}"
                future.set_exception(with_context(exc, f"{where}: its worker thread failed"))

    def _run(self) -> None:
        me = threading.current_thread()
        here = position()  # what the task's kernels are doing (read by the watchdog)
        _local.stop = self._ctx.stop  # see current_stop
        while True:
            entry = self._tasks.get()
            if entry is None:
                return
            future, epoch, item = entry
            try:
                self._run_one(me, future, epoch, item)
            except BaseException:  # the task's future gets the error too (see _serve)
                self._tasks.put(entry)
                raise
            here.clear()
            if self._stuck:  # a task reported stuck ended after all
                self._stuck.discard(me)
            self.busy_s += future.compute_s

    def _run_one(self, me: threading.Thread, future: TaskFuture, epoch: int, item: Any) -> None:
        if not future.set_running_or_notify_cancel():
            return
        begin = time.perf_counter()
        future.started = (begin, me, epoch, item)
        try:
            result = self._task(self._ctx, epoch, item)
        except BaseException as exc:  # delivered to the consumer, never lost
            future.compute_s = time.perf_counter() - begin
            future.started = None
            future.set_exception(exc)
        else:
            future.compute_s = time.perf_counter() - begin
            future.started = None
            future.set_result(result)

    def mark_stuck(self, future: TaskFuture) -> None:
        """The task of ``future`` was reported stuck: shutdown will not wait for its thread."""
        running = future.started
        if running is not None:
            self._stuck.add(running[1])

    #: a new thread serves tasks at once (AutoTune judges a resize after this many seconds)
    start_seconds = 0.0
    extra_inflight = 0  # runs the planned width
    task_target_s = 0.0  # no wish for bigger tasks

    def resize(self, workers: int) -> None:
        """Run ``workers`` threads from now on (AutoTune): new threads start at once; a
        surplus thread exits after the task it is running."""
        workers = max(1, workers)
        for i in range(self.workers, workers):
            thread = threading.Thread(target=self._serve, name=f"jisu-{self.name}-{i}", daemon=True)
            self._threads.append(thread)
            thread.start()
        for _ in range(workers, self.workers):
            self._tasks.put(None)
        self.workers = workers

    def shutdown(self, timeout: float) -> None:
        """Cancel the tasks not started, tell every thread to stop after its task, and wait
        (up to ``timeout`` seconds each) for those not reported stuck."""
        while True:  # cancel what has not started
            try:
                entry = self._tasks.get_nowait()
            except queue.Empty:
                break
            if entry is not None:
                entry[0].cancel()
        for _ in self._threads:
            self._tasks.put(None)
        current = threading.current_thread()
        for thread in self._threads:
            if thread is not current and thread not in self._stuck:
                thread.join(timeout)
