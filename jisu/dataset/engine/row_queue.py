"""The iterator's output queue: ready rows or batches, bounded in items and in bytes, and the
chunks of small rows that cross it as one item (:class:`RowChunk`, read back by :class:`Rows`)."""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

OUTPUT_QUEUE_BYTES = 64 << 20  # ready rows/batches held for the consumer, at most
CHUNK_ROWS = 64  # small rows handed over together, at most ...
CHUNK_BYTES = 1 << 20  # ... and about this many bytes of them


class RowChunk(list):
    """Rows that cross the output queue as one item. Handing rows one by one from the driver
    thread to the consumer cost ~40 us per row (a lock, a wake-up and a GIL hand-off each,
    several times what reading a small row costs); a task's small rows go over together."""


def chunks(rows: list) -> Iterator[Any]:
    """``rows`` (a task's, in order) as :class:`RowChunk` s of up to :data:`CHUNK_ROWS` rows
    and about :data:`CHUNK_BYTES`; a row larger than that (a big batch) goes alone, as is."""
    chunk = RowChunk()
    held = 0
    for row in rows:
        size = RowQueue._size(row)
        if size >= CHUNK_BYTES:
            if chunk:
                yield chunk
                chunk, held = RowChunk(), 0
            yield row
            continue
        chunk.append(row)
        held += size
        if len(chunk) >= CHUNK_ROWS or held >= CHUNK_BYTES:
            yield chunk
            chunk, held = RowChunk(), 0
    if chunk:
        yield chunk


class Rows:
    """The items of a queue one row at a time, a :class:`RowChunk`'s rows in order."""

    def __init__(self) -> None:
        self._held: deque = deque()

    def next(self, get: Callable[[], Any]) -> Any:
        """The next row: held from the last chunk, or the next item ``get()`` returns."""
        if self._held:
            return self._held.popleft()
        item = get()
        if isinstance(item, RowChunk):
            self._held.extend(item)
            return self._held.popleft()
        return item

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        self._held.clear()


class RowQueue:
    """A queue bounded both in items and in bytes (the first item always fits).

    Many tiny batches need a deep queue (each hand-off between threads costs), a few big ones
    must not pile up hundreds of megabytes; so the bound is on both. Same ``put``/``get``
    interface as ``queue.Queue`` (``queue.Full``/``queue.Empty`` on timeout).
    """

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self.max_items, self.max_bytes = max_items, max_bytes
        self._items: deque = deque()
        self._bytes = 0
        lock = threading.Lock()
        self._not_empty = threading.Condition(lock)
        self._not_full = threading.Condition(lock)

    @staticmethod
    def _size(item: Any) -> int:
        if isinstance(item, tuple):
            return sum(getattr(v, "nbytes", 0) for v in item)
        if isinstance(item, RowChunk):
            return sum(RowQueue._size(row) for row in item)
        return 0

    def put(self, item: Any, timeout: float | None = None) -> None:
        size = self._size(item)

        def has_room() -> bool:
            return not self._items or (
                len(self._items) < self.max_items and self._bytes + size <= self.max_bytes
            )

        with self._not_full:
            if not self._not_full.wait_for(has_room, timeout):
                raise queue.Full
            self._items.append((item, size))
            self._bytes += size
            self._not_empty.notify()

    def qsize(self) -> int:
        return len(self._items)

    def get(self, timeout: float | None = None) -> Any:
        with self._not_empty:
            if not self._items and not self._not_empty.wait_for(lambda: self._items, timeout):
                raise queue.Empty
            item, size = self._items.popleft()
            self._bytes -= size
            # Wake the producer at half-empty, not at every item: it then refills in a burst
            # instead of handing the GIL back and forth once per item.
            if not self._items or (
                len(self._items) <= self.max_items // 2 and self._bytes <= self.max_bytes // 2
            ):
                self._not_full.notify()
            return item
