"""TFRecordDataset: rows of ``tf.train.Example`` records from TFRecord files, without TensorFlow.

Each file is indexed once (one pass over the record headers), so the source is random access:
a row read decodes one record, read by ``pread`` (a file truncated while it is read is an error
naming it, never a SIGBUS). GZIP/ZLIB files are decompressed once, in chunks, into an anonymous
temporary file in ``TMPDIR``, indexed as they inflate and bounded in size (see
:func:`~jisu.dataset.record.tfrecord_format.inflate_limit`): memory stays bounded and the
source stays random access (MindSpore also decompresses each file to count its rows). A
feature never reads as far more bytes than its record holds (see :data:`MAX_VALUE_EXPANSION`).
"""

from __future__ import annotations

import glob
import itertools
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..engine.context import ExecContext
from ..engine.errors import raise_in_context
from ..record.tfrecord_format import COMPRESSION, TFRecordFile
from ..record.validate import MalformedFileError
from ..storage import is_url
from ..validation import check_columns, check_int, resolve_shards
from .generator import Schema, Source, _SourceKernels
from .options import ReadOptions, Shuffle, check_cache

OP = "TFRecordDataset"
#: what ``int64_list``, ``float_list`` and ``bytes_list`` features read as without a schema
_KIND_DTYPE = {
    "int64_list": np.dtype(np.int64),
    "float_list": np.dtype(np.float32),
    "bytes_list": np.dtype(np.uint8),
}
_SCHEMA_TYPES = {
    name: np.dtype(name)
    for name in [
        *("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"),
        *("uint64", "float16", "float32", "float64"),
    ]
}
_PAD = 0x20  # MindSpore pads the values of a bytes list read as uint8 with spaces
#: A feature may read as at most ``VALUE_ALLOWANCE + MAX_VALUE_EXPANSION x its record's size``
#: bytes, so that padding a bytes list to its longest value, NumPy's fixed-width text (4 bytes
#: per character of the longest string) or a schema's shape cannot turn a record of a few KB
#: into gigabytes. Module attributes, read at each row: raise them for a genuine file beyond.
MAX_VALUE_EXPANSION = 64
VALUE_ALLOWANCE = 1 << 20


@dataclass(frozen=True)
class Column:
    """A column: its feature name, the NumPy dtype it reads as (``str`` kind: text), and its
    shape (None: 1-D, one element per value; may hold one -1)."""

    name: str
    dtype: np.dtype | None
    shape: tuple[int, ...] | None = None


class TFRecordReader:
    """Rows of TFRecord files by index: a tuple of one array per column."""

    def __init__(
        self,
        paths: list[str],
        compression: str,
        columns: list[Column],
        storage_options: dict | None = None,
    ) -> None:
        self.paths, self.compression, self.columns = paths, compression, columns
        self.storage_options = storage_options
        self.files = [TFRecordFile(p, compression, storage_options) for p in paths]
        self.starts = np.cumsum([0] + [len(f) for f in self.files]).astype(np.int64)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "files"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        options = self.__dict__.get("storage_options")
        self.files = [TFRecordFile(p, self.compression, options) for p in self.paths]

    def __len__(self) -> int:
        return int(self.starts[-1])

    def locate(self, index: int) -> tuple[int, int]:
        """(file, record in that file) of row ``index``."""
        k = int(np.searchsorted(self.starts, index, side="right")) - 1
        return k, index - int(self.starts[k])

    def file_indices(self, k: int) -> np.ndarray:
        return np.arange(self.starts[k], self.starts[k + 1], dtype=np.int64)

    def __getitem__(self, index: int) -> tuple:
        k, record = self.locate(index)
        file = self.files[k]
        feature = file.features(record)
        size = int(file.lengths[record])
        return tuple(_column(feature, c, file.path, record, size) for c in self.columns)

    def gather(self, indices: np.ndarray) -> list[np.ndarray] | None:
        """Rows ``indices`` as stacked columns, each built with one NumPy call (the records
        still decoded one by one). None when a column does not take the fast path (ragged
        or several bytes values, text, a missing feature): the rows are then read one by one,
        which gives the precise error or the per-row arrays a batch pads."""
        ks = np.searchsorted(self.starts, indices, side="right") - 1
        records = indices - self.starts[ks]
        features = [
            self.files[k].features(record) for k, record in zip(ks.tolist(), records.tolist())
        ]
        columns = []
        for column in self.columns:
            stacked = _stack_column(features, column)
            if stacked is None:
                return None
            columns.append(stacked)
        return columns


def _check_size(nbytes: int, what: str, column: Column, path: str, record: int, size: int) -> None:
    """Refuse a feature that would read as more bytes than a record of ``size`` bytes may
    (see :data:`MAX_VALUE_EXPANSION`), before anything is allocated."""
    limit = VALUE_ALLOWANCE + MAX_VALUE_EXPANSION * size
    if nbytes > limit:
        raise MalformedFileError(
            path,
            f"record {record}: feature {column.name!r} would read as {nbytes} bytes ({what}), "
            f"more than jisu allows for a record of {size} bytes ({limit}: VALUE_ALLOWANCE + "
            "MAX_VALUE_EXPANSION x the record's size, in jisu.dataset.sources.tfrecord)",
        )


def _column(feature: Any, column: Column, path: str, record: int, size: int = 0) -> np.ndarray:
    """One column of a decoded Example (record ``record``, ``size`` bytes), as the schema
    says."""
    name = column.name
    if name not in feature:
        raise MalformedFileError(
            path, f"record {record} has no feature {name!r} (a column of the data set)"
        )
    value = feature[name]
    kind = value.WhichOneof("kind")
    dtype = column.dtype
    if kind is None:
        raise MalformedFileError(path, f"record {record}: feature {name!r} holds no list")
    if kind == "bytes_list":
        values = list(value.bytes_list.value)
        if dtype is not None and dtype.kind in "US":
            try:
                texts = [v.decode("utf-8") for v in values]
            except UnicodeDecodeError:
                raise MalformedFileError(
                    path, f"record {record}: feature {name!r} is not UTF-8 text (read it as uint8)"
                ) from None
            longest = max(map(len, texts), default=0)
            what = f"{len(texts)} strings of up to {longest} characters, 4 bytes each"
            _check_size(4 * longest * len(texts), what, column, path, record, size)
            array = np.array(texts, dtype=np.str_)
        elif dtype is None or dtype == np.uint8:
            array = _bytes_array(values, column, path, record, size)
        else:
            raise MalformedFileError(
                path,
                f"record {record}: feature {name!r} is a bytes list, which reads as "
                f"uint8 or string, not {dtype} as the schema says",
            )
    else:
        lst = value.int64_list if kind == "int64_list" else value.float_list
        array = np.array(lst.value, dtype=_KIND_DTYPE[kind])
        if dtype is not None and dtype != array.dtype:
            if dtype.kind in "US":
                raise MalformedFileError(
                    path,
                    f"record {record}: feature {name!r} is a numeric list, which cannot "
                    "read as string as the schema says",
                )
            with np.errstate(invalid="ignore", over="ignore"):
                array = array.astype(dtype)
    if column.shape is not None:
        try:
            array = array.reshape(column.shape)
        except ValueError:
            raise MalformedFileError(
                path,
                f"record {record}: feature {name!r} has {array.size} value(s), which do "
                f"not fit the schema's shape {list(column.shape)}",
            ) from None
    return array


def _stack_column(features: list[Any], column: Column) -> np.ndarray | None:
    """One column of many decoded Examples as one array (fixed-size numeric lists, or one
    bytes value each of one length), or None for anything else."""
    name, dtype, shape = column.name, column.dtype, column.shape
    values = [f.get(name) for f in features]
    if not values or any(v is None for v in values):
        return None
    kind = values[0].WhichOneof("kind")
    if any(v.WhichOneof("kind") != kind for v in values):  # the rows say how each one reads
        return None
    if kind == "bytes_list":
        if (dtype is not None and dtype != np.uint8) or (shape and len(shape) >= 2):
            return None
        lists = [v.bytes_list.value for v in values]
        if any(len(vals) != 1 for vals in lists):
            return None
        items = [values[0] for values in lists]
        width = len(items[0])
        if any(len(item) != width for item in items):
            return None
        array = np.frombuffer(b"".join(items), dtype=np.uint8).reshape(len(items), width)
    elif kind in ("int64_list", "float_list"):
        if dtype is not None and dtype.kind in "US":
            return None
        lists = [getattr(v, kind).value for v in values]
        width = len(lists[0])
        if any(len(vals) != width for vals in lists):
            return None  # ragged
        flat = itertools.chain.from_iterable(lists)
        array = np.fromiter(flat, _KIND_DTYPE[kind], count=width * len(lists))
        array = array.reshape(len(lists), width)
        if dtype is not None and dtype != array.dtype:
            with np.errstate(invalid="ignore", over="ignore"):
                array = array.astype(dtype)
    else:
        return None
    if shape is not None:
        try:
            array = array.reshape(len(values), *shape)
        except ValueError:
            return None  # the row-by-row read names the record that does not fit
    return array


def _bytes_array(
    values: list[bytes], column: Column, path: str, record: int, size: int = 0
) -> np.ndarray:
    """A bytes list as uint8, MindSpore's way: one value as its bytes; several each padded
    with spaces to the longest (or, for a schema shape ``[-1, d1, ...]``, to d1 * ...) and
    concatenated; refused when that would be far larger than the record (``size`` bytes)."""
    if len(values) == 1 and not (column.shape and len(column.shape) >= 2):
        return np.frombuffer(values[0], dtype=np.uint8)
    width = max((len(v) for v in values), default=0)
    shape = column.shape
    if shape is not None and len(shape) >= 2 and shape[0] == -1:
        width_asked = math.prod(shape[1:])
        if width_asked < width:
            raise MalformedFileError(
                path,
                f"record {record}: feature {name_of(column)} has a {width}-byte value, "
                f"longer than the {width_asked} bytes the schema's shape {list(shape)} gives",
            )
        width = width_asked
    what = f"{len(values)} values padded to {width} bytes each"
    _check_size(len(values) * width, what, column, path, record, size)
    out = np.full((len(values), width), _PAD, dtype=np.uint8)
    for i, v in enumerate(values):
        out[i, : len(v)] = np.frombuffer(v, dtype=np.uint8)
    return out.reshape(-1)


def name_of(column: Column) -> str:
    return repr(column.name)


# ----------------------------------------------------------------- arguments
def list_remote_files(dataset_files: Any, storage_options: dict | None) -> list[str]:
    """:func:`list_files` for URLs: a URL is a glob pattern, a list of URLs names files."""
    from ..storage import filesystem

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


def _schema_columns(schema: Schema) -> list[Column]:
    columns = []
    for c in schema.columns:
        dtype = c["type"]
        if dtype is not None and dtype.kind not in "US" and dtype not in _SCHEMA_TYPES.values():
            raise TypeError(
                f"{OP}: schema column {c['name']!r} has type {dtype}; TFRecord features read as "
                f"{', '.join(_SCHEMA_TYPES)} or string"
            )
        shape = None if c["shape"] is None else _check_shape(c["name"], c["shape"], "schema")
        columns.append(Column(c["name"], dtype, shape))
    return columns


def _check_shape(name: str, shape: Any, where: str) -> tuple[int, ...]:
    if not isinstance(shape, (list, tuple)) or not all(
        isinstance(d, int) and not isinstance(d, bool) and (d > 0 or d == -1) for d in shape
    ):
        raise ValueError(
            f"{OP}: {where} column {name!r}: shape must be a list of ints > 0 (one may be -1). "
            f"Received: shape={shape!r}"
        )
    if list(shape).count(-1) > 1:
        raise ValueError(f"{OP}: {where} column {name!r}: shape has more than one -1: {shape}")
    return tuple(shape)


def load_schema_file(path: str) -> tuple[list[Column], int | None]:
    """Columns and ``numRows`` of a MindSpore schema JSON file, parsed strictly::

        {"datasetType": "TF", "numRows": 3,
         "columns": {"label": {"type": "int64", "rank": 1, "shape": [1]}, ...}}

    ``columns`` may also be a list of ``{"name": ..., "type": ..., "rank": ...}``.
    """

    def bad(reason: str) -> MalformedFileError:
        return MalformedFileError(path, f"is not a valid schema file: {reason}")

    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"{OP}: the schema file '{path}' does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad(f"not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise bad("the top level must be an object")
    unknown = set(doc) - {"datasetType", "numRows", "columns"}
    if unknown:
        raise bad(f"unknown field(s) {sorted(unknown)} (known: datasetType, numRows, columns)")
    if "datasetType" in doc and not isinstance(doc["datasetType"], str):
        raise bad("datasetType must be a string")
    num_rows = doc.get("numRows")
    if "numRows" in doc and (
        isinstance(num_rows, bool) or not isinstance(num_rows, int) or num_rows < 0
    ):
        raise bad(f"numRows must be an int >= 0, not {num_rows!r}")
    if "columns" not in doc:
        raise bad('"columns" is required')
    raw = doc["columns"]
    if isinstance(raw, dict):
        items = []
        for name, attrs in raw.items():
            if not isinstance(attrs, dict):
                raise bad(f"column {name!r} must be an object")
            if "name" in attrs and attrs["name"] != name:
                raise bad(f"column {name!r} has another name {attrs['name']!r}")
            items.append((name, attrs))
    elif isinstance(raw, list):
        items = []
        for attrs in raw:
            if not isinstance(attrs, dict) or not isinstance(attrs.get("name"), str):
                raise bad(f"each column must be an object with a string name, not {attrs!r}")
            items.append((attrs["name"], attrs))
    else:
        raise bad('"columns" must be an object or a list')
    if not items:
        raise bad('"columns" is empty')
    columns = []
    for name, attrs in items:
        if not name:
            raise bad("a column has an empty name")
        unknown = set(attrs) - {"name", "type", "rank", "shape", "t_impl"}
        if unknown:
            raise bad(
                f"column {name!r} has unknown attribute(s) {sorted(unknown)} (known: name, "
                "type, rank, shape, t_impl)"
            )
        kind = attrs.get("type")
        if kind != "string" and kind not in _SCHEMA_TYPES:
            raise bad(
                f"column {name!r} has type {kind!r}; expected one of {', '.join(_SCHEMA_TYPES)}"
                ", string"
            )
        rank = attrs.get("rank")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise bad(f"column {name!r} needs a rank, an int >= 0, not {rank!r}")
        shape = None
        if "shape" in attrs:
            try:
                shape = _check_shape(name, attrs["shape"], "schema file")
            except ValueError as exc:
                raise bad(str(exc).split(": ", 1)[1]) from None
            if len(shape) != rank:
                raise bad(f"column {name!r} has rank {rank} but shape {list(shape)}")
        elif rank == 0:
            shape = ()
        elif rank > 1:
            raise bad(f"column {name!r} has rank {rank} but no shape")
        dtype = np.dtype(np.str_) if kind == "string" else _SCHEMA_TYPES[kind]
        columns.append(Column(name, dtype, shape))
    names = [c.name for c in columns]
    if len(set(names)) != len(names):
        raise bad(f"column names repeat: {names}")
    return columns, num_rows


def _infer_columns(first: TFRecordFile | None, wanted: list[str] | None) -> list[Column]:
    """Without a schema: the features of the first record, sorted by name (MindSpore's way),
    as int64 / float32 / uint8 1-D arrays; ``wanted`` picks and orders them."""
    if first is None:
        raise ValueError(
            f"{OP}: the files hold no record, so there are no columns to infer; pass a schema"
        )
    feature = first.features(0)
    kinds = {name: feature[name].WhichOneof("kind") for name in feature}
    names = sorted(kinds) if wanted is None else wanted
    columns = []
    for name in names:
        if name not in kinds:
            raise ValueError(
                f"{OP}: columns_list names {name!r}, which is not a feature of the first record "
                f"of '{first.path}' (features: {sorted(kinds)})"
            )
        if kinds[name] is None:
            raise MalformedFileError(first.path, f"record 0: feature {name!r} holds no list")
        columns.append(Column(name, _KIND_DTYPE[kinds[name]]))
    if not columns:
        raise MalformedFileError(first.path, "record 0 has no feature")
    return columns


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
            would read as far more bytes than it holds (:data:`MAX_VALUE_EXPANSION`), or a
            file truncated meanwhile, when reading it: the message names the file and the
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
            columns = _infer_columns(first, columns_list)
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
            return _schema_columns(schema), None
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
