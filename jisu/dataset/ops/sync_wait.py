"""``Dataset.sync_wait`` / ``sync_update``: hold rows back until the training loop says so.

MindSpore's way for a training loop to feed something back into the pipeline (an augmentation
policy that follows the loss): rows pass a ``sync_wait`` point ``num_batch`` batches at a
time; ``dataset.sync_update(condition_name, data=...)`` calls the callback with ``data`` and
lets the next batches through. So the ops after the point process the rows of batch ``k + 1``
only after the loop's ``k``-th update (the rows per batch are those of the ``batch`` above the
point, from the plan). Each epoch starts with ``num_batch`` batches allowed.

The point is a stream node: everything after it runs as streams, fed by the rows it lets
through, one row (or batch) per task (``holds_rows``): a task that gathered several would wait
for rows not yet let through, and with two points in a pipeline (or none of its rows batched)
nothing would come out. Everything before it still runs ahead, up to the usual prefetch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..core.node import Dataset
from ..core.operation import op_name
from ..core.validation import check_int
from ..engine.context import ExecContext
from ..engine.errors import raise_in_context

#: seconds between looks at the iterator's stop flag while a row waits
_POLL_S = 0.05


class SyncWaitDataset(Dataset):
    """See the module docstring and :meth:`Dataset.sync_wait`."""

    op_name = "sync_wait"
    holds_rows = True  # the stages above take one row (or batch) per task: no chunk waits

    def __init__(
        self,
        child: Dataset,
        condition_name: str,
        num_batch: int = 1,
        callback: Callable[[Any], Any] | None = None,
    ) -> None:
        super().__init__([child])
        if not isinstance(condition_name, str):  # '' is a name too (MindSpore 2.10 runs it)
            raise TypeError(
                f"sync_wait: condition_name must be a str. Received: {condition_name!r}"
            )
        if find_sync(child, condition_name) is not None:
            raise RuntimeError(f"sync_wait: condition name '{condition_name}' already exists")
        if callback is not None and not callable(callback):
            raise TypeError(f"sync_wait: callback must be callable. Received: {callback!r}")
        self.condition_name = condition_name
        self.num_batch = check_int("sync_wait", "num_batch", num_batch, minimum=1)
        self.callback = callback
        self._rows_per_batch = 1  # of the running iterator: its plan's (a batch above)
        self._columns = child._columns
        self._condition = threading.Condition()
        self._allowed = 0  # rows of the current epoch allowed through
        self._passed = 0
        self._disabled = False  # disable(): rows pass freely from then on

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_condition")  # (a copy in a worker process never waits)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._condition = threading.Condition()

    def _row_count(self) -> int | None:
        return self.children[0]._row_count()

    def update(self, num_batch: int | None, data: Any) -> None:
        """Run the callback with ``data``, then let ``num_batch`` more batches through."""
        count = self.num_batch if num_batch is None else num_batch
        count = check_int("sync_update", "num_batch", count, minimum=1)
        if self.callback is not None:
            try:
                self.callback(data)
            except Exception as exc:
                raise_in_context(
                    exc,
                    f"sync_update: the callback {op_name(self.callback)} of condition "
                    f"'{self.condition_name}' failed",
                )
        with self._condition:
            self._allowed += count * self._rows_per_batch
            self._condition.notify_all()

    def disable(self) -> None:
        """Let every row through from now on, without waiting for updates (MindSpore's
        ``disable_sync``; it lasts, as MindSpore's does, for later iterators too)."""
        with self._condition:
            self._disabled = True
            self._condition.notify_all()

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        rows = 1 if ctx.plan is None else ctx.plan.rows_per_batch(self)
        with self._condition:
            self._rows_per_batch = rows
            self._passed = start
            first = -(-start // rows) if start else 0  # batches already out
            self._allowed = (first + self.num_batch) * rows
        for row in self.children[0]._stream(ctx, epoch, start):
            with self._condition:
                while self._passed >= self._allowed and not self._disabled:
                    self._condition.wait(_POLL_S)
                    ctx.check()  # the iterator stopped: give up waiting
                self._passed += 1
            yield row


def nearest_sync(root: Dataset) -> SyncWaitDataset | None:
    """The first ``sync_wait`` point down the chain of first inputs below ``root`` (the one
    MindSpore's ``disable_sync`` turns off)."""
    node: Dataset | None = root
    while node is not None and not isinstance(node, SyncWaitDataset):
        node = node.children[0] if node.children else None
    return node


def find_sync(root: Dataset, condition_name: str) -> SyncWaitDataset | None:
    """The ``sync_wait`` point named ``condition_name`` in the pipeline below ``root``."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, SyncWaitDataset) and node.condition_name == condition_name:
            return node
        stack.extend(node.children)
    return None
