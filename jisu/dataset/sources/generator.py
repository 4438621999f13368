"""GeneratorDataset: rows from a Python generator, iterable or random-access object."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

import numpy as np

from .. import config
from ..core.access import RandomAccess
from ..core.error_types import PipelineTypeError, PipelineValueError
from ..core.node import Dataset
from ..core.order import buffer_shuffle, shard_stream
from ..core.rng import epoch_rng
from ..core.rows import to_array, to_numpy_dtype
from ..core.validation import check_int, check_source_columns
from ..engine.context import ExecContext
from ..engine.errors import raise_in_context, with_context
from ..engine.plan import READ
from . import sampler_runs
from .batch_sampler import BatchSamplerKernels, BatchSampling, check_batch_sampling
from .options import EpochOrder, ReadOptions
from .samplers import Sampler, as_sampler
from .schema import Schema  # re-exported: jisu.dataset.Schema's old home

#: An iterable source with ``shuffle=True`` is shuffled through a buffer of this many rows,
#: fewer when rows are large: the buffer holds at most ``SHUFFLE_BUFFER_BYTES``, so that it
#: stays cache-resident (a 256 MiB buffer measured 30 % slower on the article pipeline).
#: Call ``.shuffle(buffer_size)`` explicitly for a larger buffer.
SHUFFLE_BUFFER_ROWS = 10_000
SHUFFLE_BUFFER_BYTES = 16 << 20
#: A one-shot iterator source (``zip(a, b)``, a generator object) read to its end keeps its
#: rows, up to this many bytes, so that later epochs replay them (MindSpore repeats such
#: sources too); beyond it, or when a pass stops early, a later pass is a clear error.
ONE_SHOT_REPLAY_BYTES = 1 << 30


def is_indexable(source: Any) -> bool:
    """Whether ``source`` is read by index (it has ``__getitem__`` and ``__len__``)."""
    return hasattr(source, "__getitem__") and hasattr(source, "__len__")


class _SourceKernels(RandomAccess):
    """Random access: row ``index`` of the epoch is the source's row ``epoch_order[index]``."""

    def _fetch(self, ctx: ExecContext, epoch: int, index: int) -> tuple:
        return self._read(ctx, int(self.epoch_order(ctx, epoch)[index]))


class Source(Dataset):
    """Base of jisu's sources: rows from a Python object, read as :class:`ReadOptions` say.

    Args:
        source: an object with ``__getitem__`` and ``__len__`` (read by index: random access),
            a generator function (called once per epoch) or an iterable (``iter`` once per
            epoch). Items are a tuple with one value per column (a single value when there is
            one column) or a dict by column name; values are NumPy arrays or anything
            ``np.asarray`` accepts (torch tensors too).
        column_names: names of the columns.
        options: how an epoch reads the rows (shuffle, shards, samplers, workers).
        column_types: NumPy/torch dtypes the columns are cast to (None: as read).

    A source read by index is random access (a :class:`RandomAccess` node) unless reading a row
    can fail in error samples mode "skip"; see :class:`GeneratorDataset` for errors.
    Subclasses (the data set formats) pass an object that reads their files by index and
    their MindSpore arguments gathered in one :class:`ReadOptions`.
    """

    random_access_kernels = _SourceKernels
    has_workers = True
    default_workers = 1  # MindSpore's default: one reader
    #: reads of this source may not be thread-safe: one at a time unless
    #: ``num_parallel_workers`` says otherwise
    serial_reads = True
    #: whether reading a row can fail (in "skip" mode such rows are left out); in-memory
    #: sources say False and stay random-access in "skip" mode
    reads_can_fail = True
    #: whether the source is made of files, so the :class:`Shuffle` levels apply
    file_shuffle = False
    #: whether the class builds, from its arguments, an object read by index (files, arrays)
    builds_indexed_source = False

    @classmethod
    def _random_access(cls, source: Any = None, *args: Any, **kwargs: Any) -> bool:
        """Read by index, unless a row that fails to read would vanish ("skip" mode)."""
        indexed = cls.builds_indexed_source or is_indexable(source)
        return indexed and not cls._drops_failed_reads()

    @classmethod
    def _drops_failed_reads(cls) -> bool:
        return cls.reads_can_fail and config.get_error_samples_mode() == "skip"

    def __init__(
        self,
        source: Any,
        column_names: str | Sequence[str] | None,
        options: ReadOptions | None = None,
        column_types: Sequence[Any] | None = None,
    ) -> None:
        options = options or ReadOptions()
        op = self.op_name
        check_int(op, "num_parallel_workers", options.num_parallel_workers, 1, allow_none=True)
        super().__init__((), options.num_parallel_workers)
        column_names = check_source_columns(op, column_names)
        self._columns = tuple(column_names)
        if column_types is not None:
            if len(column_types) != len(column_names):
                raise ValueError(
                    f"{op}: column_types has {len(column_types)} entries for "
                    f"{len(column_names)} columns. Received: column_types={column_types!r}"
                )
            column_types = [None if t is None else to_numpy_dtype(t) for t in column_types]
        self.column_types = column_types
        self.source = source
        self.indexed = is_indexable(source)  # read by index, else iterated
        if not self.indexed and not callable(source) and not hasattr(source, "__iter__"):
            raise PipelineTypeError(  # MindSpore: a RuntimeError when it is read
                f"{op}: source must be a generator function, an iterable, or an object with "
                f"__getitem__ and __len__. Received: {type(source).__name__}"
            )
        self.order = options.resolve(op, indexed=self.indexed, files=self.file_shuffle)
        self._check_sampler(self.order.sampler)
        self.python_multiprocessing = bool(options.python_multiprocessing)
        # In "skip" mode a row that fails to read vanishes: rows can no longer be found by
        # index, so parents see a stream (read by index in the source's own stage)
        self.skip_errors = self.indexed and self._drops_failed_reads()
        if self.indexed and self._source_len() > 0:
            self._check_first_row()
        self._settle_kind(self.indexed and not self.skip_errors)

    # ----------------------------------------------------------------- rows
    def _row(self, item: Any, where: str) -> tuple:
        """One source item as a tuple of arrays, checked against ``column_names``."""
        ncols = len(self._columns)
        if isinstance(item, tuple) or (isinstance(item, list) and ncols > 1):
            values = item
        elif isinstance(item, dict):  # by column name (MindSpore 2.10 keeps the dict whole)
            missing = [c for c in self._columns if c not in item]
            if missing:
                raise PipelineValueError(
                    f"{self.op_name}: the source yielded a dict at {where} without the "
                    f"column(s) {missing}; its keys: {list(item)[:10]}. A dict row is read by "
                    f"column name: give it every name in column_names {list(self._columns)}"
                )
            values = tuple(item[c] for c in self._columns)
        else:
            values = (item,)
        if len(values) != ncols:  # MindSpore: a RuntimeError while the pipeline runs
            raise PipelineValueError(
                f"{self.op_name}: the source yielded {len(values)} value(s) at {where} but "
                f"column_names has {ncols}: {list(self._columns)}. Make them match."
            )
        row = tuple(self._column_value(v, c, where) for v, c in zip(values, self._columns))
        if self.column_types is not None:
            row = tuple(
                v if t is None or v.dtype == t else v.astype(t)
                for v, t in zip(row, self.column_types)
            )
        return row

    def _column_value(self, value: Any, column: str, where: str) -> np.ndarray:
        """``value`` as the array of ``column``, refusing what MindSpore 2.10 refuses with a
        RuntimeError: None, a ragged list, a set or another object that is no number, string
        or array, and any NumPy array of dtype object (a ragged array, an array of sets); a
        dict stays one value, as MindSpore keeps it."""
        try:
            array = to_array(value)
        except ValueError as exc:  # a ragged list
            raise PipelineValueError(
                f"{self.op_name}: the source yielded a value for column '{column}' at {where} "
                f"that is no array (a ragged list?): {exc}"
            ) from exc
        if array.dtype == object and not isinstance(value, dict):
            kind = (
                "a NumPy array of dtype object"
                if isinstance(value, np.ndarray)
                else type(value).__name__
            )
            raise PipelineTypeError(
                f"{self.op_name}: the source yielded {kind} for column "
                f"'{column}' at {where}; a column holds numbers, strings, bytes or arrays "
                f"(NumPy or torch) of them. Received: {value!r:.80}"
            )
        return array

    def _source_len(self) -> int:
        return len(self.source)

    def _check_first_row(self) -> None:
        """Read row 0 so that column_names that do not match the items fail when the pipeline
        is built, not mid-epoch. In "skip" mode a row 0 that fails to read is left to the
        iteration, which skips it."""
        try:
            item = self.source[0]
        except Exception as exc:
            if self.skip_errors:
                return
            raise_in_context(exc, f"{self.op_name}: reading {self._sample_name(0)} failed")
        self._row(item, "index 0")

    def _sample_name(self, index: int) -> str:
        """How errors name row ``index`` of the source (subclasses add the file it is in)."""
        return f"source[{index}]"

    def _read(self, ctx: ExecContext, index: int) -> tuple:
        """Row ``index`` of the random-access source; at most ``num_parallel_workers`` reads
        at once (one for a Python source by default) when the plan limits them."""
        slot = ctx.slots.get(id(self))
        try:
            if slot is not None:
                begin = time.perf_counter()
                with slot:
                    weight = ctx.op_times.weight(index) if ctx.op_times is not None else 0
                    if weight:
                        ctx.op_times.add(self, "wait", time.perf_counter() - begin, weight)
                    item = self.source[index]
            else:
                item = self.source[index]
        except Exception as exc:
            raise_in_context(exc, f"{self.op_name}: reading {self._sample_name(index)} failed")
        return self._row(item, f"index {index}")

    # ----------------------------------------------------------------- random access
    def epoch_order(self, ctx: ExecContext, epoch: int) -> np.ndarray:
        """Source indices read in ``epoch``, in order (after sampler, shuffle, shards; a
        user's sampler draws its epochs in turn, reset after each: :mod:`.sampler_runs`)."""
        return sampler_runs.epoch_order(self, ctx, epoch)

    def _order(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """One epoch's order (sources made of files pass their files' rows here)."""
        return self.order.indices(n, rng, labels=self._sampler_labels())

    # ----------------------------------------------------------------- samplers
    def class_labels(self, column: str) -> np.ndarray | None:
        """Each row's class in label column ``column``, when the source knows them without
        reading its rows (for :class:`PKSampler`); None otherwise."""
        return None

    def _sampler_labels(self, sampler: Sampler | None = None) -> np.ndarray | None:
        """The class labels the sampler (this source's, by default) reads, or None."""
        sampler = sampler or self.order.sampler
        if sampler is None or not sampler.uses_labels:
            return None
        chain = sampler
        while not chain.needs_labels:
            chain = chain.child
        return self.class_labels(chain.class_column)

    def _check_sampler(self, sampler: Sampler | None) -> None:
        if sampler is not None and sampler.uses_labels and self._sampler_labels(sampler) is None:
            raise ValueError(
                f"{self.op_name} doesn't support PKSampler: it needs a source that knows its "
                "rows' classes (MnistDataset, Cifar10Dataset, ImageFolderDataset …) and a "
                "class_column it has"
            )

    def use_sampler(self, new_sampler: Any) -> None:
        """Read this source through ``new_sampler`` from now on (MindSpore's
        ``use_sampler``): it replaces the shuffle, shards and ``num_samples`` given when the
        source was built; call it before creating iterators."""
        if not self.indexed:
            raise ValueError(
                f"{self.op_name}: use_sampler needs a random-access source; this one is iterable"
            )
        order = EpochOrder(sampler=as_sampler(new_sampler))
        self._check_sampler(order.sampler)
        self.order = order

    def add_sampler(self, new_sampler: Any) -> None:
        """MindSpore's ``add_sampler``: from now on ``new_sampler`` picks positions in what
        this source read so far (its sampler, or its shuffle, shards and ``num_samples``);
        call it before creating iterators."""
        from .sampler_chain import chained

        self.use_sampler(chained(self.op_name, self.order, new_sampler))

    @property
    def shards(self) -> tuple[int, int] | None:
        """``(num_shards, shard_id)`` read here (own or a DistributedSampler's), else None."""
        sampler = self.order.sampler
        own = getattr(sampler, "num_shards", None) and (sampler.num_shards, sampler.shard_id)
        return self.order.shards or own or None

    @property
    def stream_stage(self) -> str | None:  # type: ignore[override]
        """A random-access source seen as a stream ("skip" mode) reads in a stage of its own;
        an iterable one runs inline on the thread that pulls it."""
        return READ if self.indexed else None

    def _row_count(self) -> int | None:
        if self.indexed:
            return self.order.count(self._source_len(), self._sampler_labels())
        if hasattr(self.source, "__len__"):  # an iterable that knows its length
            return self.order.count(len(self.source))
        return None

    def fetch_rows(self, ctx: ExecContext, epoch: int, indices: list[int]) -> list[tuple]:
        """Task reading rows ``indices`` (positions in ``epoch``'s order). In "skip" mode a
        row that fails to read is left out and counted."""
        order = self.epoch_order(ctx, epoch)  # once per task, not once per row
        if not self.skip_errors:
            return [self._read(ctx, int(order[i])) for i in indices]
        rows = []
        for i in indices:
            index = int(order[i])
            try:
                rows.append(self._read(ctx, index))
            except Exception as exc:
                where = f"{self.op_name}: reading {self._sample_name(index)} failed"
                ctx.note_skip(str(with_context(exc, where)), epoch, self)
        return rows

    # ----------------------------------------------------------------- iterable
    def _iterate(self) -> Iterator[tuple]:
        source = self.source
        try:
            items = source() if callable(source) and not hasattr(source, "__iter__") else source
            iterator = iter(items)
        except Exception as exc:
            raise_in_context(exc, f"{self.op_name}: starting the source failed")
        record: list[tuple] | None = None
        if iterator is source:  # a one-shot iterator (zip, map, a generator object …)
            replay = getattr(self, "_replay", None)
            if replay is not None:  # read to its end once: every later pass replays it
                yield from replay
                return
            if getattr(self, "_one_shot_started", False):
                raise ValueError(
                    f"{self.op_name}: the source is a one-shot iterator "
                    f"({type(items).__name__}) that an earlier pass already consumed (it was "
                    f"not read to its end, or its rows exceed {ONE_SHOT_REPLAY_BYTES >> 20} "
                    "MiB, so they were not kept for replay). Pass a list, a generator "
                    "function or a function returning a fresh iterator (lambda: zip(a, b))"
                )
            self._one_shot_started = True
            record, kept = [], 0
        index = 0
        while True:
            try:
                item = next(iterator)
            except StopIteration:
                if record is not None:
                    self._replay = record
                return
            except Exception as exc:
                raise_in_context(exc, f"{self.op_name}: the source raised at row {index}")
            row = self._row(item, f"row {index}")
            if record is not None:
                kept += sum(v.nbytes for v in row)
                record = record if kept <= ONE_SHOT_REPLAY_BYTES else None
                if record is not None:
                    record.append(row)
            yield row
            index += 1

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        rows: Iterator[tuple] = self._iterate()
        order = self.order
        if order.shuffle is not None:
            rows = self._shuffled(rows, epoch_rng(ctx.seed, epoch, ctx.node_id(self)))
        if order.shards is not None:
            rows = shard_stream(rows, *order.shards)
        if order.num_samples is not None:
            rows = islice(rows, order.num_samples)
        yield from islice(rows, start, None)  # a stream restores its position by replaying

    @staticmethod
    def _shuffled(rows: Iterator[tuple], rng: np.random.Generator) -> Iterator[tuple]:
        first = next(rows, None)
        if first is None:
            return
        row_bytes = max(1, sum(v.nbytes for v in first))
        size = max(2, min(SHUFFLE_BUFFER_ROWS, SHUFFLE_BUFFER_BYTES // row_bytes))

        def all_rows() -> Iterator[tuple]:
            yield first
            yield from rows

        yield from buffer_shuffle(all_rows(), size, rng)


class GeneratorDataset(Source):
    """Rows from Python: a generator function, an iterable, or a random-access object.

    Args:
        source: a generator function (called once per epoch), an iterable (``iter`` is called
            once per epoch), or an object with ``__getitem__`` and ``__len__``. Items are a
            tuple with one value per column (a single value when there is one column); values
            are NumPy arrays or anything ``np.asarray`` accepts (torch tensors too).
        column_names: names of the columns (or take them from ``schema``).
        column_types: NumPy/torch dtypes the columns are cast to.
        schema: a :class:`Schema` giving names and types.
        num_samples: read at most this many rows per epoch (per shard).
        num_parallel_workers: threads reading a random-access source. With 1 (the default),
            ``__getitem__`` is never called concurrently, although later maps fused with the
            read still run in parallel; with more, ``__getitem__`` must be thread-safe.
        shuffle: random-access: a new permutation each epoch (default True); iterable: a seeded
            buffer shuffle (default False).
        sampler: a :mod:`~jisu.dataset.sources.samplers` sampler or an iterable of indices
            (random-access sources only; not with ``shuffle`` or shards).
        num_shards / shard_id: read one of ``num_shards`` equal shards (short shards wrap
            around); default from ``torch.distributed`` when it is initialized.
        python_multiprocessing: read a random-access source in worker processes, together with
            the maps fused with the read (an iterable source always runs in this process, on
            its own thread; later maps can still use processes).
        max_rowsize: accepted for MindSpore compatibility; jisu sizes its shared memory itself.
        batch_sampler: an iterable giving, each epoch, lists of source indices (a list of
            lists, a torch ``BatchSampler``); each list is one batch, its columns stacked or
            merged by ``collate_fn(*columns)`` (a list of values per column; it returns a tuple
            with one value per column). Not with ``num_samples``, ``shuffle``, ``sampler`` or
            shards; see :mod:`.batch_sampler`.
        collate_fn: merges a batch's rows (only with ``batch_sampler``).

    Errors: when ``source[i]`` raises, iteration fails with an error naming the source and
    ``i`` (and the file, for sources that know it), of the original type and catchable as
    ``RuntimeError``, with the original as its cause. In error samples mode "skip"
    (``config.set_error_samples_mode``, read when the pipeline is built) such a row is left
    out and counted in the iterator's ``skipped_samples`` instead; rows can then no longer be
    found by index, so the source is read in a stage of its own and the ops above it run as
    a stream. An iterable source that raises cannot be resumed: that stays an error in both
    modes.
    """

    def __init__(
        self,
        source: Any,
        column_names: str | Sequence[str] | None = None,
        column_types: Sequence[Any] | None = None,
        schema: Schema | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        python_multiprocessing: bool = False,
        max_rowsize: int | None = None,
        batch_sampler: Any = None,
        collate_fn: Any = None,
    ) -> None:
        others = dict(num_samples=num_samples, shuffle=shuffle, sampler=sampler)
        others.update(num_shards=num_shards, shard_id=shard_id)
        check_batch_sampling(self.op_name, source, batch_sampler, collate_fn, others)
        if batch_sampler is not None:  # rows in the batch sampler's order, never sharded
            self.batches = BatchSampling(self.op_name, batch_sampler, collate_fn)
            shuffle, num_shards, shard_id = False, 1, 0
        if schema is not None:
            if not isinstance(schema, Schema):
                raise TypeError(
                    f"{self.op_name}: schema must be a jisu Schema. Received: {schema!r}"
                )
            column_names = column_names or schema.column_names
            column_types = column_types or schema.column_types
        options = ReadOptions(
            num_samples,
            num_parallel_workers,
            shuffle,
            sampler,
            num_shards,
            shard_id,
            python_multiprocessing,
            list_num_samples=True,
        )
        super().__init__(source, column_names, options, column_types)

    def __new__(cls, *args: Any, **kwargs: Any) -> Dataset:
        batch_sampler = args[12] if len(args) > 12 else kwargs.get("batch_sampler")
        if cls is GeneratorDataset and batch_sampler is not None:
            return super().__new__(cls.BatchSampled)  # no arguments: the class is kept
        return super().__new__(cls, *args, **kwargs)


# A GeneratorDataset with a batch_sampler: its rows are the batches (found by pickle by name)
GeneratorDataset.BatchSampled = type(  # type: ignore[attr-defined]
    "GeneratorDataset",
    (BatchSamplerKernels, GeneratorDataset),
    {"__module__": __name__, "__qualname__": "GeneratorDataset.BatchSampled"},
)
