"""Dataset: the lazy, immutable description of a pipeline, and its fluent methods.

A :class:`Dataset` is a node in a DAG. Methods such as :meth:`map` or :meth:`batch` return new
nodes; nothing runs until an iterator is created. A node is of one of two kinds, by type (as
grain separates ``MapDataset`` from ``IterDataset``):

* a **stream** computes the rows of one epoch in order: ``_stream_rows(ctx, epoch, start)`` for
  a node that runs inline, or the kernels of the stage it declares in ``stream_stage`` (see
  ``engine/plan.py``);
* a :class:`RandomAccess` node computes row ``index`` of an epoch independently of all other
  rows: ``_fetch(ctx, epoch, index)``, and ``_fetch_columns`` for a node that can gather a whole
  batch at once (NumPy arrays). A chain of them (source, shuffle, map, batch, ...) runs as one
  fused task per output row (or batch) on a worker pool, with sources read in parallel by index.

An op that can be either (a map is random access when its child is) declares its random-access
kernels as a :class:`RandomAccess` subclass in ``random_access_kernels``; its class then has an
``Indexed`` variant (the kernels mixed in), which is built instead when the node's inputs allow
(:meth:`Dataset._random_access`, checked by :meth:`Dataset._settle_kind`). Iterable sources
(generators) and row-dropping ops (filter, a map in "skip" error mode) are streams: after them
the per-row work (maps, batch assembly) is still done in parallel, in order.

Every random decision is drawn from an RNG keyed by (seed, epoch, row index, op), where the row
index is the row's position in the op's input for that epoch; so a seed gives the same output
whatever the number of workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from . import config
from .engine.access import RandomAccess, is_random_access
from .engine.context import ExecContext
from .engine.stage_runs import run_stream
from .validation import resolve_workers

if TYPE_CHECKING:
    from .engine.iterator import DatasetIterator


class Dataset:
    """Base of every pipeline node. See the module docstring for the engine contract."""

    #: the op's random-access kernels (a :class:`RandomAccess` subclass), None for an op that
    #: is always a stream; a class with kernels gets an ``Indexed`` variant
    random_access_kernels: ClassVar[type[RandomAccess] | None] = None
    #: the random-access variant of this class (built from ``random_access_kernels``)
    Indexed: ClassVar[type[Dataset]]
    #: whether the node does parallel work of its own (and takes ``num_parallel_workers``)
    has_workers: bool = False
    #: workers when ``num_parallel_workers`` is None (None: ``config``'s default)
    default_workers: int | None = None
    #: the kind of stage the node runs as a stream (see ``engine/plan.py``), None: inline
    stream_stage: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kernels = cls.random_access_kernels
        if kernels is None or issubclass(cls, RandomAccess):
            return
        # same name as the op (errors and labels use it); found by pickle as ``<op>.Indexed``
        cls.Indexed = type(
            cls.__name__,
            (kernels, cls),
            {
                "__module__": cls.__module__,
                "__qualname__": f"{cls.__qualname__}.Indexed",
                "__doc__": cls.__doc__,
            },
        )

    def __new__(cls, *args: Any, **kwargs: Any) -> Dataset:
        # The kind is chosen here, before ``__init__`` sets any attribute: an object whose
        # class is changed afterwards loses CPython's fast attribute layout (measured 2x
        # slower attribute reads), and the per-row kernels read many attributes.
        if (
            cls.random_access_kernels is not None
            and not issubclass(cls, RandomAccess)
            and (args or kwargs)
            and cls._random_access(*args, **kwargs)
        ):
            cls = cls.Indexed
        return super().__new__(cls)

    @classmethod
    def _random_access(cls, *args: Any, **kwargs: Any) -> bool:
        """Whether a node built with these arguments is random access. By default: when its
        inputs (the first argument, a dataset or a list of datasets) all are."""
        inputs = args[0] if args else kwargs.get("child", kwargs.get("datasets"))
        if isinstance(inputs, (list, tuple)):
            return bool(inputs) and all(is_random_access(d) for d in inputs)
        return is_random_access(inputs)

    def _settle_kind(self, random_access: bool) -> None:
        """End of ``__init__``: the node's kind, now known for sure. It is normally the class
        :meth:`_random_access` chose; if that guess was wrong (a user's subclass of a source
        with other arguments), the class is corrected here (right, only slower)."""
        if random_access != isinstance(self, RandomAccess):
            kind = type(self).Indexed if random_access else type(self).__bases__[-1]
            self.__class__ = kind

    @property
    def rows_per_item(self) -> int:
        """Source rows behind one output row (a batch's size; 1 for row ops)."""
        return 1

    def __init__(self, children: Sequence[Dataset] = (), num_parallel_workers: int | None = None):
        self.children: tuple[Dataset, ...] = tuple(children)
        self.num_parallel_workers = num_parallel_workers
        self._columns: tuple[str, ...] = ()
        self._size_cache: int | None = None
        self._output_spec: tuple[list, list] | None = None

    # ----------------------------------------------------------------- engine contract
    @property
    def op_name(self) -> str:
        return type(self).__name__

    def _row_count(self) -> int | None:
        """Rows per epoch when known without running the pipeline; None otherwise."""
        raise NotImplementedError  # every node class defines it

    def _workers(self) -> int:
        """Threads for this node's own parallel work."""
        default = self.default_workers or config.get_num_parallel_workers()
        return resolve_workers(self.op_name, self.num_parallel_workers, default)

    def _stream(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        """Rows of one epoch from row ``start`` on (run as the plan says)."""
        return run_stream(ctx, self, epoch, start)

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        """Rows of one epoch, for a node that runs inline as a stream (shuffle, repeat …)."""
        raise NotImplementedError  # every node that can run inline defines it

    # ----------------------------------------------------------------- introspection
    def get_col_names(self) -> list[str]:
        """Names of the output columns."""
        return list(self._columns)

    def get_dataset_size(self) -> int:
        """Rows (batches, after ``batch``) per epoch. Runs the pipeline once if it must count."""
        size = self._row_count()
        if size is not None:
            return size
        if self._size_cache is None:
            iterator = self.create_tuple_iterator(num_epochs=1, output_numpy=True)
            count = 0
            try:
                for _ in iterator:
                    count += 1
            finally:
                iterator.close()
            self._size_cache = count
        return self._size_cache

    def _spec(self) -> tuple[list, list]:
        if self._output_spec is None:
            iterator = self.create_tuple_iterator(num_epochs=1, output_numpy=True)
            try:
                row = next(iterator)
            except StopIteration:
                raise ValueError(
                    f"{self.op_name}: the dataset is empty; it has no shapes"
                ) from None
            finally:
                iterator.close()
            self._output_spec = ([list(a.shape) for a in row], [a.dtype for a in row])
        return self._output_spec

    def output_shapes(self, estimate: bool = False) -> list[list[int | None]]:
        """Shape of each output column, from the first row (MindSpore semantics); with
        ``estimate``, from every row of an epoch, a dimension that varies given as None."""
        if not estimate:
            return [list(s) for s in self._spec()[0]]
        shapes: list[list[int | None]] | None = None
        iterator = self.create_tuple_iterator(num_epochs=1, output_numpy=True)
        try:
            for row in iterator:
                if shapes is None:
                    shapes = [list(a.shape) for a in row]
                    continue
                for k, a in enumerate(row):
                    if a.ndim != len(shapes[k]):
                        raise ValueError(
                            f"output_shapes: column '{self._columns[k]}' changes rank "
                            f"({len(shapes[k])} then {a.ndim}); it has no one shape"
                        )
                    shapes[k] = [d if d == e else None for d, e in zip(shapes[k], a.shape)]
        finally:
            iterator.close()
        if shapes is None:
            raise ValueError(f"{self.op_name}: the dataset is empty; it has no shapes")
        return shapes

    def output_types(self) -> list[np.dtype]:
        """NumPy dtype of each output column, from the first row."""
        return list(self._spec()[1])

    def explain(self) -> str:
        """How this pipeline runs, as text: its parallel stages in data order, the ops each
        runs (a function by its name), their workers (threads or processes), the ops limited
        below their stage's width, and the fusion rule behind each stage (as Spark's or
        Polars' ``explain``)."""
        from .engine.plan import plan

        return plan(self).explain()

    def get_batch_size(self) -> int:
        """The batch size of the nearest ``batch`` below (1 if none; -1 for a callable batch
        size, as in MindSpore)."""
        from .ops.batch import BatchDataset

        node: Dataset = self
        while True:
            if isinstance(node, BatchDataset):
                return node.batch_size
            if len(node.children) != 1:
                return 1
            node = node.children[0]

    def get_class_indexing(self) -> dict:
        """The class-name-to-label mapping of the source below (``{}`` when it has none)."""
        node: Dataset = self
        while len(node.children) == 1:
            node = node.children[0]
        own = type(node).get_class_indexing
        return (
            {} if node is self or own is Dataset.get_class_indexing else node.get_class_indexing()
        )

    def num_classes(self) -> int | None:
        """How many classes the source below has (None when it does not say)."""
        indexing = self.get_class_indexing()
        return len(indexing) if indexing else None

    def reset(self) -> None:
        """MindSpore's ``reset``: nothing to do in jisu, where a dataset is a description and
        every iterator starts from its own beginning (or from ``set_state``)."""

    def get_repeat_count(self) -> int:
        """The count of the nearest ``repeat`` below (1 if none, -1 if infinite)."""
        from .ops.repeat import RepeatDataset

        node: Dataset = self
        while True:
            if isinstance(node, RepeatDataset):
                return node.count
            if len(node.children) != 1:
                return 1
            node = node.children[0]

    # ----------------------------------------------------------------- pipeline ops
    def map(
        self,
        operations: Callable | Sequence[Callable],
        input_columns: str | Sequence[str] | None = None,
        output_columns: str | Sequence[str] | None = None,
        num_parallel_workers: int | None = None,
        python_multiprocessing: bool = False,
        offload: bool = False,
        column_order: Sequence[str] | None = None,
    ) -> Dataset:
        """Apply ``operations`` (one or a list, applied in order) to ``input_columns`` of each row.

        Args:
            operations: jisu ops or any Python callables taking the input columns as positional
                NumPy arrays and returning one array or a tuple of arrays.
            input_columns: columns passed to the first op (default: the first column).
            output_columns: names of what the last op returns (default: ``input_columns``).
                With as many outputs as inputs, outputs replace the inputs in place; otherwise
                they come first, followed by the untouched columns (as in MindSpore).
            num_parallel_workers: threads for this map (default: ``config``'s, clamped to CPUs).
            python_multiprocessing: run in worker processes (see ``MapDataset``).
            offload: leave the tail of Rescale/Normalize/HWC2CHW/TypeCast ops to the device
                (see :meth:`offload_module`); the pipeline then ships the data before them.
            column_order: the columns to keep after the map, in order (MindSpore 1.x's
                argument, which 2.x dropped: the same as ``.project(column_order)``).
        """
        from .ops.map import MapDataset

        mapped = MapDataset(
            self,
            operations,
            input_columns,
            output_columns,
            num_parallel_workers,
            python_multiprocessing,
            offload,
        )
        return mapped if column_order is None else mapped.project(column_order)

    def batch(
        self,
        batch_size: int | Callable[[Any], int],
        drop_remainder: bool = False,
        num_parallel_workers: int | None = None,
        per_batch_map: Callable | None = None,
        input_columns: str | Sequence[str] | None = None,
        output_columns: str | Sequence[str] | None = None,
        pad_info: dict | None = None,
        python_multiprocessing: bool = False,
    ) -> Dataset:
        """Group ``batch_size`` consecutive rows into one, each column stacked on a new axis 0.

        ``batch_size`` may be a function of a :class:`BatchInfo` (``get_batch_num()``,
        ``get_epoch_num()``) returning each batch's size, as in MindSpore; the batch then runs
        as a stream (batch ``k`` starts where the sizes before it end).

        ``per_batch_map(col_1, ..., col_n, batch_info)`` receives, for each of
        ``input_columns``, the list of the batch's arrays and returns a tuple of such lists
        (named ``output_columns``), which are then stacked. ``pad_info`` maps a column to
        ``(shape, pad_value)`` to pad ragged rows (None shape: to the largest in the batch).
        """
        from .ops.batch import BatchDataset

        return BatchDataset(
            self,
            batch_size,
            drop_remainder,
            num_parallel_workers,
            per_batch_map,
            input_columns,
            output_columns,
            pad_info,
            python_multiprocessing,
        )

    def padded_batch(
        self,
        batch_size: int,
        drop_remainder: bool = False,
        num_parallel_workers: int | None = None,
        pad_info: dict | None = None,
    ) -> Dataset:
        """Batch and pad ragged rows; without ``pad_info`` every column is padded with 0."""
        from .ops.batch import BatchDataset

        return BatchDataset(
            self, batch_size, drop_remainder, num_parallel_workers, pad_info=pad_info, pad_all=True
        )

    def bucket_batch_by_length(
        self,
        column_names: str | Sequence[str],
        bucket_boundaries: Sequence[int],
        bucket_batch_sizes: Sequence[int],
        element_length_function: Callable | None = None,
        pad_info: dict | None = None,
        pad_to_bucket_boundary: bool = False,
        drop_remainder: bool = False,
    ) -> Dataset:
        """Batches of rows of similar length, padded (MindSpore's semantics): a row's length
        (the first dimension of its one column in ``column_names``, or
        ``element_length_function(*columns)``) picks a bucket between ``bucket_boundaries``;
        a bucket that holds its ``bucket_batch_sizes`` entry is emitted as a batch, and the
        partial buckets follow at the end of the epoch (unless ``drop_remainder``). See
        ``jisu/dataset/ops/bucket_batch.py`` for padding."""
        from .ops.bucket_batch import BucketBatchByLengthDataset

        return BucketBatchByLengthDataset(
            self,
            column_names,
            bucket_boundaries,
            bucket_batch_sizes,
            element_length_function,
            pad_info,
            pad_to_bucket_boundary,
            drop_remainder,
        )

    def sync_wait(
        self, condition_name: str, num_batch: int = 1, callback: Callable | None = None
    ) -> Dataset:
        """A point where rows wait for the training loop (MindSpore's ``sync_wait``): they
        pass ``num_batch`` batches at a time (a ``batch`` above sets the rows per batch);
        :meth:`sync_update` runs ``callback(data)`` and lets the next batches through. See
        ``jisu/dataset/ops/sync_wait.py``."""
        from .ops.sync_wait import SyncWaitDataset

        return SyncWaitDataset(self, condition_name, num_batch, callback)

    def sync_update(self, condition_name: str, num_batch: int | None = None, data: Any = None):
        """Release the ``sync_wait`` point ``condition_name`` below: its callback gets ``data``,
        then ``num_batch`` more batches pass (default: the point's own ``num_batch``)."""
        from .ops.sync_wait import find_sync

        point = find_sync(self, condition_name)
        if point is None:
            raise ValueError(
                f"sync_update: no sync_wait point named '{condition_name}' in this pipeline"
            )
        point.update(num_batch, data)

    def device_que(self, *args: Any, **kwargs: Any) -> Any:
        """Not provided: MindSpore's ``device_que`` feeds its sink mode; in jisu,
        ``Model.train(..., dataset_sink_mode=True)`` keeps the batches on the device itself."""
        raise NotImplementedError(
            "device_que: jisu's Model.train(..., dataset_sink_mode=True) feeds the device "
            "itself; iterate the dataset (or pass it to Model) instead"
        )

    def shuffle(self, buffer_size: int) -> Dataset:
        """Shuffle rows, differently each epoch.

        On a random-access input this is a full uniform permutation of the epoch (the ideal a
        buffer of any size approximates); on a stream it is a seeded buffer shuffle.
        """
        from .ops.shuffle import ShuffleDataset

        return ShuffleDataset(self, buffer_size)

    def repeat(self, count: int | None = None) -> Dataset:
        """Repeat the dataset ``count`` times (None or -1: forever). Each repeat is a new epoch
        for everything below it (new shuffle order, new random draws)."""
        from .ops.repeat import RepeatDataset

        return RepeatDataset(self, count)

    def shard(self, num_shards: int, shard_id: int) -> Dataset:
        """Keep every ``num_shards``-th row starting at ``shard_id``; short shards wrap around
        to the first rows so every shard has the same count."""
        from .ops.shard import ShardDataset

        return ShardDataset(self, num_shards, shard_id)

    def take(self, count: int = -1) -> Dataset:
        """The first ``count`` rows (-1: all)."""
        from .ops.take_skip import TakeDataset

        return TakeDataset(self, count)

    def skip(self, count: int) -> Dataset:
        """All but the first ``count`` rows."""
        from .ops.take_skip import SkipDataset

        return SkipDataset(self, count)

    def split(self, sizes: Sequence[int | float], randomize: bool = True) -> list[Dataset]:
        """Disjoint parts: ``sizes`` as row counts summing to the dataset's size, or as
        fractions summing to 1 (each rounded; the rounding error goes to the first part, as in
        MindSpore). ``randomize``: rows assigned at random (drawn once from the seed: the
        parts are the same in every epoch), else consecutive. Split a source (or maps over
        it) before shuffling or sharding it: the split is then made on the source's indices
        and each part still shuffles within itself every epoch."""
        from .ops.split import split_dataset

        return split_dataset(self, sizes, randomize)

    def project(self, columns: str | Sequence[str]) -> Dataset:
        """Keep only ``columns``, in that order."""
        from .ops.columns import ProjectDataset

        return ProjectDataset(self, columns)

    def rename(self, input_columns: str | Sequence[str], output_columns: str | Sequence[str]):
        """Rename ``input_columns`` to ``output_columns``."""
        from .ops.columns import RenameDataset

        return RenameDataset(self, input_columns, output_columns)

    def zip(self, datasets: Dataset | Sequence[Dataset]) -> Dataset:
        """Rows side by side with those of ``datasets`` (stops at the shortest)."""
        from .ops.zip import ZipDataset

        others = [datasets] if isinstance(datasets, Dataset) else list(datasets)
        return ZipDataset([self, *others])

    def concat(self, datasets: Dataset | Sequence[Dataset]) -> Dataset:
        """Rows of this dataset followed by those of ``datasets`` (same columns)."""
        from .ops.concat import ConcatDataset

        others = [datasets] if isinstance(datasets, Dataset) else list(datasets)
        return ConcatDataset([self, *others])

    def __add__(self, other: Dataset) -> Dataset:
        return self.concat(other)

    def filter(
        self,
        predicate: Callable[..., Any],
        input_columns: str | Sequence[str] | None = None,
        num_parallel_workers: int | None = None,
    ) -> Dataset:
        """Keep the rows for which ``predicate(*input_columns)`` is true."""
        from .ops.filter import FilterDataset

        return FilterDataset(self, predicate, input_columns, num_parallel_workers)

    def offload_module(self) -> Any:
        """A ``torch.nn.Module`` applying the ops that maps left to the device (``offload``).

        Move it to the accelerator and call it on each batch (a dict or the list of columns).
        """
        from .offload import offload_module

        return offload_module(self)

    def save(
        self,
        file_name: str,
        num_files: int = 1,
        overwrite: bool = False,
        storage_options: dict | None = None,
    ) -> dict:
        """Write one epoch of this pipeline's output as a jisu record data set.

        The schema comes from the first row (dtypes and shapes kept; strings as ``string``).
        Nothing is visible until every row is written; returns rows, bytes and seconds.
        ``file_name`` may be a URL (``s3://bucket/train.rec``, any fsspec URL), with the
        filesystem's options in ``storage_options`` (see :class:`FileWriter`).
        """
        from .record.convert import write_dataset

        return write_dataset(self, file_name, num_files, overwrite, storage_options=storage_options)

    # ----------------------------------------------------------------- iteration
    def create_tuple_iterator(
        self,
        columns: Sequence[str] | None = None,
        num_epochs: int = -1,
        output_numpy: bool = False,
        do_copy: bool = True,
    ) -> DatasetIterator:
        """An iterator over rows as lists of tensors (or NumPy arrays).

        The iterator ends (``StopIteration``) at the end of each epoch; iterating it again
        continues with the next epoch, up to ``num_epochs`` (-1: no limit). Workers keep
        preparing the next epoch meanwhile. Close it (or let it be garbage-collected) to stop
        its threads.
        """
        from .engine.iterator import DatasetIterator

        return DatasetIterator(self, columns, num_epochs, output_numpy, as_dict=False)

    def create_dict_iterator(
        self, num_epochs: int = -1, output_numpy: bool = False, do_copy: bool = True
    ) -> DatasetIterator:
        """Like :meth:`create_tuple_iterator`, with rows as ``{column: value}`` dicts."""
        from .engine.iterator import DatasetIterator

        return DatasetIterator(self, None, num_epochs, output_numpy, as_dict=True)

    def __iter__(self) -> Iterator[list]:
        return self.create_tuple_iterator(num_epochs=1)

    def __repr__(self) -> str:
        return f"<{self.op_name} columns={list(self._columns)}>"
