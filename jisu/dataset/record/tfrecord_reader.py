"""Rows of ``tf.train.Example`` records from TFRecord files, by index: the reader behind
``TFRecordDataset`` (:mod:`jisu.dataset.sources.tfrecord`), beside the file-level reader
:mod:`.tfrecord_format`.

:class:`TFRecordReader` indexes each file once (:class:`~.tfrecord_format.TFRecordFile`), so
rows are read by index: a row read decodes one record, and its features become one NumPy
array per :class:`Column`, cast and shaped as the schema says (MindSpore's conventions: an
``int64_list`` reads as int64, a ``float_list`` as float32, a ``bytes_list`` as uint8 or text).
A feature never reads as far more bytes than its record holds (see
:data:`MAX_VALUE_EXPANSION`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .tfrecord_format import TFRecordFile
from .validate import MalformedFileError

OP = "TFRecordDataset"  # how messages name the data set
#: what ``int64_list``, ``float_list`` and ``bytes_list`` features read as without a schema
_KIND_DTYPE = {
    "int64_list": np.dtype(np.int64),
    "float_list": np.dtype(np.float32),
    "bytes_list": np.dtype(np.uint8),
}
_PAD = 0x20  # MindSpore pads the values of a bytes list read as uint8 with spaces
#: A feature may read as at most ``VALUE_ALLOWANCE + MAX_VALUE_EXPANSION x its record's size``
#: bytes, so that padding a bytes list to its longest value, NumPy's fixed-width text (4 bytes
#: per character of the longest string) or a schema's shape cannot turn a record of a few KB
#: into gigabytes. Module attributes, read at each row: raise them for a genuine file beyond
#: (here, or in :mod:`jisu.dataset.sources.tfrecord`, which passes them on to this module).
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


def infer_columns(first: TFRecordFile | None, wanted: list[str] | None) -> list[Column]:
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
