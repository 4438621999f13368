"""The shared-memory slabs (:class:`.shm.Slab`) one process pool's results come back in."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from .shm import Slab, unpack

_MIB = 1 << 20


class SlabPool:
    """Slabs of one size, at most ``2 * workers + 4`` of them, reused as results die.

    A task takes a free slab (or a new one, within the budget) before it is sent; its result
    comes back in it, as arrays that are views of it, or pickled when the result did not fit,
    in which case the slab size grows for later tasks and slabs of the old size are retired as
    they come back. When every slab is out, results travel pickled: slower, never stuck.

    Args:
        name: the stage, for messages.
        workers: the pool's process count.
        lock: the pool's lock, held by every caller; a re-entrant one, since the last array of
            a slab may die (and return the slab) while it is held.
        available: bytes of shared memory available (checked before the first slab is made).
        on_retire: told the id of each slab closed here (workers that map it must drop it).
        enabled: whether to use shared memory at all (``config.set_enable_shared_mem``).
    """

    def __init__(
        self,
        name: str,
        workers: int,
        lock: threading.RLock,
        available: Callable[[], int],
        on_retire: Callable[[int], None],
        enabled: bool = True,
    ) -> None:
        self.name = name
        self.enabled = enabled  # False: no slab is ever made, results travel pickled
        self.size = 0  # bytes per slab; 0 until a result shows how much one needs
        self._checked = 0  # the slab size the budget was last checked for
        self.closed = False
        self._lock = lock
        self._available = available
        self._on_retire = on_retire
        self._slabs: dict[int, Slab] = {}
        self._free: list[int] = []
        self._ids = itertools.count()
        self.set_workers(workers)

    def set_workers(self, workers: int) -> None:
        self.workers = workers
        self.limit = 2 * workers + 4 if self.enabled else 0

    def __getitem__(self, slab_id: int) -> Slab:
        return self._slabs[slab_id]

    def take(self) -> int | None:
        """A free slab of the current size, a new one within the budget, or None.

        Raises:
            MemoryError: the first slabs would not fit in the shared memory available.
            OSError: a slab could not be made.
        """
        while self._free:
            slab_id = self._free.pop()
            if self._slabs[slab_id].size == self.size:
                return slab_id
            self._retire(slab_id)
        if self.size == 0 or len(self._slabs) >= self.limit:
            return None
        if self.size != self._checked:  # the first slab of this size
            self._check_budget()
            self._checked = self.size
        slab = Slab(next(self._ids), self.size)
        self._slabs[slab.id] = slab
        return slab.id

    def _check_budget(self) -> None:
        need = self.limit * self.size
        available = self._available() + sum(s.size for s in self._slabs.values())
        if need > available:
            raise MemoryError(
                f"{self.name}: worker processes need {need / _MIB:.0f} MiB of shared memory "
                f"({self.limit} buffers of {self.size / _MIB:.1f} MiB for {self.workers} "
                f"workers) but only {available / _MIB:.0f} MiB is available. Use fewer "
                "num_parallel_workers, a smaller batch, or config.set_prefetch_size()."
            )

    def grow(self, nbytes: int) -> None:
        """A result of ``nbytes`` did not fit: later slabs are made big enough for it."""
        if nbytes > self.size:
            self.size = max(_MIB, -(-int(nbytes * 1.25) // _MIB) * _MIB)

    def unpack(self, slab_id: int, layout: Any) -> Any:
        """The result in a slab, as views of it; the slab returns when the last one dies."""
        slab = self._slabs[slab_id]
        return unpack(layout, slab.map, lambda: self._released(slab_id))

    def _released(self, slab_id: int) -> None:
        """The consumer let go of every array in a slab (from any thread, or GC)."""
        with self._lock:
            if slab_id in self._slabs:
                self.put_back(slab_id)

    def put_back(self, slab_id: int) -> None:
        """A slab is free again: reuse it, or retire it (an old size, or the pool closed)."""
        if self._slabs[slab_id].size == self.size and not self.closed:
            self._free.append(slab_id)
        else:
            self._retire(slab_id)

    def _retire(self, slab_id: int) -> None:
        self._slabs.pop(slab_id).close()
        self._on_retire(slab_id)

    def close(self) -> None:
        """Retire the free slabs; those still holding results go when their arrays die."""
        self.closed = True
        for slab_id in self._free:
            self._retire(slab_id)
        self._free.clear()
