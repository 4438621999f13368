"""Per-iterator execution context: stop flag, worker pools, helper threads, shared caches."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

logger = logging.getLogger("jisu.dataset")

POLL_S = 0.05  # how often blocked engine threads look at the stop flag


class Stopped(Exception):
    """Raised inside engine threads when their iterator is being closed."""


class WorkerPool:
    """A fixed set of daemon threads running submitted tasks.

    Unlike ``concurrent.futures.ThreadPoolExecutor`` the threads are daemons that never block
    interpreter exit, and the pool counts the time its workers spend busy (for profiling).
    """

    def __init__(self, name: str, workers: int) -> None:
        self.name = name
        self.workers = workers
        self.busy_s = 0.0
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._run, name=f"jisu-{name}-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[[Any], Any], item: Any) -> Future:
        future: Future = Future()
        self._tasks.put((future, fn, item))
        return future

    def _run(self) -> None:
        import time

        while True:
            task = self._tasks.get()
            if task is None:
                return
            future, fn, item = task
            if not future.set_running_or_notify_cancel():
                continue
            begin = time.perf_counter()
            try:
                future.set_result(fn(item))
            except BaseException as exc:  # delivered to the consumer, never lost
                future.set_exception(exc)
            finally:
                self.busy_s += time.perf_counter() - begin

    def shutdown(self, timeout: float) -> None:
        while True:  # cancel what has not started
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                task[0].cancel()
        for _ in self._threads:
            self._tasks.put(None)
        current = threading.current_thread()
        for thread in self._threads:
            if thread is not current:
                thread.join(timeout)


class ExecContext:
    """Everything one running iterator owns; :meth:`shutdown` releases all of it.

    Args:
        seed: the seed every random decision of this run derives from.
        prefetch_size: rows each stage may hold ahead of its consumer.
        node_ids: structural id of every pipeline node (its DFS position), used to key RNGs so
            that the same pipeline built twice draws the same numbers.
    """

    def __init__(self, seed: int, prefetch_size: int, node_ids: dict[int, int]) -> None:
        self.seed = seed
        self.prefetch_size = prefetch_size
        self.stop = threading.Event()
        self._node_ids = node_ids
        self._pools: dict[Any, WorkerPool] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._cache: dict[Any, Any] = {}

    def node_id(self, node: object) -> int:
        return self._node_ids[id(node)]

    def pool(self, key: Any, name: str, workers: int) -> WorkerPool:
        """The pool of one stage, created on first use and kept across epochs."""
        with self._lock:
            if self.stop.is_set():  # shutting down: a pool made now would never be stopped
                raise Stopped
            pool = self._pools.get((key, workers))
            if pool is None:
                pool = self._pools[(key, workers)] = WorkerPool(name, workers)
            return pool

    def spawn(self, target: Callable[[], None], name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=f"jisu-{name}", daemon=True)
        with self._lock:
            if self.stop.is_set():
                raise Stopped
            self._threads.append(thread)
        thread.start()
        return thread

    def cached(self, key: Any, compute: Callable[[], Any], keep: int = 4) -> Any:
        """Thread-safe memo for per-epoch values (index orders); keeps the newest ``keep``."""
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        value = compute()
        with self._lock:
            self._cache.setdefault(key, value)
            while len(self._cache) > keep * 8:
                self._cache.pop(next(iter(self._cache)))
            return self._cache[key]

    def check(self) -> None:
        if self.stop.is_set():
            raise Stopped

    def put(self, q: queue.Queue, item: Any) -> None:
        """Put into a bounded queue, giving up when the iterator stops."""
        while True:
            try:
                q.put(item, timeout=POLL_S)
                return
            except queue.Full:
                self.check()

    def get(self, q: queue.Queue | queue.SimpleQueue) -> Any:
        """Get from a queue, giving up when the iterator stops."""
        while True:
            try:
                return q.get(timeout=POLL_S)
            except queue.Empty:
                self.check()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop every thread of this run and wait for them (idempotent)."""
        self.stop.set()
        with self._lock:
            threads, self._threads = self._threads, []
            pools, self._pools = list(self._pools.values()), {}
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(timeout)
                if thread.is_alive():
                    logger.warning(
                        "jisu: thread %s did not stop within %.0fs", thread.name, timeout
                    )
        for pool in pools:
            pool.shutdown(timeout)
