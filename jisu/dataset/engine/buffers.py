"""Reusable batch arrays: a batch's memory is recycled once nobody holds the batch any more.

A fresh multi-megabyte array costs a page fault per page and the kernel zeroing every page;
on a virtual machine the first touch of memory is slower still (measured: a new 38 MB batch
of 64 224x224x3 float32 images took ~100 ms to fill, a reused one ~11 ms). Freed batch
arrays are therefore kept and handed out again, by one pool for the whole process, so a new
iterator (many training loops make one per epoch) reuses the memory of the previous one.

An array is free again when the only reference left is the pool's own: a tensor made from it
with ``torch.from_numpy``, a view of it, or a queued row all hold a reference to it.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np

_MIN_BYTES = 1 << 20  # small batches are cheap to allocate; pooling them is not worth a lock
# references to a free array while it is checked: the pool's list, the loop variable and
# getrefcount's argument
_FREE = 3


def default_budget() -> int:
    """Bytes the process-wide pool may keep: 1/16 of the physical memory, at most 512 MiB."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = 4 << 30
    return min(512 << 20, memory // 16)


class BufferPool:
    """Arrays by (shape, dtype), reused once free; thread-safe.

    Args:
        max_bytes: most bytes kept (in use or free). When a new array would exceed it, free
            arrays of the least recently used other shapes are dropped first; if that is not
            enough, the new array is handed out without being kept.
        max_per_key: most arrays kept per (shape, dtype).
    """

    def __init__(self, max_bytes: int | None = None, max_per_key: int = 8) -> None:
        self.max_bytes = default_budget() if max_bytes is None else int(max_bytes)
        self.max_per_key = max_per_key
        self._lock = threading.Lock()
        self._arrays: dict[tuple, list[np.ndarray]] = {}  # most recently used key last
        self._bytes = 0

    @property
    def kept_bytes(self) -> int:
        """Bytes of all arrays the pool keeps, free or in use."""
        return self._bytes

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialized array, reused when a previous one of that kind is free."""
        dtype = np.dtype(dtype)
        nbytes = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
        if nbytes < _MIN_BYTES:
            return np.empty(shape, dtype)
        key = (tuple(shape), dtype.str)
        with self._lock:
            arrays = self._arrays.pop(key, [])
            self._arrays[key] = arrays  # now the most recently used
            for array in arrays:
                if sys.getrefcount(array) <= _FREE:
                    return array
            array = np.empty(shape, dtype)
            if len(arrays) < self.max_per_key and self._make_room(nbytes, key):
                arrays.append(array)
                self._bytes += nbytes
            return array

    def _make_room(self, nbytes: int, keep: tuple) -> bool:
        """Drop free arrays of other keys, least recently used first, until ``nbytes`` fit."""
        for key in list(self._arrays):
            if self._bytes + nbytes <= self.max_bytes:
                break
            if key == keep:
                continue
            arrays = self._arrays[key]
            # dropped by identity: list.remove compares arrays with ==, which is elementwise
            free = {id(a) for a in arrays if sys.getrefcount(a) <= _FREE}
            self._bytes -= sum(a.nbytes for a in arrays if id(a) in free)
            arrays[:] = [a for a in arrays if id(a) not in free]
            if not arrays:
                del self._arrays[key]
        return self._bytes + nbytes <= self.max_bytes

    def clear(self) -> None:
        """Forget every array (those in use stay valid; they are just not reused)."""
        with self._lock:
            self._arrays.clear()
            self._bytes = 0


batch_buffers = BufferPool()  # the process's pool, shared by all iterators
