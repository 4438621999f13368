"""Read-ahead for record data sets in object storage: the epoch's record batches fetched before
they are read, in the order the epoch reads them, with a bound on the bytes held.

A data set read by ranges (:class:`~.remote.RemoteRecordReader` without a verified cache copy)
costs one ranged GET per record batch; read where a row is asked for, each GET's latency sits
on the pipeline's critical path. LitData and MosaicML Streaming download chunks ahead of the
read position; so does jisu here, for the batches the epoch will read, since the source knows
the epoch's order before its first row (:meth:`ReadAhead.plan`). Up to ``workers`` GETs run at
once, and the bytes fetched ahead and not yet read, plus those being fetched, never pass
``limit_bytes`` (:class:`ByteBudget`; one batch larger than the limit is fetched alone).

A fetched range is handed over once (:meth:`ReadAhead.take`), to the Arrow read of that
batch: the bytes are exactly what that read would have fetched itself (the same ranged,
version-pinned GET), so nothing is served that a read without read-ahead would not have
served. A fetch that fails is forgotten: the read fetches the range itself and raises the
error as it would have. Ranges the epoch passed without reading them (their batch came from
the reader's batch cache) are dropped once the reads are :data:`STALE_AFTER` planned ranges
further, so the bound never stalls the read-ahead.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable

log = logging.getLogger("jisu.dataset")

READ_AHEAD_BYTES = 64 << 20  # default bound of the bytes fetched ahead and in flight
WORKERS = 8  # ranged GETs at once
_CLAIMS_KEPT = 4096

Key = tuple[int, int, int]  # (shard, start, end)


class ByteBudget:
    """At most ``limit`` bytes held at once (one request larger than the limit alone)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self.peak = 0  # the most bytes ever held (tests read it)
        self._cond = threading.Condition()

    def acquire(
        self, nbytes: int, make_room: Callable[[], bool], stopped: Callable[[], bool]
    ) -> bool:
        """Wait until ``nbytes`` fit, calling ``make_room()`` (True: it released some) while
        they do not; False when ``stopped()`` meanwhile."""
        with self._cond:
            while self.held and self.held + nbytes > self.limit:
                if stopped():
                    return False
                if not make_room():
                    self._cond.wait(0.1)
            self.held += nbytes
            self.peak = max(self.peak, self.held)
            return True

    def release(self, nbytes: int) -> None:
        with self._cond:
            self.held -= nbytes
            self._cond.notify_all()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()


class _Fetch:
    __slots__ = ("data", "done", "key", "position", "taken")

    def __init__(self, key: Key, position: int) -> None:
        self.key, self.position = key, position
        self.data: bytes | None = None  # None once done: the fetch failed
        self.done = threading.Event()
        self.taken = False


class ReadAhead:
    """Planned ranges fetched ahead by ``get(shard, start, end)`` (see the module docstring).

    Args:
        get: fetches the bytes of one range (a version-pinned ranged GET).
        limit_bytes: the most bytes fetched ahead and in flight at once.
        workers: GETs at once.
        stop: the run's stop flag: requests in flight are abandoned once it is set.
    """

    def __init__(
        self,
        get: Callable[[int, int, int], bytes],
        limit_bytes: int = READ_AHEAD_BYTES,
        workers: int = WORKERS,
        stop: threading.Event | None = None,
    ) -> None:
        self._get = get
        self._stop = stop
        self.budget = ByteBudget(limit_bytes)
        self._workers = workers
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._plans: deque[Iterable[Key]] = deque()
        self._fetches: dict[Key, _Fetch] = {}
        self._claimed: dict[Key, None] = {}  # ranges reads fetched themselves, oldest first
        self._positions = itertools.count()
        self._read_position = 0  # the latest planned position a read has reached
        self._scheduled = 0  # the latest planned position the scheduler has reached
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._queue: queue.SimpleQueue[_Fetch | None] = queue.SimpleQueue()
        self.fetched = 0  # ranges fetched ahead, and of them handed to a read (tests read it)
        self.hits = 0

    def plan(self, keys: Iterable[Key]) -> None:
        """Fetch ``keys`` (ranges in the order an epoch will read them) ahead, after any plan
        given before."""
        with self._lock:
            if self._closed:
                return
            self._plans.append(keys)
            if not self._threads:
                self._threads = [
                    threading.Thread(target=self._schedule, name="jisu-read-ahead", daemon=True)
                ] + [
                    threading.Thread(target=self._serve, name=f"jisu-read-ahead-{k}", daemon=True)
                    for k in range(self._workers)
                ]
                for thread in self._threads:
                    thread.start()
            self._wake.notify_all()

    def take(self, key: Key) -> bytes | None:
        """The bytes of a range fetched ahead, waiting for them if they are being fetched
        (every read that asks meanwhile gets them: threads reading rows of one batch); None
        when the range was not fetched ahead (the caller fetches it)."""
        with self._lock:
            fetch = self._fetches.get(key)
            if fetch is None:  # the caller fetches it: the read-ahead must not, too
                # a read of a range not fetched yet is ahead of the fetches, or at them:
                # those not read by now were passed over
                self._read_position = max(self._read_position, self._scheduled)
                self._claimed[key] = None
                if len(self._claimed) > _CLAIMS_KEPT:
                    del self._claimed[next(iter(self._claimed))]
                return None
            fetch.taken = True
            self._read_position = max(self._read_position, fetch.position)
        fetch.done.wait()
        with self._lock:
            first = self._fetches.get(key) is fetch
            if first:
                del self._fetches[key]
        data = fetch.data
        if first and data is not None:
            self.budget.release(len(data))
            self.hits += 1
        return data

    def close(self, timeout: float = 5.0) -> None:
        """Stop fetching and wait (up to ``timeout`` for each thread: a GET in flight ends
        within the storage's timeouts); ranges fetched ahead and not taken are let go."""
        with self._lock:
            self._closed = True
            self._plans.clear()
            self._wake.notify_all()
            threads, self._threads = self._threads, []
        self.budget.wake()
        for _ in threads:
            self._queue.put(None)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(timeout)
        with self._lock:
            pending, self._fetches = list(self._fetches.values()), {}
        for fetch in pending:  # one never fetched: no read may wait for it
            fetch.done.set()

    # ------------------------------------------------------------------ the scheduler
    def _schedule(self) -> None:
        while True:
            with self._lock:
                while not self._plans and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                keys = self._plans.popleft()
            try:
                if not self._schedule_plan(keys):
                    return
            except Exception as exc:  # a plan that cannot be followed: the reads fetch
                log.warning("jisu: read-ahead stopped: %r", exc)
                return

    def _schedule_plan(self, keys: Iterable[Key]) -> bool:
        """Fetch a plan's ranges in order, within the bound; False once closed."""
        for key in keys:
            position = self._scheduled = next(self._positions)
            size = key[2] - key[1]
            with self._lock:
                if self._closed:
                    return False
                if key in self._fetches:
                    continue  # being fetched, or fetched and not read yet: one copy
                if key in self._claimed:  # a read got there first and fetched it
                    del self._claimed[key]
                    continue
            if not self.budget.acquire(size, self._drop_passed, lambda: self._closed):
                return False  # closed
            fetch = _Fetch(key, position)
            with self._lock:
                claimed = key in self._claimed  # by a read while this waited for room
                if claimed:
                    del self._claimed[key]
                else:
                    self._fetches[key] = fetch
            if claimed:
                self.budget.release(size)
                continue
            self._queue.put(fetch)
        return True

    def _drop_passed(self) -> bool:
        """While the scheduler waits for room: drop the oldest fetched range the reads went
        past (the least likely to be read still, as parallel reads come slightly out of
        order); whether there was one."""
        with self._lock:
            passed = [
                f
                for f in self._fetches.values()
                if f.done.is_set() and not f.taken and f.position < self._read_position
            ]
            if passed:
                oldest = min(passed, key=lambda f: f.position)
                del self._fetches[oldest.key]
        if passed and oldest.data is not None:
            self.budget.release(len(oldest.data))
        return bool(passed)

    def skip(self, key: Key) -> None:
        """The read of ``key`` was served without its bytes (from a batch cache): let a
        fetched copy go now, and count the reads as past it."""
        with self._lock:
            fetch = self._fetches.get(key)
            if fetch is None or fetch.taken or not fetch.done.is_set():
                return
            del self._fetches[key]
            self._read_position = max(self._read_position, fetch.position)
        if fetch.data is not None:
            self.budget.release(len(fetch.data))

    def _serve(self) -> None:
        if self._stop is not None:
            from ..engine.thread_pool import bind_stop

            bind_stop(self._stop)  # closing the run abandons this thread's request
        while True:
            fetch = self._queue.get()
            if fetch is None or self._closed:
                if fetch is not None:
                    self.budget.release(fetch.key[2] - fetch.key[1])
                    fetch.done.set()
                return
            self._run(fetch, fetch.key[2] - fetch.key[1])

    def _run(self, fetch: _Fetch, size: int) -> None:
        try:
            fetch.data = self._get(*fetch.key)
            self.fetched += 1
        except BaseException:  # the read fetches the range itself and raises the error
            fetch.data = None
            self.budget.release(size)
            with self._lock:
                if self._fetches.get(fetch.key) is fetch:
                    del self._fetches[fetch.key]
        finally:
            fetch.done.set()
