"""How each kind of planned stage runs: what it feeds its tasks, which kernel they call, and
how its results come back in order (see :mod:`.plan` for what the kinds are).

Ops do not start stages themselves: they declare the kind of stage they run as a stream
(``stream_stage``) and the kernels its tasks call (``fetch_rows``, ``map_rows``,
``batch_rows``, ``filter_rows``); :func:`run_stream` and :func:`run_epochs` do the rest.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..core.access import is_random_access
from .plan import BATCH, FETCH, FILTER, MAP, READ
from .row_queue import chunks
from .stage import EPOCH_END, AdaptiveChunker, at_epoch, ordered_map
from .tasks import StageTask

if TYPE_CHECKING:
    from ..core.node import Dataset
    from .context import ExecContext


def run_epochs(
    ctx: ExecContext,
    root: Dataset,
    epoch: int,
    start: int,
    num_epochs: int,
    handoff: bool = False,
) -> Iterator[Any]:
    """Rows of epoch after epoch from row ``start`` of ``epoch``, with ``EPOCH_END`` after
    each, up to epoch ``num_epochs`` (-1: forever); ``handoff``: a random-access pipeline's
    small rows in :class:`~.row_queue.RowChunk` s, for the output queue.

    A random-access pipeline runs as one **fetch** stage spanning the epochs, so its workers
    start on the next epoch while the last tasks of this one finish; any other root runs one
    stream per epoch.
    """

    def epochs() -> Iterator[tuple[int, int]]:
        numbers = itertools.count(epoch) if num_epochs < 0 else range(epoch, num_epochs)
        for e in numbers:
            yield e, start if e == epoch else 0

    if not is_random_access(root):
        for e, first in epochs():
            yield from run_stream(ctx, root, e, first)
            yield EPOCH_END
        return
    n = root._row_count()
    # Bound the work in flight in source rows: a task holds at most 4096 of them, and the
    # stage runs ahead by about ``prefetch_size`` rows.
    rows_each = root.rows_per_item
    chunker = AdaptiveChunker(max_size=max(1, 4096 // rows_each))
    items = ((e, chunk) for e, first in epochs() for chunk in chunker.split(range(first, n)))
    stage = ctx.plan.stage(root, FETCH)
    results = ordered_map(
        ctx,
        StageTask(root, "fetch_rows"),
        items,
        chunker=chunker,
        key=(id(root), "fetch"),
        name=root.op_name,
        stage=stage,
    )
    try:
        for _, first in epochs():
            remaining = n - first
            while remaining > 0:  # chunks never span epochs, so counts line up
                rows = next(results)
                remaining -= len(rows)
                if handoff:
                    yield from chunks(rows)
                else:
                    yield from rows
            yield EPOCH_END
    finally:
        results.close()


def run_stream(ctx: ExecContext, node: Dataset, epoch: int, start: int) -> Iterator[tuple]:
    """Rows of one epoch of ``node`` from output row ``start`` on: its planned stage, or its
    own ``_stream_rows`` when it runs inline (shuffle, repeat, zip of streams …)."""
    if is_random_access(node):
        rows = run_epochs(ctx, node, epoch, start, epoch + 1)
        return (row for row in rows if row is not EPOCH_END)
    kind = node.stream_stage
    if kind is None:
        return node._stream_rows(ctx, epoch, start)
    return _RUNS[kind](ctx, node, epoch, start)


def _chunker(feed: Dataset) -> AdaptiveChunker:
    """The chunker of a stage fed by ``feed``: one item per task when a node below holds rows
    back (``holds_rows``), since a chunk still filling would wait for rows that come out only
    after the training loop has seen the rows before them (a hang)."""
    stack = [feed]
    while stack:
        node = stack.pop()
        if node.holds_rows:
            return AdaptiveChunker(max_size=1)
        stack.extend(node.children)
    return AdaptiveChunker()


def _map(ctx: ExecContext, node: Any, epoch: int, start: int) -> Iterator[tuple]:
    """Maps after a stream. Maps that cannot drop rows start their input at ``start`` too; a
    map in "skip" mode can: its output row ``start`` is some later input row, known only by
    running the maps, so it restores its position by replaying the epoch from the start and
    dropping the first ``start`` rows it delivers (as filter does)."""
    stage = ctx.plan.stage(node, MAP)
    base = stage.feed
    drops = any(m.skip_errors for m in stage.ops)
    first, to_drop = (0, start) if drops else (start, 0)
    chunker = _chunker(base)
    rows = chunker.split(enumerate(run_stream(ctx, base, epoch, first), first))
    results = ordered_map(
        ctx,
        StageTask(node, "map_rows", cut=base),
        at_epoch(epoch, rows),
        chunker=chunker,
        key=(id(node), "map"),
        name="map",
        stage=stage,
    )
    out = itertools.chain.from_iterable(results)
    yield from itertools.islice(out, to_drop, None)  # replayed up to the restored position


def _batch(ctx: ExecContext, node: Any, epoch: int, start: int) -> Iterator[tuple]:
    """A batch after a stream: groups of rows, the maps below and assembly in one task."""
    stage = ctx.plan.stage(node, BATCH)
    base = stage.feed
    first = node.first_row(epoch, start)
    groups = node.groups(enumerate(run_stream(ctx, base, epoch, first), first), epoch, start)
    yield from ordered_map(
        ctx,
        StageTask(node, "batch_rows", cut=base),
        at_epoch(epoch, enumerate(groups, start)),
        key=(id(node), "batch"),
        name="batch",
        stage=stage,
    )


def _filter(ctx: ExecContext, node: Any, epoch: int, start: int) -> Iterator[tuple]:
    """A filter: its predicate on chunks of rows; a restored position is replayed (which rows
    pass is known only by running it)."""
    child = node.children[0]
    chunker = _chunker(child)
    results = ordered_map(
        ctx,
        StageTask(node, "filter_rows", cut=child),
        at_epoch(epoch, chunker.split(enumerate(run_stream(ctx, child, epoch, 0)))),
        chunker=chunker,
        key=(id(node), "filter"),
        name="filter",
        stage=ctx.plan.stage(node, FILTER),
    )
    rows = itertools.chain.from_iterable(results)
    yield from itertools.islice(rows, start, None)


def _read(ctx: ExecContext, node: Any, epoch: int, start: int) -> Iterator[tuple]:
    """A random-access source in "skip" mode: rows read by index in parallel, in order,
    without those that failed. ``start`` counts rows delivered, not positions in the read
    order: which reads fail is known only by reading them, so a restored position reads the
    epoch again from its start and drops the first ``start`` rows it delivers (the skips
    before them are found, and counted, again in this run)."""
    chunker = AdaptiveChunker(max_size=4096)
    stage = ctx.plan.stage(node, READ)
    results = ordered_map(
        ctx,
        StageTask(node, "fetch_rows"),
        at_epoch(epoch, chunker.split(range(node._row_count()))),
        chunker=chunker,
        key=(id(node), "read"),
        name=node.op_name,
        stage=stage,
    )
    rows = itertools.chain.from_iterable(results)
    yield from itertools.islice(rows, start, None)  # replayed up to start


_RUNS = {MAP: _map, BATCH: _batch, FILTER: _filter, READ: _read}
