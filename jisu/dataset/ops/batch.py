"""``Dataset.batch`` / ``padded_batch``: group rows, optionally through ``per_batch_map``."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..core.access import RandomAccess, is_random_access
from ..core.error_types import ArgumentError, PipelineValueError
from ..core.node import Dataset
from ..core.operation import op_name
from ..core.position import position
from ..core.ragged import RaggedArray
from ..core.rows import to_array
from ..core.validation import check_columns, check_int
from ..engine.collate import ZERO, Deferred, stack_column
from ..engine.context import ExecContext
from ..engine.errors import raise_in_context
from ..engine.plan import BATCH, batch_map_chain, fetch_maps
from ..engine.stage import chunked
from .map import MapDataset, check_unique, column_layout


class BatchInfo:
    """What ``per_batch_map`` (and a callable batch size) learn about the batch being built."""

    def __init__(self, batch_num: int, epoch_num: int) -> None:
        self._batch_num = batch_num
        self._epoch_num = epoch_num

    def get_batch_num(self) -> int:
        """Index of this batch within its epoch."""
        return self._batch_num

    def get_epoch_num(self) -> int:
        """Index of the epoch."""
        return self._epoch_num


def _check_pad_info(pad_info: Any, columns: Sequence[str]) -> dict:
    if pad_info is None:
        return {}
    if not isinstance(pad_info, dict):
        raise TypeError(f"batch: pad_info must be a dict. Received: pad_info={pad_info!r}")
    checked = {}
    for name, spec in pad_info.items():
        if name not in columns:  # MindSpore: a RuntimeError when it runs
            raise PipelineValueError(
                f"batch: pad_info names unknown column '{name}'; the columns are "
                f"{list(columns)}. Received: pad_info={pad_info!r}"
            )
        if not isinstance(spec, (tuple, list)) or len(spec) != 2:
            raise TypeError(
                f"batch: pad_info['{name}'] must be (shape or None, pad_value). Received: {spec!r}"
            )
        shape, value = spec
        if shape is not None and (
            not isinstance(shape, (list, tuple))
            or not all(s is None or (isinstance(s, int) and s > 0) for s in shape)
        ):
            raise ValueError(
                f"batch: pad_info['{name}'] shape must be None or a list of positive ints "
                f"(None for 'the largest in the batch'). Received: {shape!r}"
            )
        checked[name] = (shape, value)
    return checked


class _BatchKernels(RandomAccess):
    """Random access: batch ``index`` from rows ``index * batch_size`` on of the child, fetched
    (or gathered at once), the maps right below applied per row, then assembled."""

    def _fetch(self, ctx: ExecContext, epoch: int, index: int) -> tuple:
        child = self.children[0]
        begin = index * self.batch_size
        end = min(begin + self.batch_size, child._row_count())
        # with the profiler on, one decision per batch: all its rows' ops timed, or none
        weight = ctx.op_times.weight(index) if ctx.op_times is not None else 0
        started = time.perf_counter()
        here = position().at(child, epoch, begin)  # reading (the batch's first row)
        columns = child._fetch_columns(ctx, epoch, np.arange(begin, end))
        if columns is not None:
            if weight:  # the source gathered the batch's rows at once
                ctx.op_times.add(self, "gather", time.perf_counter() - started, weight)
            return self.make_batch(epoch, index, None, columns)
        chain, source = fetch_maps(self)  # the maps right below: applied here, per row
        steps = list(zip(chain, self.deferrable(chain)))
        rows = []
        for i in range(begin, end):
            here.at(source, epoch, i)
            if weight:
                started = time.perf_counter()
                row = source._fetch(ctx, epoch, i)
                ctx.op_times.add(source, "read", time.perf_counter() - started, weight)
            else:
                row = source._fetch(ctx, epoch, i)
            for node, defer in steps:
                row = node.apply_row(ctx, epoch, i, row, defer, weight)
            rows.append(row)
        return self._assemble(ctx, epoch, index, rows, weight)


class BatchDataset(Dataset):
    """Batches of ``batch_size`` rows; see :meth:`Dataset.batch`."""

    op_name = "batch"
    random_access_kernels = _BatchKernels
    has_workers = True
    stream_stage = BATCH

    def __init__(
        self,
        child: Dataset,
        batch_size: int,
        drop_remainder: bool = False,
        num_parallel_workers: int | None = None,
        per_batch_map: Callable | None = None,
        input_columns: str | Sequence[str] | None = None,
        output_columns: str | Sequence[str] | None = None,
        pad_info: dict | None = None,
        python_multiprocessing: bool = False,
        pad_all: bool = False,
        ragged: str | Sequence[str] | None = None,
    ) -> None:
        super().__init__([child], num_parallel_workers)
        #: a callable batch size: ``size_fn(BatchInfo(batch_num, epoch)) -> int`` (MindSpore's)
        self.size_fn: Callable[[BatchInfo], int] | None = None
        if callable(batch_size):
            self.size_fn, self.batch_size = batch_size, -1  # -1: get_batch_size's answer
        else:
            if isinstance(batch_size, bool):  # a slip; MindSpore refuses False: a ValueError
                raise ArgumentError(
                    f"batch: batch_size must be an int. Received: batch_size={batch_size!r}"
                )
            self.batch_size = check_int("batch", "batch_size", batch_size, minimum=1)
        if not isinstance(drop_remainder, bool):
            raise TypeError(f"batch: drop_remainder must be a bool. Received: {drop_remainder!r}")
        self.drop_remainder = drop_remainder
        if per_batch_map is not None and not callable(per_batch_map):
            raise TypeError(f"batch: per_batch_map must be callable. Received: {per_batch_map!r}")
        if per_batch_map is None and (input_columns is not None or output_columns is not None):
            raise ValueError(
                "batch: input_columns/output_columns are only used with "
                "per_batch_map. Received: per_batch_map=None"
            )
        self.per_batch_map = per_batch_map
        columns = child._columns
        self.input_columns = check_columns(
            "batch", "input_columns", input_columns, columns
        ) or list(columns)
        self.output_columns = check_columns("batch", "output_columns", output_columns) or list(
            self.input_columns
        )
        if per_batch_map is None:
            self._columns, self._sources = tuple(columns), [(False, j) for j in range(len(columns))]
        else:
            self._columns, self._sources = column_layout(
                columns, self.input_columns, self.output_columns
            )
            check_unique("batch", self._columns)
        self._in_idx = [columns.index(c) for c in self.input_columns]
        pads = _check_pad_info(pad_info, self._columns)
        if pad_all:  # padded_batch: the columns pad_info does not name get 0 ('' for strings)
            pads = {c: pads.get(c, (None, ZERO)) for c in self._columns}
        self.pad_info = pads
        self._where = "padded_batch" if pad_all else "batch"  # the op, in messages
        #: columns batched as :class:`RaggedArray` (rows concatenated, with offsets)
        self.ragged = frozenset(check_columns("batch", "ragged", ragged, self._columns) or ())
        both = sorted(self.ragged & set(pads))
        if both:
            raise ValueError(
                f"batch: column(s) {both} are both ragged and padded (pad_info); choose one. "
                f"Received: ragged={ragged!r}"
            )
        self._settle_kind(is_random_access(child) and self.size_fn is None)
        self.python_multiprocessing = bool(python_multiprocessing)
        self._workers()

    @classmethod
    def _random_access(cls, child: Dataset, batch_size: Any = None, *args: Any, **kwargs: Any):
        # with a callable size, where batch k starts is known only by computing the sizes
        # before it, and the count may change by epoch: such a batch is a stream
        return is_random_access(child) and not callable(batch_size)

    def work_holds_gil(self) -> bool:
        """Assembly alone (no ``per_batch_map``): copying rows whose size the source judges."""
        return self.per_batch_map is None

    def functions(self) -> tuple[Any, ...]:
        return () if self.per_batch_map is None else (self.per_batch_map,)

    def _describe_args(self) -> str:
        size = self.batch_size if self.size_fn is None else op_name(self.size_fn)
        extra = (
            "" if self.per_batch_map is None else f", per_batch_map={op_name(self.per_batch_map)}"
        )
        return f"{size}{extra}"

    def _own_batch_size(self) -> int | None:
        return self.batch_size

    @property
    def rows_per_item(self) -> int:
        return max(1, self.batch_size) * self.children[0].rows_per_item

    def _row_count(self) -> int | None:
        n = self.children[0]._row_count()
        if n is None or self.size_fn is not None:
            return None
        return n // self.batch_size if self.drop_remainder else -(-n // self.batch_size)

    # ----------------------------------------------------------------- batch boundaries
    def sizes(self, epoch: int) -> Iterator[int]:
        """The sizes of ``epoch``'s batches, in order (endless: the rows decide the end)."""
        if self.size_fn is None:
            return itertools.repeat(self.batch_size)
        return (self._size_of(k, epoch) for k in itertools.count())

    def _size_of(self, batch_num: int, epoch: int) -> int:
        try:
            size = self.size_fn(BatchInfo(batch_num, epoch))
        except Exception as exc:
            raise_in_context(
                exc,
                f"batch: the batch_size function {op_name(self.size_fn)} failed at batch "
                f"{batch_num} of epoch {epoch}",
            )
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(
                f"batch: the batch_size function {op_name(self.size_fn)} returned {size!r} "
                f"for batch {batch_num} of epoch {epoch}; it must return an int >= 1"
            )
        return int(size)

    def first_row(self, epoch: int, start: int) -> int:
        """The input row where batch ``start`` of ``epoch`` begins."""
        if self.size_fn is None:
            return start * self.batch_size
        return sum(itertools.islice(self.sizes(epoch), start))

    def groups(self, rows: Iterator[Any], epoch: int, start: int) -> Iterator[list]:
        """``rows`` (from :meth:`first_row` on) grouped into ``epoch``'s batches from batch
        ``start`` on; a last short group is dropped with ``drop_remainder``."""
        if self.size_fn is None:
            for group in chunked(rows, self.batch_size):
                if self.drop_remainder and len(group) < self.batch_size:
                    return
                yield group
            return
        for size in itertools.islice(self.sizes(epoch), start, None):  # one call per batch
            group = list(itertools.islice(rows, size))
            if not group or (self.drop_remainder and len(group) < size):
                return
            yield group

    # ----------------------------------------------------------------- assembly
    def _stack(self, k: int, values: Any, empty: Any = np.empty) -> np.ndarray | RaggedArray:
        name = self._columns[k]
        if name in self.ragged:
            rows = values if isinstance(values, np.ndarray) else [to_array(v) for v in values]
            # not the pooled buffers: a ragged batch's size differs from batch to batch
            return RaggedArray.from_rows(rows, name, "batch")
        if isinstance(values, np.ndarray) and name not in self.pad_info:
            return values  # already a batch array (per_batch_map returned one)
        arrays = [v if isinstance(v, Deferred) else to_array(v) for v in values]
        return stack_column(arrays, name, self.pad_info.get(name), self._where, empty)

    def make_batch(
        self,
        epoch: int,
        batch_num: int,
        rows: list | None,
        columns: list | None,
        empty: Any = np.empty,
    ):
        """One batch from its rows (tuples) or, when the source gathered them, its columns;
        ``empty`` allocates the batch arrays."""
        position().at(self, epoch, batch_num, self.per_batch_map)
        if columns is not None:
            inputs = [columns[j] for j in range(len(columns))]
        else:
            inputs = [[row[j] for row in rows] for j in range(len(rows[0]))]
        if self.per_batch_map is None:
            return tuple(self._stack(k, inputs[k], empty) for k in range(len(inputs)))
        args = [list(inputs[j]) for j in self._in_idx]
        try:
            result = self.per_batch_map(*args, BatchInfo(batch_num, epoch))
        except Exception as exc:
            raise_in_context(
                exc,
                f"batch: per_batch_map {op_name(self.per_batch_map)} "
                f"failed at batch {batch_num} of epoch {epoch}",
            )
        result = result if isinstance(result, tuple) else (result,)
        if len(result) != len(self.output_columns):
            raise ValueError(
                f"batch: per_batch_map returned {len(result)} column(s) but output_columns "
                f"names {len(self.output_columns)}: {self.output_columns}"
            )
        rows_in = len(inputs[0]) if inputs else 0
        for j, column in enumerate(result):
            if isinstance(column, dict):  # one value, as MindSpore keeps a dict
                continue
            sized = hasattr(column, "__len__") and getattr(column, "ndim", 1) != 0
            count = len(column) if sized else None
            if count != rows_in:  # MindSpore 2.10: a RuntimeError
                raise ValueError(
                    f"batch: per_batch_map {op_name(self.per_batch_map)} returned "
                    f"{'no sequence' if count is None else f'{count} row(s)'} for output column "
                    f"'{self.output_columns[j]}' at batch {batch_num} of epoch {epoch}; each "
                    f"column holds one value per row of the batch ({rows_in})"
                )
        return tuple(
            self._stack(k, result[j] if new else inputs[j], empty)
            for k, (new, j) in enumerate(self._sources)
        )

    def deferrable(self, chain: list[MapDataset]) -> list[bool]:
        """Which maps of a fused chain may leave their elementwise tail to the assembly: those
        whose output no later map reads, when no per_batch_map or padding needs real arrays."""
        if self.per_batch_map is not None:
            return [False] * len(chain)
        flags = []
        for k, node in enumerate(chain):
            name = node.output_columns[0]
            read_later = any(name in later.input_columns for later in chain[k + 1 :])
            padded = name in self.pad_info or name in self.ragged
            flags.append(node.can_defer() and not read_later and not padded)
        return flags

    def batch_rows(self, ctx: ExecContext, epoch: int, item: tuple[int, list]) -> tuple:
        """Task of a stream batch stage: maps fused below it, then assembly of one batch."""
        batch_num, group = item
        chain = batch_map_chain(self)[0]
        steps = list(zip(chain, self.deferrable(chain)))
        weight = ctx.op_times.weight(batch_num) if ctx.op_times is not None else 0
        rows = []
        for index, row in group:
            for node, defer in steps:  # maps fused into the batch task: no queue per row
                row = node.apply_row(ctx, epoch, index, row, defer, weight)
            rows.append(row)
        return self._assemble(ctx, epoch, batch_num, rows, weight)

    def _assemble(
        self, ctx: ExecContext, epoch: int, batch_num: int, rows: list, weight: int
    ) -> tuple:
        """:meth:`make_batch` into pooled arrays, at most ``num_parallel_workers`` at once
        when the plan limits this batch below its stage's width; timed with ``weight``."""
        slot = ctx.slots.get(id(self))
        begin = time.perf_counter()
        if slot is None:
            batch = self.make_batch(epoch, batch_num, rows, None, ctx.buffers.empty)
        else:
            with slot:
                if weight:
                    ctx.op_times.add(self, "wait", time.perf_counter() - begin, weight)
                    begin = time.perf_counter()
                batch = self.make_batch(epoch, batch_num, rows, None, ctx.buffers.empty)
        if weight:
            ctx.op_times.add(self, "assembly", time.perf_counter() - begin, weight)
        return batch
