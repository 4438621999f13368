"""The fluent pipeline methods of every :class:`~jisu.dataset.core.node.Dataset`: ``map``,
``batch``, ``shuffle``, ``repeat``, ``zip`` … (MindSpore's names and arguments).

Each builds the op's node, found by name in :mod:`.bindings` (the ops live above ``core``);
:class:`~jisu.dataset.core.node.Dataset` inherits them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .bindings import bound

if TYPE_CHECKING:
    from .node import Dataset


class PipelineOps:
    """The fluent methods; each returns a new node (nothing runs until iterated)."""

    def map(
        self,
        operations: Callable | Sequence[Callable],
        input_columns: str | Sequence[str] | None = None,
        output_columns: str | Sequence[str] | None = None,
        num_parallel_workers: int | None = None,
        python_multiprocessing: bool = False,
        offload: bool = False,
        column_order: Sequence[str] | None = None,
        max_rowsize: int | list[int] | None = None,
        cache: Any = None,
        callbacks: Any = None,
        **kwargs: Any,
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
            column_order: None, or refused (an error that is both MindSpore 2.0's ValueError
                and 2.10's TypeError): MindSpore 2 removed this 1.x argument; call
                ``.project(column_order)`` after the map instead.
            max_rowsize: MindSpore's shared-memory size per row in MB (an int, or
                ``[in_rowsize, out_rowsize]``; -1 or None: from the data), checked as
                MindSpore 2.10 does; jisu's worker processes always size their shared memory
                from the data, so a value changes nothing else.
            cache: None or a ``DatasetCache``, accepted and without effect (jisu has no cache
                server; the rows and their order are the same).
            callbacks: a ``DSCallback`` or a list of them, whose hooks are called as the
                map's rows pass on (see :mod:`jisu.dataset.ops.ds_callback`).
            **kwargs: none is taken (a TypeError names it). The signature has them as
                MindSpore 2.0's has: code written for both 1.x and 2.x (MindCV's loaders)
                looks for them to know that ``column_order`` is gone.
        """
        from .cache import DatasetCache
        from .error_types import ArgumentError
        from .validation import check_max_rowsize

        if kwargs:
            raise TypeError(f"map() got an unexpected keyword argument {next(iter(kwargs))!r}")
        if column_order is not None:  # MindSpore 2.0: a ValueError; 2.10: a TypeError
            raise ArgumentError(
                "map: column_order was removed in MindSpore 2.0; keep and order the columns "
                "with .project(columns) after the map: "
                f"data.map(...).project({list(column_order)!r}). Received: column_order="
                f"{column_order!r}"
            )
        check_max_rowsize("map", max_rowsize)
        if cache is not None and not isinstance(cache, DatasetCache):
            raise TypeError(
                f"map: cache must be None or a DatasetCache. Received: {type(cache).__name__}"
            )
        MapDataset = bound("MapDataset")

        mapped = MapDataset(
            self,
            operations,
            input_columns,
            output_columns,
            num_parallel_workers,
            python_multiprocessing,
            offload,
        )
        if callbacks is None:
            return mapped
        check_callbacks = bound("check_callbacks")
        return bound("CallbackPointDataset")(mapped, check_callbacks(callbacks))

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
        ragged: str | Sequence[str] | None = None,
    ) -> Dataset:
        """Group ``batch_size`` consecutive rows into one, each column stacked on a new axis 0.

        ``batch_size`` may be a function of a :class:`BatchInfo` (``get_batch_num()``,
        ``get_epoch_num()``) returning each batch's size, as in MindSpore; the batch then runs
        as a stream (batch ``k`` starts where the sizes before it end).

        ``per_batch_map(col_1, ..., col_n, batch_info)`` receives, for each of
        ``input_columns``, the list of the batch's arrays and returns a tuple of such lists
        (named ``output_columns``), which are then stacked. ``pad_info`` maps a column to
        ``(shape, pad_value)`` to pad ragged rows (None shape: to the largest in the batch).

        ``ragged`` names columns whose rows differ in their first dimension (raw bytes, token
        ids) to batch without padding, as a :class:`RaggedArray` (the rows concatenated, with
        offsets; a jagged ``torch.nested`` tensor from the iterators unless ``output_numpy``).
        It is jisu's: MindSpore pads or fails.
        """
        BatchDataset = bound("BatchDataset")

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
            ragged=ragged,
        )

    def padded_batch(
        self,
        batch_size: int,
        drop_remainder: bool = False,
        num_parallel_workers: int | None = None,
        pad_info: dict | None = None,
    ) -> Dataset:
        """Batch and pad ragged rows; the columns ``pad_info`` does not name (all without it)
        are padded with 0, ``""`` in a string column. A string pad value longer than the
        column's strings widens the batch's dtype; it is never cut."""
        BatchDataset = bound("BatchDataset")

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
        BucketBatchByLengthDataset = bound("BucketBatchByLengthDataset")

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
        SyncWaitDataset = bound("SyncWaitDataset")

        return SyncWaitDataset(self, condition_name, num_batch, callback)

    def sync_update(self, condition_name: str, num_batch: int | None = None, data: Any = None):
        """Release the ``sync_wait`` point ``condition_name`` below: its callback gets ``data``,
        then ``num_batch`` more batches pass (default: the point's own ``num_batch``)."""
        find_sync = bound("find_sync")

        point = find_sync(self, condition_name)
        if point is None:  # a RuntimeError in MindSpore: both here
            from .error_types import PipelineValueError

            raise PipelineValueError(
                f"sync_update: no sync_wait point named '{condition_name}' in this pipeline"
            )
        point.update(num_batch, data)

    def disable_sync(self) -> None:
        """Turn off the nearest ``sync_wait`` point below (down the first inputs): its rows
        pass without waiting for :meth:`sync_update` from now on, as MindSpore's
        ``disable_sync`` does. Nothing happens without one."""
        point = bound("nearest_sync")(self)
        if point is not None:
            point.disable()

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
        ShuffleDataset = bound("ShuffleDataset")

        if bound("nearest_sync")(self) is not None:  # MindSpore 2.10: a RuntimeError
            from .error_types import PipelineValueError

            raise PipelineValueError(
                "shuffle: a shuffle cannot follow a sync_wait point (the rows it lets through "
                "would be reordered); shuffle before sync_wait"
            )
        return ShuffleDataset(self, buffer_size)

    def repeat(self, count: int | None = None) -> Dataset:
        """Repeat the dataset ``count`` times (None or -1: forever). Each repeat is a new epoch
        for everything below it (new shuffle order, new random draws)."""
        RepeatDataset = bound("RepeatDataset")

        return RepeatDataset(self, count)

    def shard(self, num_shards: int, shard_id: int) -> Dataset:
        """Keep every ``num_shards``-th row starting at ``shard_id``; short shards wrap around
        to the first rows so every shard has the same count."""
        ShardDataset = bound("ShardDataset")

        return ShardDataset(self, num_shards, shard_id)

    def take(self, count: int = -1) -> Dataset:
        """The first ``count`` rows (-1: all)."""
        TakeDataset = bound("TakeDataset")

        return TakeDataset(self, count)

    def skip(self, count: int) -> Dataset:
        """All but the first ``count`` rows."""
        SkipDataset = bound("SkipDataset")

        return SkipDataset(self, count)

    def split(self, sizes: Sequence[int | float], randomize: bool = True) -> list[Dataset]:
        """Disjoint parts: ``sizes`` as row counts summing to the dataset's size, or as
        fractions summing to 1 (each rounded; the rounding error goes to the first part, as in
        MindSpore). ``randomize``: rows assigned at random (drawn once from the seed: the
        parts are the same in every epoch), else consecutive. Split a source (or maps over
        it) before shuffling or sharding it: the split is then made on the source's indices
        and each part still shuffles within itself every epoch."""
        split_dataset = bound("split_dataset")

        return split_dataset(self, sizes, randomize)

    def project(self, columns: str | Sequence[str]) -> Dataset:
        """Keep only ``columns``, in that order."""
        ProjectDataset = bound("ProjectDataset")

        return ProjectDataset(self, columns)

    def rename(self, input_columns: str | Sequence[str], output_columns: str | Sequence[str]):
        """Rename ``input_columns`` to ``output_columns``."""
        RenameDataset = bound("RenameDataset")

        return RenameDataset(self, input_columns, output_columns)

    def zip(self, datasets: Dataset | tuple[Dataset, ...]) -> Dataset:
        """Rows side by side with those of ``datasets``, a dataset or a tuple of them (stops at
        the shortest). A list is a TypeError, as in MindSpore 2.10."""
        ZipDataset = bound("ZipDataset")

        if not isinstance(datasets, (PipelineOps, tuple)):
            raise TypeError(
                "zip: datasets must be a dataset or a tuple of datasets. Received: "
                f"{type(datasets).__name__} {datasets!r:.80}"
            )
        others = [datasets] if isinstance(datasets, PipelineOps) else list(datasets)
        return ZipDataset([self, *others])

    def concat(self, datasets: Dataset | Sequence[Dataset]) -> Dataset:
        """Rows of this dataset followed by those of ``datasets`` (same columns)."""
        ConcatDataset = bound("ConcatDataset")

        others = [datasets] if isinstance(datasets, PipelineOps) else list(datasets)
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
        FilterDataset = bound("FilterDataset")

        return FilterDataset(self, predicate, input_columns, num_parallel_workers)

    def offload_module(self) -> Any:
        """A ``torch.nn.Module`` applying the ops that maps left to the device (``offload``).

        Move it to the accelerator and call it on each batch (a dict or the list of columns).
        """
        return bound("offload_module")(self)

    def save(
        self,
        file_name: str,
        num_files: int = 1,
        file_type: str = "mindrecord",
        overwrite: bool = False,
        storage_options: dict | None = None,
    ) -> dict:
        """Write one epoch of this pipeline's output as a jisu record data set.

        The schema comes from the first row (dtypes and shapes kept; strings as ``string``;
        bool, uint16 and uint32 widened to int32, int32 and int64 as MindSpore's ``save``
        does). Nothing is visible until every row is written; returns rows, bytes and seconds.
        ``file_type`` is MindSpore's third argument: only ``"mindrecord"``, which jisu's
        record format stands in for (``MindDataset`` reads it). ``file_name`` may be a URL
        (``s3://bucket/train.rec``, any fsspec URL), with the filesystem's options in
        ``storage_options`` (see :class:`FileWriter`).
        """
        if file_type != "mindrecord":
            raise ValueError(  # MindSpore 2.10's check and type
                f"save: {file_type!r} dataset format is not supported; file_type must be "
                "'mindrecord'"
            )
        return bound("write_dataset")(
            self, file_name, num_files, overwrite, storage_options=storage_options
        )
