"""TFRecordDataset: rows of ``tf.train.Example`` records from TFRecord files, without TensorFlow.

The source's arguments (MindSpore's: files by glob pattern or list, local or URLs; a schema;
sharding by files or by rows) and its order. Reading lives in :mod:`jisu.dataset.record`,
beside the other record formats: :mod:`~jisu.dataset.record.tfrecord_format` (one file:
framing, CRCs, gzip/zlib, ``tf.train.Example``), :mod:`~jisu.dataset.record.tfrecord_reader`
(rows by index across files, features as arrays) and
:mod:`~jisu.dataset.record.tfrecord_schema` (MindSpore's schema JSON file).

Each file is indexed once (one pass over the record headers), so the source is random access:
a row read decodes one record, read by ``pread`` (a file truncated while it is read is an error
naming it, never a SIGBUS). GZIP/ZLIB files are decompressed once, in chunks, into an anonymous
temporary file in ``TMPDIR``, indexed as they inflate and bounded in size (see
:func:`~jisu.dataset.record.tfrecord_format.inflate_limit`): memory stays bounded and the
source stays random access (MindSpore also decompresses each file to count its rows). A
feature never reads as far more bytes than its record holds (see
:data:`jisu.dataset.record.tfrecord_reader.MAX_VALUE_EXPANSION`, settable there).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..core.validation import check_columns, check_int, resolve_shards
from ..engine.context import ExecContext
from ..engine.errors import raise_in_context
from ..record.storage import is_url
from ..record.tfrecord_format import COMPRESSION
from ..record.tfrecord_reader import OP, Column, TFRecordReader, infer_columns
from ..record.tfrecord_reader import name_of as name_of  # re-exported: defined here before
from ..record.tfrecord_schema import load_schema_file, schema_columns
from .generator import Schema, Source, _SourceKernels
from .options import ReadOptions, Shuffle, check_cache


# ----------------------------------------------------------------- arguments
def list_remote_files(dataset_files: Any, storage_options: dict | None) -> list[str]:
    """:func:`list_files` for URLs: a URL is a glob pattern, a list of URLs names files."""
    from ..record.storage import filesystem

    patterns = [dataset_files] if isinstance(dataset_files, str) else list(dataset_files)
    if not patterns or not all(isinstance(p, str) and is_url(p) for p in patterns):
        raise TypeError(
            f"{OP}: dataset_files mixes URLs and local paths; give URLs only. "
            f"Received: dataset_files={dataset_files!r}"
        )
    files = []
    for pattern in patterns:
        fs, path = filesystem(pattern, storage_options)
        protocol = pattern.split("://", 1)[0]
        found = sorted(fs.glob(path)) if isinstance(dataset_files, str) else []
        if not found:
            if not fs.isfile(path):
                raise FileNotFoundError(f"{OP}: no file matches dataset_files={pattern!r}")
            found = [path]
        files += [f"{protocol}://{p}" for p in found]
    return sorted(files)


def list_files(dataset_files: Any, storage_options: dict | None = None) -> list[str]:
    """MindSpore's rule: a str is a glob pattern; a list names files; either way sorted.
    URLs (``s3://bucket/train-*.tfrecord``) are listed by their filesystem."""
    first = dataset_files[0] if isinstance(dataset_files, (list, tuple)) and dataset_files else None
    if is_url(dataset_files) or is_url(first):
        return list_remote_files(dataset_files, storage_options)
    if isinstance(dataset_files, (str, os.PathLike)):
        pattern = os.fspath(dataset_files)
        files = sorted(glob.glob(pattern))
        if not files:
            if os.path.exists(pattern):  # a name with glob characters in it
                return [pattern]
            raise FileNotFoundError(f"{OP}: no file matches dataset_files={pattern!r}")
        return files
    if not isinstance(dataset_files, (list, tuple)) or not all(
        isinstance(p, (str, os.PathLike)) for p in dataset_files
    ):
        raise TypeError(
            f"{OP}: dataset_files must be a path, a glob pattern or a list of paths. "
            f"Received: dataset_files={dataset_files!r}"
        )
    if not dataset_files:
        raise ValueError(f"{OP}: dataset_files must not be empty. Received: dataset_files=[]")
    files = sorted(os.fspath(p) for p in dataset_files)
    for p in files:
        if not os.path.isfile(p):
            raise FileNotFoundError(f"{OP}: dataset_files names '{p}', which is not a file")
    return files


class _TFRecordKernels(_SourceKernels):
    """Random access, and a batch's records decoded into stacked columns at once."""

    def _fetch_columns(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> list | None:
        rows = self.epoch_order(ctx, epoch)[indices]
        try:
            return self.source.gather(rows)
        except Exception as exc:  # a RuntimeError too (the contract), naming the records
            first = self._sample_name(int(rows[0])) if len(rows) else "no record"
            raise_in_context(exc, f"{OP}: reading {len(rows)} records from {first} failed")


class TFRecordDataset(Source):
    """Rows of ``tf.train.Example`` records in TFRecord files (``mindspore.dataset``'s
    ``TFRecordDataset``), read without TensorFlow.

    Args:
        dataset_files: a path or glob pattern, or a list of paths; read in sorted order.
        schema: a :class:`Schema` or the path of a MindSpore schema JSON file: the columns,
            their types (the feature's values are cast) and shapes. The file's ``numRows``
            is the default ``num_samples``. Default: the features of the first record.
        columns_list: columns to read, in order (default: the schema's, or every feature of
            the first record in name order).
        num_samples: read at most this many rows per epoch (per shard).
        num_parallel_workers: threads reading rows (default: ``config``'s).
        shuffle: ``Shuffle.GLOBAL``/True (default), ``Shuffle.FILES``, ``Shuffle.INFILE`` or
            False (records in file order, file after file).
        num_shards / shard_id: read one of ``num_shards`` parts; default from
            ``torch.distributed`` when it is initialized.
        shard_equal_rows: True: every shard gets ``ceil(rows / num_shards)`` rows, a
            contiguous block (the last wraps around to the first rows). False (default): the
            shards deal the files (file ``k`` to shard ``k % num_shards``, so there must be at
            least ``num_shards`` files and shards can differ in size).
        cache: jisu has no cache server: only None.
        compression_type: ``''``/None (default), ``'GZIP'`` or ``'ZLIB'``: how every file
            is compressed.
        storage_options: for URL ``dataset_files`` (``s3://bucket/train-*.tfrecord``, any
            fsspec URL; a URL is a glob pattern too): the filesystem's options (endpoint,
            credentials); by default the environment's. Each file is downloaded once into an
            anonymous temporary file when the data set is made (and again by each worker
            process that unpickles it): a TFRecord file has no index to read ranges by.

    Rows: an ``int64_list`` feature reads as int64, a ``float_list`` as float32, a
    ``bytes_list`` as uint8 (one value: its bytes; several: each padded with spaces to the
    longest, concatenated) or, when the schema says string, as a str array; 1-D unless the
    schema gives a shape.

    Raises:
        FileNotFoundError: a file (or the schema file) that does not exist.
        MalformedFileError: (a ``ValueError``) a file that is not a valid TFRecord file
            (a damaged length, a truncation, a bad gzip stream, one that inflates past
            :func:`~jisu.dataset.record.tfrecord_format.inflate_limit`) when opening it; a
            damaged record (data CRC), one that lacks a column, does not fit the schema or
            would read as far more bytes than it holds
            (:data:`~jisu.dataset.record.tfrecord_reader.MAX_VALUE_EXPANSION`), or a file
            truncated meanwhile, when reading it: the message names the file and the
            record.
        OSError: no room in ``TMPDIR`` for a compressed or remote file's contents (the
            message names the folder).
    """

    random_access_kernels = _TFRecordKernels
    default_workers = None  # config's default
    serial_reads = False  # reads (pread, or of a private map) are thread-safe
    file_shuffle = True
    builds_indexed_source = True

    def __init__(
        self,
        dataset_files: Any,
        schema: Schema | str | os.PathLike | None = None,
        columns_list: Sequence[str] | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | Shuffle | None = Shuffle.GLOBAL,
        num_shards: int | None = None,
        shard_id: int | None = None,
        shard_equal_rows: bool = False,
        cache: Any = None,
        compression_type: str | None = None,
        storage_options: dict | None = None,
    ) -> None:
        check_cache(OP, cache)
        if compression_type is None:
            compression_type = ""
        if not isinstance(compression_type, str) or compression_type not in COMPRESSION:
            raise ValueError(
                f"{OP}: compression_type must be one of '', 'GZIP', 'ZLIB'. "
                f"Received: compression_type={compression_type!r}"
            )
        if not isinstance(shard_equal_rows, bool):
            raise TypeError(
                f"{OP}: shard_equal_rows must be a bool. "
                f"Received: shard_equal_rows={shard_equal_rows!r}"
            )
        check_int(OP, "num_samples", num_samples, minimum=0, allow_none=True)
        columns_list = check_columns(OP, "columns_list", columns_list)
        files = list_files(dataset_files, storage_options)
        columns, num_rows = self._schema(schema)
        if columns is not None and columns_list is not None:
            by_name = {c.name: c for c in columns}
            unknown = [c for c in columns_list if c not in by_name]
            if unknown:
                raise ValueError(
                    f"{OP}: columns_list names {unknown}, not in the schema's columns "
                    f"{list(by_name)}. Received: columns_list={columns_list}"
                )
            columns = [by_name[c] for c in columns_list]
        shards = resolve_shards(OP, num_shards, shard_id)
        self.block_shards = None
        if shards is not None and not shard_equal_rows:
            if len(files) < shards[0]:
                raise ValueError(
                    f"{OP}: with shard_equal_rows=False the shards deal the files, so there "
                    f"must be at least num_shards files; got {len(files)} file(s) for "
                    f"num_shards={shards[0]} (pass shard_equal_rows=True to split rows)"
                )
            files = files[shards[1] :: shards[0]]
        elif shards is not None:
            self.block_shards = shards
        self.files = files
        if num_samples is None and num_rows:  # the schema file's numRows
            num_samples = num_rows
        reader = TFRecordReader(files, compression_type, [], storage_options)
        if columns is None:
            first = next((f for f in reader.files if len(f)), None)
            columns = infer_columns(first, columns_list)
        reader.columns = columns
        self.reader = reader
        options = ReadOptions(
            num_samples,
            num_parallel_workers,
            shuffle,
            None,
            *((1, 0) if shards is not None else (None, None)),  # sharded here, or not at all
        )
        super().__init__(reader, [c.name for c in columns], options)

    @staticmethod
    def _schema(schema: Any) -> tuple[list[Column] | None, int | None]:
        if schema is None:
            return None, None
        if isinstance(schema, Schema):
            if not schema.columns:
                raise ValueError(f"{OP}: schema has no column")
            return schema_columns(schema.columns), None
        if isinstance(schema, (str, os.PathLike)):
            return load_schema_file(os.fspath(schema))
        raise TypeError(
            f"{OP}: schema must be a Schema or the path of a schema JSON file. "
            f"Received: schema={schema!r}"
        )

    def _order(self, n: int, rng: np.random.Generator) -> np.ndarray:
        reader = self.reader  # Shuffle.FILES / INFILE work on the files' rows
        files = [reader.file_indices(k) for k in range(len(reader.files))]
        if self.block_shards is None:
            return self.order.indices(n, rng, files)
        # shard_equal_rows=True: MindSpore gives each shard a contiguous block of the epoch's
        # rows (wrapping around to the first rows), not every num_shards-th row
        order = replace(self.order, num_samples=None).indices(n, rng, files)
        num_shards, shard_id = self.block_shards
        count = -(-n // num_shards) if n else 0
        block = order[(shard_id * count + np.arange(count, dtype=np.int64)) % n] if n else order
        limit = self.order.num_samples
        return block if limit is None else block[:limit]

    def _row_count(self) -> int | None:
        n = self._source_len()
        if self.block_shards is not None:
            n = -(-n // self.block_shards[0]) if n else 0
        limit = self.order.num_samples
        return n if limit is None else min(n, limit)

    def _read(self, ctx: ExecContext, index: int) -> tuple:
        try:
            return self.source[index]  # the reader returns checked rows of arrays already
        except Exception as exc:  # a RuntimeError too, naming the sample (the contract)
            raise_in_context(exc, f"{OP}: reading {self._sample_name(index)} failed")

    def _sample_name(self, index: int) -> str:
        k, record = self.reader.locate(index)
        return f"record {record} of '{self.reader.paths[k]}'"
