"""RecordDataset (alias MindDataset): rows of a jisu record data set or of MindRecord files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.rows import to_array
from ..core.validation import check_int
from ..engine.context import ExecContext
from ..engine.errors import raise_in_context
from ..record.format import find_manifest
from ..record.gather import gather
from ..record.mindrecord import MindRecordReader, is_mindrecord
from ..record.reader import RecordReader
from ..record.schema import ColumnOrder
from ..record.storage import default_cache, is_url
from .generator import Source, _SourceKernels
from .options import ReadOptions, Shuffle

#: rows smaller than this (on average, in the shards' bytes) read from local files hold the GIL
#: for most of their read: see :meth:`RecordDataset.work_holds_gil`
SMALL_ROW_BYTES = 64 << 10


def open_records(
    dataset_files: Any,
    columns: Sequence[str] | None,
    verify: bool,
    storage_options: dict | None = None,
    cache_dir: str | None = None,
    cache_size: int | None = None,
    read_ahead_bytes: int | None = None,
) -> Any:
    """A reader for a jisu record data set or MindRecord shard(s); a URL opens a data set in
    object storage (:class:`~jisu.dataset.record.remote.RemoteRecordReader`)."""
    if isinstance(dataset_files, (list, tuple)):
        if not dataset_files:
            raise ValueError("RecordDataset: dataset_files is empty")
        if all(is_mindrecord(os.fspath(p)) for p in dataset_files):
            return MindRecordReader(list(dataset_files), columns)
        if len(dataset_files) == 1:
            dataset_files = dataset_files[0]
        else:
            raise ValueError(
                "RecordDataset: a list of files is for MindRecord shards; name a "
                f"jisu data set by one path. Received: {dataset_files!r}"
            )
    if not isinstance(dataset_files, (str, os.PathLike)):
        raise TypeError(
            f"RecordDataset: dataset_files must be a path or a list of paths. "
            f"Received: {dataset_files!r}"
        )
    if is_url(dataset_files):
        from ..record.remote import RemoteRecordReader

        if cache_dir is None:
            cache_dir, default_size = default_cache()
            cache_size = default_size if cache_size is None else cache_size
        return RemoteRecordReader(
            dataset_files, columns, verify, storage_options, cache_dir, cache_size,
            read_ahead_bytes,
        )  # fmt: skip
    path = os.fspath(dataset_files)
    if is_mindrecord(path):
        return MindRecordReader(path, columns)
    manifest = find_manifest(path)
    if manifest is None:
        raise FileNotFoundError(
            f"RecordDataset: no jisu record manifest or MindRecord file at '{path}'"
        )
    return RecordReader(manifest, columns, verify)


class _Padded:
    """The reader's rows followed by ``count`` copies of ``padded_sample``."""

    def __init__(self, reader: Any, sample: tuple, count: int) -> None:
        self.reader, self.sample, self.count = reader, sample, count

    def __len__(self) -> int:
        return len(self.reader) + self.count

    def __getitem__(self, index: int) -> tuple:
        if index >= len(self.reader):
            return self.sample
        return self.reader[index]


_GATHER_TRIES = 8


class _RecordKernels(_SourceKernels):
    """Random access to records, and a batch's rows gathered into its arrays at once."""

    def _fetch_columns(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> list | None:
        reader = self.source
        if not isinstance(reader, RecordReader):  # MindRecord, padded samples: row by row
            return None
        # rows that cannot be gathered (bytes of different lengths: JPEGs) stay so: after
        # _GATHER_TRIES batches of a run without one gathered, stop trying
        tally = ctx.cached((ctx.node_id(self), "gathered"), lambda: [0, 0])  # [yes, no]
        if tally[1] >= _GATHER_TRIES and not tally[0]:
            return None
        try:
            columns = gather(reader, self.epoch_order(ctx, epoch)[indices])
        except (OSError, ValueError, RuntimeError):
            return None  # read row by row: the failing row's error then names its sample
        tally[columns is None] += 1
        return columns


class RecordDataset(Source):
    """Rows of a jisu record data set (``FileWriter``) or of MindRecord files.

    Args:
        dataset_files: the data set's name, manifest or one of its shards; or MindRecord
            shard(s) (one file opens all shards named in its header; a list opens those).
        columns_list: columns to read, in order (default: all, in the order written;
            :class:`MindDataset`: sorted by name, MindSpore's order).
        num_parallel_workers: threads reading rows (default: ``config``'s; rows of under
            64 KiB read from local files or a verified cache, with no map above, are read on
            one thread: see :meth:`work_holds_gil`).
        shuffle: True / ``Shuffle.GLOBAL`` (default), ``Shuffle.FILES``, ``Shuffle.INFILE``
            or False (rows in written order, shard after shard).
        num_shards / shard_id: one of ``num_shards`` equal parts (short parts wrap around).
        sampler, num_samples: as in :class:`GeneratorDataset`.
        padded_sample / num_padded: append ``num_padded`` copies of ``padded_sample`` (a dict
            of every column) so that the rows divide evenly among shards.
        verify: check every shard's CRC-32 against the manifest when opening (jisu format).
            For a data set in object storage this reads every shard in full once (into the
            cache when there is one), in the background in the epoch's shard order, and no
            row of a shard is served before its check passed (a shard that fails it fails
            its reads, named); the data set is built without waiting for any check.
            ``verify=False`` reads only the byte ranges of the rows asked for.
        storage_options: for a URL (``s3://bucket/train.rec``, ``gs://``, ``hf://``, any
            fsspec URL): the filesystem's options, e.g. ``{"endpoint_url": ...}``; by default
            credentials and endpoint come from the environment (``AWS_ENDPOINT_URL``,
            ``AWS_PROFILE``...). Needs ``pip install "jisu[s3]"``. For S3 every request is
            bounded (5 s to connect, 20 s of silence, 3 attempts; ``config_kwargs`` changes
            them) and every read is pinned to the shard as opened; see
            :mod:`jisu.dataset.record.storage`.
        cache_dir: for a URL: a local folder caching whole verified shards, so that epochs
            after the first read local files (default: ``$JISU_CACHE_DIR``, else no cache).
            See :mod:`jisu.dataset.record.remote`.
        cache_size: the most bytes the cache may hold; least recently used shards are
            removed (default: ``$JISU_CACHE_SIZE``, else no bound).
        read_ahead_bytes: for a URL: the most bytes of record batches fetched ahead of the
            reads, in the epoch's order, and in flight at once (default 64 MiB; 0: none).
            See :mod:`jisu.dataset.record.read_ahead`.

    Raises:
        FileNotFoundError: a missing manifest or shard (in object storage, one not in the
            cache), named, before any row is read.
        MalformedFileError: (a ``ValueError``) a malformed manifest, or a shard that is
            not a plain name beside it, not a regular file, truncated or altered, named,
            before any row is read (in object storage, a shard altered at the same size or
            whose footer disagrees with the manifest: when its rows are first read).
        StorageError: (an ``OSError``) object storage could not be reached or did not
            answer in time, naming the URL and the timeouts. While iterating, these errors
            (and a shard replaced since it was opened) are ``RuntimeError`` too.
    """

    random_access_kernels = _RecordKernels
    default_workers = None  # config's default
    serial_reads = False  # reads (pread) are thread-safe
    file_shuffle = True
    builds_indexed_source = True
    #: the columns without a columns_list: None, the order written (jisu's own name keeps
    #: it); MindDataset: sorted by name, as MindSpore's MindDataset yields them
    default_order: ColumnOrder | None = None

    def __init__(
        self,
        dataset_files: Any,
        columns_list: Sequence[str] | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | Shuffle | None = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        sampler: Any = None,
        num_samples: int | None = None,
        padded_sample: dict | None = None,
        num_padded: int | None = None,
        verify: bool = True,
        storage_options: dict | None = None,
        cache_dir: str | None = None,
        cache_size: int | None = None,
        read_ahead_bytes: int | None = None,
    ) -> None:
        columns = self.default_order if columns_list is None else columns_list
        if read_ahead_bytes is not None:
            check_int("RecordDataset", "read_ahead_bytes", read_ahead_bytes, minimum=0)
        reader = open_records(
            dataset_files, columns, verify, storage_options, cache_dir, cache_size,
            read_ahead_bytes,
        )  # fmt: skip
        self.reader = reader
        source: Any = reader
        if padded_sample is not None or num_padded:
            if padded_sample is None or not isinstance(padded_sample, dict):
                raise ValueError(
                    "RecordDataset: num_padded needs padded_sample, a dict of "
                    f"every column. Received: padded_sample={padded_sample!r}"
                )
            count = check_int("RecordDataset", "num_padded", num_padded or 0, minimum=0)
            missing = [c for c in reader.columns if c not in padded_sample]
            if missing:
                raise ValueError(f"RecordDataset: padded_sample lacks column(s) {missing}")
            sample = tuple(to_array(padded_sample[c]) for c in reader.columns)
            source = _Padded(reader, sample, count)
        options = ReadOptions(
            num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id
        )
        super().__init__(source, reader.columns, options)

    def _check_first_row(self) -> None:
        """Read row 0 at build time, unless the data set is in object storage: its columns
        come from the manifest's validated schema, and row 0 would wait on the network (with
        ``verify``, for its shard's download and check), while without the wait the pipeline
        is built, and the caller goes on, as the shards download. A shard that fails its
        check fails its first read instead, naming its URL."""
        if not getattr(self.reader, "in_object_storage", False):
            super()._check_first_row()

    def get_class_indexing(self) -> dict[str, int]:
        """The ``{class name: label}`` recorded in the manifest (``jisu convert`` of an image
        folder, ``Dataset.save`` of a pipeline with one, ``FileWriter.set_class_indexing``);
        ``{}`` when there is none (MindRecord files, manifests written before the key)."""
        return self.reader.class_indexing

    def work_holds_gil(self) -> bool:
        """Rows of fewer than :data:`SMALL_ROW_BYTES` read from local files (or a verified
        cache): each read is a short ``pread`` between stretches of Python, so a second thread
        mostly waits for the GIL. On 2 cores one thread reads 4 KiB rows 1.6x as fast as two
        (16 KiB: 1.4x, 64 KiB: even, 256 KiB: two threads 1.4x faster; docs/benchmarks.md)."""
        row_bytes = getattr(self.reader, "local_row_bytes", None)
        return row_bytes is not None and row_bytes < SMALL_ROW_BYTES

    def epoch_order(self, ctx: ExecContext, epoch: int) -> np.ndarray:
        """The epoch's order; a data set in object storage plans its reads by it (checks and
        record batches fetched ahead in that order), once per epoch of a run (not in a worker
        process, which reads only some of the rows)."""
        order = super().epoch_order(ctx, epoch)
        plan_epoch = getattr(self.reader, "plan_epoch", None)
        planned = plan_epoch is not None and ctx.drives
        if planned and ctx.first_time((ctx.node_id(self), "read-ahead", epoch)):
            plan_epoch(order, ctx)
        return order

    def _order(self, n: int, rng: np.random.Generator) -> np.ndarray:
        reader = self.reader  # Shuffle.FILES / INFILE work on the shards' rows
        files = [reader.shard_indices(s) for s in range(len(reader.shard_rows))]
        return self.order.indices(n, rng, files)

    def _read(self, ctx: ExecContext, index: int) -> tuple:
        try:
            return self.source[index]  # the reader returns checked rows of arrays already
        except Exception as exc:  # a RuntimeError too, naming the sample (the contract)
            raise_in_context(exc, f"{self.op_name}: reading {self._sample_name(index)} failed")


class MindDataset(RecordDataset):
    """MindSpore's ``MindDataset``: :class:`RecordDataset` with MindSpore's column order.

    Without ``columns_list`` the columns come sorted by name, as MindSpore's ``MindDataset``
    yields them (for files of jisu's ``FileWriter`` too, whatever order ``add_schema`` had),
    so a ported script that unpacks ``data, label`` gets the columns it got from MindSpore;
    ``RecordDataset`` keeps the order written. With ``columns_list``, its order (both).
    Arguments and errors: :class:`RecordDataset`'s.
    """

    default_order = ColumnOrder.SORTED
