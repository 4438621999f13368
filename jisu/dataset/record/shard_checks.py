"""Checksums of the shards of a data set in object storage, verified as the reads need them.

With ``verify=True`` a shard's bytes are checked against the manifest's CRC-32 (by reading the
shard in full: into the cache when there is one) before any row of it is served. Checking every
shard when the data set is opened made the first epoch wait for the whole download; here the
checks run in the background from the open on (:meth:`ShardChecks.check_all`, in shard order),
the shards an epoch will read first moved ahead once its order is known
(:meth:`ShardChecks.plan`, from the source's epoch order), up to :data:`WORKERS` at once; a read
of a shard not checked yet checks it at once on its own thread, or waits for the check under
way (:meth:`ShardChecks.wait`). So epoch 1 starts once its first shard is checked, and
downloads overlap the reads of the shards checked before them. A worker process that reads
the data set checks only the shards it reads, those its parent had not checked yet.

A check that fails (a checksum mismatch, or object storage failing after its retries) is kept:
every later read of that shard raises it; rows of other shards are still served. Nothing is
served from a shard whose check has not passed.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable

from ..engine.context import Stopped

log = logging.getLogger("jisu.dataset")

WORKERS = 8  # whole-shard checks (downloads) at once


class ShardChecks:
    """The checks of shards ``0 .. count - 1``, by ``check(k)`` (raises when shard ``k`` fails),
    run by background threads in plan order, a shard that a read waits for first.

    Args:
        count: the number of shards.
        check: verifies one shard; it raises when the shard fails (the caller keeps the
            error: :meth:`wait` only says when the check is over).
        done: shards verified already (a verified cache copy).
        workers: the most checks at once (default :data:`WORKERS`).
    """

    def __init__(
        self,
        count: int,
        check: Callable[[int], None],
        done: Iterable[int] = (),
        workers: int | None = None,
    ) -> None:
        self._check = check
        self._workers = WORKERS if workers is None else workers
        self._events = [threading.Event() for _ in range(count)]
        self._errors: dict[int, BaseException] = {}
        self._queue: deque[int] = deque()  # the epochs' plans, in order
        self._background: deque[int] = deque()  # then the rest, in shard order
        self._claimed: set[int] = set()  # started or finished
        self._running = 0
        self._lock = threading.Lock()
        for k in done:
            self._claimed.add(k)
            self._events[k].set()

    def passed(self, k: int) -> bool:
        """Whether shard ``k``'s check has passed."""
        return self._events[k].is_set() and k not in self._errors

    def all_passed(self) -> bool:
        return all(self.passed(k) for k in range(len(self._events)))

    def plan(self, shards: Iterable[int]) -> None:
        """Check these shards in this order, after a shard a read waits for and the earlier
        plans' shards (and before the background's)."""
        with self._lock:
            queued = set(self._queue)
            for k in shards:
                if k not in self._claimed and k not in queued:
                    self._queue.append(k)
                    queued.add(k)
            self._start_workers()

    def check_all(self) -> None:
        """Check every shard in the background, in shard order, after any plan's: the data
        set's shards are all checked even if no run plans them."""
        with self._lock:
            self._background.extend(k for k in range(len(self._events)) if k not in self._claimed)
            self._start_workers()

    def wait(self, k: int) -> None:
        """Return once shard ``k`` has been checked, passed or failed (:meth:`passed`); one
        not started yet is checked at once on the calling thread, so that a read never waits
        behind the plan.

        Raises:
            Stopped: the calling thread's run stopped while it checked the shard (the check
                is left to the next read, as if it had not started).
        """
        while True:
            with self._lock:
                event = self._events[k]
                if event.is_set():
                    return
                mine = k not in self._claimed
                self._claimed.add(k)  # its entries in the queues are skipped
            if mine:
                self._run(k)
            else:
                event.wait()  # then look again: a check abandoned is started afresh

    def _start_workers(self) -> None:
        """Start threads for the queued checks, within the bound (the lock is held)."""
        queued = len(self._queue) + len(self._background)
        while queued > self._running and self._running < self._workers:
            self._running += 1
            threading.Thread(target=self._work, name="jisu-shard-check", daemon=True).start()

    def _next(self) -> int | None:
        """The next shard to check, claimed; None when there is none (the thread ends)."""
        with self._lock:
            for queue in (self._queue, self._background):
                while queue:
                    k = queue.popleft()
                    if k not in self._claimed:
                        self._claimed.add(k)
                        return k
            self._running -= 1
            return None

    def _work(self) -> None:
        try:
            while (k := self._next()) is not None:
                self._run(k)
        except Stopped:  # the interpreter is exiting
            with self._lock:
                self._running -= 1

    def _run(self, k: int) -> None:
        try:
            self._check(k)
        except Stopped:  # not the shard's failure: unclaimed, for the next read to check
            with self._lock:
                event, self._events[k] = self._events[k], threading.Event()
                self._claimed.discard(k)
            event.set()  # whoever waited looks again
            raise
        except BaseException as exc:  # the reader keeps it and raises it to every read
            log.debug("checking shard %d failed: %r", k, exc)
            self._errors[k] = exc
            self._events[k].set()
        else:
            self._events[k].set()
