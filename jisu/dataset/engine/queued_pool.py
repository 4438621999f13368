"""What the worker-process and Ray pools share: a queue of submitted tasks in front of workers
that are fed by a collector thread, a pool that breaks as a whole, and one that closes.

``submit`` queues a task and dispatches; a broken pool (a worker that died without restarts, a
stage that cannot load) fails every waiting task with the same error (:meth:`_break`); a closed
pool (:meth:`_close_queue`) cancels what is submitted after, and the tasks its workers held
fail with the shut-down error (:meth:`_fail_sent`). The subclass says how a task is made
(:meth:`_new_task`) and sent (:meth:`_dispatch`, called with the lock held). Threads
(:mod:`.thread_pool`) need none of it: their queue is the workers' own.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from .worker_pool import TaskFuture, shut_down_error


class QueuedPool:
    """The base of :class:`.processes.pool.ProcessPool` and :class:`.ray.pool.RayPool`."""

    name: str

    def _init_queue(self, lock: threading.Lock | threading.RLock) -> None:
        self._lock = lock
        self._closed = False
        self._broken: BaseException | None = None
        self._waiting: deque[Any] = deque()  # tasks not sent yet

    def _new_task(self, future: TaskFuture, epoch: int, item: Any) -> Any:
        """The record of one submitted item (it keeps ``future``)."""
        raise NotImplementedError

    def _dispatch(self) -> None:
        """Send waiting tasks to free workers (lock held)."""
        raise NotImplementedError

    def submit(self, epoch: int, item: Any) -> TaskFuture:
        future = TaskFuture()
        with self._lock:
            if self._broken is not None:
                future.set_exception(self._broken_error(epoch, item))
                return future
            if self._closed:
                future.cancel()
                return future
            self._waiting.append(self._new_task(future, epoch, item))
            self._dispatch()
        return future

    def _broken_error(self, epoch: int, item: Any) -> BaseException:
        """What an item submitted to the broken pool fails with (lock held)."""
        assert self._broken is not None
        return self._broken

    def _break(self, error: BaseException, futures: list[TaskFuture]) -> None:
        """Break the pool (lock held): ``futures`` (tasks sent and lost) and every waiting task
        fail with ``error``; later submits fail with it at once."""
        self._broken = error
        for future in futures:
            if not future.done():
                future.set_exception(error)
        while self._waiting:
            task = self._waiting.popleft()
            if task.resent or task.future.set_running_or_notify_cancel():
                task.future.set_exception(error)

    def _close_queue(self) -> bool:
        """Close the pool (lock held): later submits are cancelled, waiting tasks cancelled (a
        task resent after its worker died has started: it fails with the shut-down error).
        False when it was closed already."""
        if self._closed:
            return False
        self._closed = True
        while self._waiting:
            task = self._waiting.popleft()
            if task.resent:
                task.future.set_exception(shut_down_error(self.name))
            else:
                task.future.cancel()
        return True

    def _fail_sent(self, futures: list[TaskFuture]) -> None:
        """Tasks sent to workers that are being stopped fail with the shut-down error."""
        for future in futures:
            if not future.done():
                future.set_exception(shut_down_error(self.name))
