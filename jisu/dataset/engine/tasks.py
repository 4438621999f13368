"""Stage tasks: the picklable unit of work a stage hands to its threads or processes."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..core.node import Dataset

if TYPE_CHECKING:
    from .context import ExecContext


def walk(node: Dataset, cut: Dataset | None = None) -> Iterator[Dataset]:
    """Nodes of the subtree at ``node`` in post-order, not descending below ``cut``."""
    if node is not cut:
        for child in node.children:
            yield from walk(child, cut)
    yield node


class StreamCut(Dataset):
    """Stands in, in a worker's copy of a stage, for the stream node that feeds the stage."""

    def __init__(self, columns: tuple[str, ...]) -> None:
        super().__init__()
        self._columns = columns

    def _row_count(self) -> int | None:
        return None


def _detach(node: Any, cut: Dataset) -> Any:
    if node is cut:
        return StreamCut(cut._columns)
    clone = copy.copy(node)
    clone.children = tuple(_detach(child, cut) for child in node.children)
    return clone


class StageTask:
    """``getattr(node, method)(ctx, epoch, item)``: the work of one stage, for one item.

    Args:
        node: the node whose method does the work.
        method: the method's name.
        cut: for a stage fed by a stream, the node feeding it: a worker process gets a copy of
            the nodes down to it and never the stream itself (a generator need not pickle).
            None for a random-access stage, whose whole subtree goes to the workers.
    """

    def __init__(self, node: Dataset, method: str, cut: Dataset | None = None) -> None:
        self.node = node
        self.method = method
        self.cut = cut

    def __call__(self, ctx: ExecContext, epoch: int, item: Any) -> Any:
        return getattr(self.node, self.method)(ctx, epoch, item)

    @property
    def processes(self) -> bool:
        """Whether a node of this stage asked for ``python_multiprocessing``."""
        return any(getattr(n, "python_multiprocessing", False) for n in walk(self.node, self.cut))

    def for_process(self, ctx: ExecContext) -> tuple[StageTask, list[int]]:
        """A copy to pickle for worker processes, and the structural ids of its nodes in
        :func:`walk` order (so that random draws in a worker equal those in a thread)."""
        ids = [ctx.node_id(n) for n in walk(self.node, self.cut)]
        if self.cut is None:
            return StageTask(self.node, self.method), ids
        return StageTask(_detach(self.node, self.cut), self.method, None), ids

    def nodes(self) -> list[Any]:
        return list(walk(self.node, self.cut))
