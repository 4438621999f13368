"""Where each pipeline thread is: the node, op, epoch and sample it works on now.

The kernels that read data or run user code (a fetch stage's row loop, a map's ops, a
filter's predicate, a batch's ``per_batch_map``) write their thread's :class:`Position` just
before they do; the watchdog (``engine/watchdog.py``) reads it to name what a stuck task is
doing: "map operation decode on column(s) ['image'] at sample 3 of epoch 0".

Cost: a thread-local read and a few attribute writes per row (tens of nanoseconds), no lock:
the only reader is the watchdog, which looks at a thread's slot only while that thread has
been running one task for seconds, so a torn read of a slot being rewritten is harmless.

A worker process's slot is in that process and is not read from the parent (its task is
named by the stage's ops and samples instead).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any


class Position:
    """One thread's slot: ``node`` (a pipeline node), ``op`` (the operation or user function
    it runs, None while it reads), ``epoch`` and ``index`` (the sample, or the batch number
    for a batch node's own work). All None until the thread's first kernel writes it."""

    __slots__ = ("__weakref__", "epoch", "index", "node", "op")

    def __init__(self) -> None:
        self.node: Any = None
        self.op: Any = None
        self.epoch: int | None = None
        self.index: int | None = None

    def at(self, node: Any, epoch: int, index: int, op: Any = None) -> Position:
        """Record that this thread now works on ``node`` (running ``op``) at ``index`` of
        ``epoch``; returns the slot, so that a loop over ops can update ``op`` alone."""
        self.node, self.epoch, self.index, self.op = node, epoch, index, op
        return self

    def clear(self) -> None:
        """Nothing running (a pool's worker between tasks)."""
        self.node = self.op = self.epoch = self.index = None


#: every live thread's slot, by thread ident; an entry goes with its thread (the thread-local
#: holds the only strong reference)
_BY_THREAD: weakref.WeakValueDictionary[int, Position] = weakref.WeakValueDictionary()


class _Local(threading.local):
    def __init__(self) -> None:  # runs once in each thread, on its first use
        self.slot = Position()
        _BY_THREAD[threading.get_ident()] = self.slot


_LOCAL = _Local()


def position() -> Position:
    """The calling thread's slot."""
    return _LOCAL.slot


def position_of(ident: int | None) -> Position | None:
    """Thread ``ident``'s slot; None when that thread never ran a kernel (or has ended)."""
    return None if ident is None else _BY_THREAD.get(ident)
