"""``GeneratorDataset(batch_sampler=, collate_fn=)``: batches of the rows that index lists pick.

MindSpore 2.10's ``batch_sampler`` is an iterable that gives, each epoch, lists of source
indices; each list becomes one batch: its rows read from the random-access source, then each
column stacked, or all the columns handed to ``collate_fn`` (one list of row values per column,
as ``batch(per_batch_map=)`` hands them), which returns a tuple with one value per column.
The pipeline's rows are the batches, under the source's column names.

In jisu the source stays random access: row ``k`` of an epoch is batch ``k``, read (through
the source's own reads, so ``num_parallel_workers`` and its read limits apply) and collated in
one task; worker threads or processes each make whole batches, delivered in order.

Each iterator works on its own copy of the batch sampler, as MindSpore's iterator works on a
copy of the pipeline: the user's object is never iterated, and epoch ``e`` (a ``repeat``'s
passes too) is the copy's ``e``-th pass, ``iter()`` called once per epoch
(:class:`~.sampler_runs.PassDraws`). Random access needs one batch count for every epoch:
``len(batch_sampler)`` when it has one, else the length of a first pass (on another copy, as
MindSpore's ``get_dataset_size``); an epoch that gives another count is an error naming it. A
worker process holds its own copy and replays the same passes, so with
``python_multiprocessing`` a batch sampler that draws at random must draw from its own seeded
state (a torch ``BatchSampler`` over a sampler with a seeded ``generator``), not a global RNG.
"""

from __future__ import annotations

import copy
import threading
import types
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.access import RandomAccess
from ..core.error_types import PipelineTypeError, PipelineValueError
from ..core.operation import op_name
from ..core.rows import to_array
from ..engine.collate import stack_column
from ..engine.errors import raise_in_context
from .sampler_runs import PassDraws
from .samplers import Sampler

if TYPE_CHECKING:
    from ..engine.context import ExecContext

#: run (an ExecContext) -> {node id: its batch sampler's passes in that run}
_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_RUNS_LOCK = threading.Lock()


def check_batch_sampling(
    op: str,
    source: Any,
    batch_sampler: Any,
    collate_fn: Any,
    others: dict[str, Any],
) -> None:
    """MindSpore 2.10's checks of ``batch_sampler`` and ``collate_fn``, in its order; ``others``
    are the arguments a batch sampler excludes (``num_samples``, ``shuffle``, ``sampler``,
    ``num_shards``, ``shard_id``) by name. jisu also refuses at build time what MindSpore
    refuses when it runs (a jisu sampler, a string, a generator object, lists that are no
    index lists), with classes that are RuntimeErrors too."""
    if batch_sampler is not None:
        given = [name for name, value in others.items() if value is not None]
        if given:
            raise ValueError(
                f"{op}: batch_sampler is mutually exclusive with num_samples, shuffle, "
                f"sampler, num_shards and shard_id. Received: batch_sampler with {given}"
            )
        if not isinstance(batch_sampler, Iterable):
            raise TypeError(
                f"{op}: batch_sampler must be an iterable of index lists. "
                f"Received: batch_sampler={batch_sampler!r}"
            )
    if collate_fn is not None:
        if batch_sampler is None:
            raise ValueError(f"{op}: collate_fn can be given only with batch_sampler")
        if not callable(collate_fn):
            raise TypeError(f"{op}: collate_fn must be callable. Received: {collate_fn!r}")
    if batch_sampler is None:
        return
    if not (hasattr(source, "__getitem__") and hasattr(source, "__len__")):
        # MindSpore: a ValueError without __getitem__, a RuntimeError without __len__
        raise PipelineValueError(
            f"{op}: batch_sampler needs a random-access source (__getitem__ and __len__); "
            f"this source is {type(source).__name__}"
        )
    kind = (
        "a jisu sampler (it gives single indices)"
        if isinstance(batch_sampler, Sampler)
        else "a string"
        if isinstance(batch_sampler, (str, bytes))
        else "a generator object (it cannot be copied for each iterator)"
        if isinstance(batch_sampler, types.GeneratorType)
        else None
    )
    if kind is not None:  # MindSpore 2.10: a RuntimeError when the pipeline runs
        raise PipelineTypeError(
            f"{op}: batch_sampler must be an iterable of index lists (a list of lists, an "
            f"object whose __iter__ gives lists, a torch BatchSampler); it is {kind}. "
            f"Received: batch_sampler={batch_sampler!r:.80}"
        )
    if isinstance(batch_sampler, (list, tuple)):  # known now: checked at build time
        index_lists(op, batch_sampler, "batch_sampler")


def index_lists(op: str, lists: Iterable[Any], where: str) -> list[np.ndarray]:
    """``lists`` (one pass of a batch sampler) as int64 arrays; a pass with no list, a list
    that is empty, not flat or not of integers is a RuntimeError (MindSpore's class)."""
    out = []
    for k, indices in enumerate(lists):
        if isinstance(indices, (str, bytes)) or not isinstance(indices, (Iterable, np.ndarray)):
            raise PipelineTypeError(
                f"{op}: {where} gave {indices!r:.40} as batch {k}; each batch is a list of "
                "source indices (a batch sampler gives lists, a sampler single indices)"
            )
        array = np.asarray(list(indices) if not isinstance(indices, np.ndarray) else indices)
        if array.ndim != 1 or array.size == 0 or array.dtype.kind not in "iu":
            raise PipelineValueError(
                f"{op}: {where} gave {indices!r:.60} as batch {k}; each batch is a non-empty, "
                "flat list of int source indices"
            )
        out.append(array.astype(np.int64, copy=False))
    if not out:
        raise PipelineValueError(
            f"{op}: {where} gave no index lists (an iterator consumed by an earlier epoch?); "
            "pass a list of lists or an object whose __iter__ starts over each epoch"
        )
    return out


class _Passes:
    """What :class:`PassDraws` copies and draws: the batch sampler, one pass per epoch."""

    def __init__(self, op: str, batch_sampler: Any) -> None:
        self.op = op
        self.batch_sampler = batch_sampler

    def draw(self, epoch: int) -> list[np.ndarray]:
        try:
            lists = list(iter(self.batch_sampler))
        except Exception as exc:
            raise_in_context(exc, f"{self.op}: the batch_sampler raised in epoch {epoch}")
        return index_lists(self.op, lists, f"batch_sampler (epoch {epoch})")

    def reset_chain(self) -> None:
        """Nothing to reset: ``iter()`` starts each pass (PassDraws calls it after one)."""


class BatchSampling:
    """A GeneratorDataset's ``batch_sampler`` and ``collate_fn`` (picklable for processes)."""

    def __init__(self, op: str, batch_sampler: Any, collate_fn: Callable | None) -> None:
        self.op = op
        self.passes = _Passes(op, batch_sampler)
        self.collate_fn = collate_fn
        self._count: int | None = None

    def count(self) -> int:
        """Batches per epoch: the batch sampler's ``len``, else the length of a first pass
        drawn from a copy (the user's object is not iterated)."""
        if self._count is None:
            sampler = self.passes.batch_sampler
            if hasattr(sampler, "__len__"):
                self._count = len(sampler)
            else:
                try:
                    passes = copy.deepcopy(self.passes)
                except Exception:  # cannot be copied (holds a lock …): the object itself
                    passes = self.passes
                self._count = len(passes.draw(0))
        return self._count

    def epoch(self, node: Any, ctx: ExecContext, epoch: int) -> list[np.ndarray]:
        """The index lists of ``epoch`` in this run (pass ``epoch`` of the run's copy)."""
        key = ctx.node_id(node)
        with _RUNS_LOCK:
            runs = _RUNS.setdefault(ctx, {})
            draws = runs.get(key)
            if draws is None:
                draws = runs[key] = PassDraws(self.passes, _Passes.draw)  # type: ignore[arg-type]
        lists = draws.order(epoch)
        if len(lists) != self.count():
            raise PipelineValueError(
                f"{self.op}: batch_sampler gave {len(lists)} index lists in epoch {epoch} but "
                f"{self.count()} batches per epoch (its len(), or its first pass); a batch "
                "sampler gives the same number of batches each epoch here"
            )
        return lists

    def collate(self, rows: list[tuple], columns: tuple[str, ...], epoch: int, k: int) -> tuple:
        """Batch ``k`` of ``epoch`` from its ``rows``: ``collate_fn`` on the columns, or each
        column stacked (rows of one shape)."""
        where = f"{self.op}: batch {k} of epoch {epoch}"
        values = [[row[j] for row in rows] for j in range(len(columns))]
        if self.collate_fn is None:
            try:
                return tuple(stack_column(v, c, None, where) for v, c in zip(values, columns))
            except ValueError as exc:  # rows of different shapes; MindSpore: a RuntimeError
                raise PipelineValueError(
                    f"{exc} (batch_sampler without collate_fn stacks each column; give a "
                    "collate_fn to merge rows of different shapes)"
                ) from None
        try:
            result = self.collate_fn(*values)
        except Exception as exc:
            raise_in_context(exc, f"{where}: collate_fn {op_name(self.collate_fn)} failed")
        if not isinstance(result, tuple) or len(result) != len(columns):
            got = f"{len(result)} values" if isinstance(result, tuple) else type(result).__name__
            raise PipelineValueError(  # MindSpore 2.10: a RuntimeError
                f"{where}: collate_fn {op_name(self.collate_fn)} returned {got}; it returns a "
                f"tuple with one value per column {list(columns)}"
            )
        out = []
        for value, column in zip(result, columns):
            try:
                array = to_array(value)
            except ValueError as exc:
                raise PipelineValueError(
                    f"{where}: collate_fn returned no array for column '{column}': {exc}"
                ) from None
            if array.dtype == object and not isinstance(value, dict):
                raise PipelineTypeError(
                    f"{where}: collate_fn returned {type(value).__name__} for column "
                    f"'{column}'; a column holds numbers, strings, bytes or arrays of them"
                )
            out.append(array)
        return tuple(out)


class BatchSamplerKernels(RandomAccess):
    """The kernels of a GeneratorDataset with a ``batch_sampler``: row ``index`` of an epoch
    is batch ``index``, its rows read by the source's own reads, then collated."""

    def _fetch(self, ctx: ExecContext, epoch: int, index: int) -> tuple:
        indices = self.batches.epoch(self, ctx, epoch)[index]
        rows = [self._read(ctx, int(i)) for i in indices]
        return self.batches.collate(rows, self._columns, epoch, index)

    def fetch_rows(self, ctx: ExecContext, epoch: int, indices: list[int]) -> list[tuple]:
        return [self._fetch(ctx, epoch, i) for i in indices]

    def _row_count(self) -> int:
        return self.batches.count()

    def _settle_kind(self, random_access: bool) -> None:
        # read by index in every error samples mode: a batch that fails is an error
        self.skip_errors = False

    def use_sampler(self, new_sampler: Any) -> None:
        raise ValueError(f"{self.op_name}: use_sampler/add_sampler cannot replace a batch_sampler")

    @property
    def shards(self) -> None:
        """Not sharded: the batch sampler picks every row read."""
        return None
