"""Arrow IPC shards read by ``pread``, never mapped (see :mod:`jisu.dataset.record.pread`): where
each record batch's columns lie in the file, and rows copied out of it.

Opening a shard (:func:`open_shard`): the IPC footer (the file's last bytes) is parsed for the
places of the record batches; the file's leading magic, its footer and every batch's metadata
are copied into an anonymous map of the file's size (a *sparse copy*: the batch bodies stay
untouched zero pages, which cost no memory), and Arrow opens that copy as if it were the file,
checking the footer, the schema and each batch's structure (``RecordBatch.validate``). What is
kept is where each column's buffers lie in the file (:class:`Part`, a few numbers per column
and batch); the copy is dropped. The bytes read at open are the footer and the metadata, a few
hundred bytes per batch; no byte of the file is ever touched through a map.

Reading rows (:class:`FileColumns`): a batch's small buffers (the offsets of variable-size
columns, the values of scalar columns) are copied once, when the batch is first used, and the
offsets checked against the values they index. Its large columns (bytes, text, arrays) are
copied whole too while the process's copy budget lasts (:data:`COPY_BUDGET_BYTES`: a data set
that fits is then read at memory speed); beyond it each row's payload is one ``pread`` of
exactly its bytes, into a fresh array that the caller owns. A shard truncated at any moment is
a short read, so an error naming it.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
import sys
import threading
import weakref
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc

from .pread import PreadFile
from .schema import Field
from .validate import MalformedFileError

_MAGIC = b"ARROW1"
_TRAILER = 10  # int32 footer length + "ARROW1"
_BLOCK = struct.Struct("<qi4xq")  # flatbuffers struct Block {offset; metaDataLength; bodyLength}
_DICTIONARIES, _RECORD_BATCHES = 2, 3  # fields of the flatbuffers table Footer
# MAP_NORESERVE: the sparse copy of a shard larger than memory must not be refused by the
# kernel's overcommit heuristic; its pages are never touched except for the metadata's.
_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)
_VIEW_OVERHEAD = 512  # bytes of Python objects of one column of a batch's views, roughly
#: A column of a record batch holding at most this many bytes is copied whole when the batch is
#: first used (its rows are views of the copy); a larger one is read row by row, unless ...
COPY_COLUMN_BYTES = 64 << 10
#: ... the process's readers may still keep it: they keep the whole columns of the batches
#: they use first, up to this many bytes in all (a data set that fits is read at memory speed
#: once read; one that does not reads its other batches row by row). Module attributes, read
#: when a batch is first used.
COPY_BUDGET_BYTES = 128 << 20


def _unpack(fmt: str, buf: bytes, pos: int) -> tuple:
    if pos < 0 or pos + struct.calcsize(fmt) > len(buf):
        raise ValueError(f"position {pos} outside the footer")
    return struct.unpack_from(fmt, buf, pos)


def _footer_blocks(footer: bytes, field: int) -> list[tuple[int, int, int]]:
    """The Blocks of vector ``field`` of the flatbuffers table Footer (Arrow's File.fbs)."""
    (root,) = _unpack("<I", footer, 0)
    (back,) = _unpack("<i", footer, root)
    vtable = root - back
    (vtable_size,) = _unpack("<H", footer, vtable)
    slot = 4 + 2 * field
    if slot + 2 > vtable_size:
        return []
    (rel,) = _unpack("<H", footer, vtable + slot)
    if rel == 0:
        return []
    at = root + rel
    (to_vector,) = _unpack("<I", footer, at)
    vector = at + to_vector
    (count,) = _unpack("<I", footer, vector)
    if vector + 4 + count * _BLOCK.size > len(footer):
        raise ValueError(f"{count} blocks do not fit in the footer")
    return [_BLOCK.unpack_from(footer, vector + 4 + k * _BLOCK.size) for k in range(count)]


def footer_blocks(
    size: int, read: Callable[[int, int], bytes], name: str
) -> tuple[int, list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """``(footer_start, dictionary blocks, record batch blocks)`` of an Arrow IPC file of
    ``size`` bytes, read by ``read(start, length)``: each block as ``(offset, metadata bytes,
    body bytes)``, checked to lie inside the file's data.

    Raises:
        MalformedFileError: the file is no Arrow IPC file, or its footer is damaged.
    """
    if size < len(_MAGIC) + 2 + _TRAILER:
        raise MalformedFileError(name, f"shard is not a readable Arrow file ({size} bytes)")
    trailer = read(size - _TRAILER, _TRAILER)
    (footer_size,) = struct.unpack_from("<i", trailer)
    footer_start = size - _TRAILER - footer_size
    if trailer[4:] != _MAGIC or not 8 <= footer_start < size - _TRAILER:
        raise MalformedFileError(name, "shard is not a readable Arrow file (no IPC footer)")
    footer = read(footer_start, footer_size)
    try:
        dictionaries = _footer_blocks(footer, _DICTIONARIES)
        batches = _footer_blocks(footer, _RECORD_BATCHES)
    except (ValueError, struct.error) as exc:
        raise MalformedFileError(
            name, f"shard is not a readable Arrow file (damaged footer: {exc})"
        ) from None
    metadata = 0
    for offset, meta, body in dictionaries + batches:
        metadata += meta
        if offset < 8 or meta <= 0 or body < 0 or offset + meta + body > footer_start:
            raise MalformedFileError(
                name,
                f"shard is not a readable Arrow file (its footer places a record batch at "
                f"bytes [{offset}, {offset + meta + body}), outside its data)",
            )
    if metadata > footer_start:
        raise MalformedFileError(name, "shard is not a readable Arrow file (overlapping blocks)")
    return footer_start, dictionaries, batches


def record_batch_ranges(
    size: int, read: Callable[[int, int], bytes], name: str
) -> list[tuple[int, int]]:
    """The ``(start, end)`` byte range of each record batch of an Arrow IPC file: what one
    Arrow read of that batch fetches (see :func:`footer_blocks`)."""
    _, _, batches = footer_blocks(size, read, name)
    return [(offset, offset + meta + body) for offset, meta, body in batches]


def _sparse_copy(file: PreadFile, name: str) -> mmap.mmap:
    """An anonymous map of the file's size holding its magic, footer and the metadata of every
    batch (see the module docstring), read by ``pread``.

    Raises:
        MalformedFileError: the file is no Arrow IPC file, or its footer is damaged.
    """
    size = file.size
    footer_start, dictionaries, batches = footer_blocks(size, file.read, name)
    blocks = dictionaries + batches
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE
    sparse = mmap.mmap(-1, size, flags=flags)
    with memoryview(sparse) as view:
        file.read_into(view[:8], 0)
        file.read_into(view[footer_start:], footer_start)
        for offset, meta, _ in blocks:
            file.read_into(view[offset : offset + meta], offset)
    return sparse


@dataclass(frozen=True)
class Part:
    """One column of one record batch, by file positions.

    Attributes:
        rows: the batch's rows.
        offsets: position of the column's first offset (variable-size columns), else -1.
        data: position of its first value (-1: no values buffer).
        data_bytes: bytes of values from ``data`` that the column may index.
    """

    rows: int
    offsets: int
    data: int
    data_bytes: int


def _part(column: pa.Array, field: Field, base: int) -> Part:
    """Where ``column`` (of a batch read from a sparse copy at address ``base``) lies."""
    rows = len(column)

    def at(buffer: Any, start: int = 0) -> int:
        return -1 if buffer is None else buffer.address - base + start

    def size(buffer: Any, start: int = 0) -> int:
        return 0 if buffer is None else buffer.size - start

    if field.type in ("string", "bytes"):
        _, offsets, data = column.buffers()
        return Part(rows, at(offsets, 8 * column.offset), at(data), size(data))
    item = field.dtype.itemsize
    if field.shape is None:
        values = column.buffers()[1]
        return Part(rows, -1, at(values, column.offset * item), rows * item)
    child = column.values  # the whole child array, ignoring the column's offset
    values = child.buffers()[1]
    if field.fixed_size is not None:
        start = (child.offset + column.offset * field.fixed_size) * item
        return Part(rows, -1, at(values, start), rows * field.fixed_size * item)
    offsets = column.buffers()[1]
    start = child.offset * item
    return Part(rows, at(offsets, 8 * column.offset), at(values, start), size(values, start))


def open_shard(
    file: PreadFile, name: str, fields: list[Field], check_schema: Callable[[pa.Schema], None]
) -> tuple[list[int], list[list[Part]]]:
    """The record batch sizes of an Arrow IPC shard and the :class:`Part` of each of
    ``fields`` in each batch, after ``check_schema`` accepted its schema (see the module
    docstring). Errors name the shard as ``name``.

    Raises:
        MalformedFileError: not a readable Arrow file, or a malformed record batch.
    """
    sparse = _sparse_copy(file, name)
    buffer = pa.py_buffer(sparse)
    try:
        reader = pa.ipc.open_file(buffer)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise MalformedFileError(name, f"shard is not a readable Arrow file: {exc}") from exc
    check_schema(reader.schema)
    sizes, parts = [], []
    try:
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            batch.validate()  # buffer sizes fit the lengths (only metadata is read)
            sizes.append(batch.num_rows)
            parts.append([_part(batch.column(f.name), f, buffer.address) for f in fields])
    except (pa.ArrowException, OSError, ValueError, KeyError) as exc:
        raise MalformedFileError(name, f"shard has an unreadable record batch: {exc}") from exc
    return sizes, parts


class CopyStore:
    """Columns of record batches one reader copied whole (:class:`FileColumns`), kept while
    the reader lives; all the stores of a process hold at most :data:`COPY_BUDGET_BYTES`.
    Thread-safe."""

    def __init__(self) -> None:
        self._items: dict[tuple, np.ndarray] = {}
        self._held = [0]  # bytes this store holds (boxed for the finalizer)
        weakref.finalize(self, _refund, self._held)

    def get(self, key: tuple, nbytes: int, copy: Callable[[], np.ndarray]) -> np.ndarray | None:
        """The copy under ``key``, made by ``copy()`` if the budget has ``nbytes`` left;
        None when it has not (the column is then read row by row)."""
        found = self._items.get(key)
        if found is not None:
            return found
        with _budget_lock:
            if _budget[0] + nbytes > COPY_BUDGET_BYTES:
                return None
            _budget[0] += nbytes
        try:
            value = copy()
        except BaseException:
            with _budget_lock:
                _budget[0] -= nbytes
            raise
        with _budget_lock:
            kept = self._items.setdefault(key, value)
            if kept is value:
                self._held[0] += nbytes
            else:  # another thread copied it meanwhile
                _budget[0] -= nbytes
        return kept


# An RLock: the finalizer of a store takes it, maybe while this thread holds it.
_budget_lock = threading.RLock()
_budget = [0]  # bytes held by all the copy stores of the process


def _refund(held: list[int]) -> None:
    with _budget_lock:
        _budget[0] -= held[0]
        held[0] = 0


def _reset_after_fork() -> None:
    global _budget_lock
    _budget_lock = threading.RLock()


os.register_at_fork(after_in_child=_reset_after_fork)


class FileColumns:
    """The rows of one record batch, read from its file by ``pread`` (see the module
    docstring). Thread-safe.

    A column is copied whole when the batch is first used if its bytes in the batch are few
    (at most :data:`COPY_COLUMN_BYTES`: scalars, offsets, short strings, small arrays) or the
    reader's :class:`CopyStore` may keep it (within :data:`COPY_BUDGET_BYTES`, so a small data
    set is read at memory speed after its first epoch); its rows are then read-only views of
    that private copy. Any other column is read row by row: one ``pread`` of the row's bytes
    into a fresh array the caller owns.

    Args:
        file: the shard.
        name: the shard's name in messages (a URL for a cached remote shard).
        fields: the columns read.
        parts: where each of them lies in the file.
        batch: the batch's number (for messages).
        copies: the reader's store of whole columns, and this batch's key in it (None: copy
            only the small columns).

    Raises:
        MalformedFileError: the batch's offsets point outside its values; the file was
            truncated (when copying a column or, later, when reading a row).
    """

    def __init__(
        self,
        file: PreadFile,
        name: str,
        fields: list[Field],
        parts: list[Part],
        batch: int,
        copies: tuple[CopyStore, tuple] | None = None,
    ) -> None:
        self.file, self.name, self.batch, self.copies = file, name, batch, copies
        self.nbytes = 0
        self.reads_file = False  # whether a row reads the file (not only copies)
        #: per column, where a batch gather finds its rows (see :mod:`.gather`; None: rows
        #: of this column are read one by one)
        self.layouts: list[tuple | None] = []
        self.getters = [self._getter(k, f, p) for k, (f, p) in enumerate(zip(fields, parts))]

    def row(self, j: int) -> tuple:
        """Row ``j`` of the batch, one array per column."""
        if not self.reads_file:
            return tuple([get(-1, j) for get in self.getters])
        file = self.file
        if file.pinned:  # its descriptor stays open while the file is reachable
            return tuple([get(file._fd[0], j) for get in self.getters])
        fd = file.acquire()
        try:
            return tuple([get(fd, j) for get in self.getters])
        finally:
            file.release()

    def _read(self, position: int, count: int, dtype: Any) -> np.ndarray:
        """``count`` values at ``position``, copied (read-only)."""
        out = np.empty(count, dtype)
        if count:
            self.file.read_into(out, position)
        out.flags.writeable = False
        return out

    def _copy(self, position: int, count: int, dtype: Any) -> np.ndarray:
        """:meth:`_read`, counted in the batch's size (the view cache's bound)."""
        out = self._read(position, count, dtype)
        self.nbytes += out.nbytes
        return out

    def _whole(self, k: int, position: int, count: int, dtype: np.dtype) -> np.ndarray | None:
        """Column ``k``'s ``count`` values at ``position``, copied whole when they are few or
        the copy store keeps them; None: read them row by row."""
        nbytes = count * dtype.itemsize
        if nbytes <= COPY_COLUMN_BYTES:
            return self._copy(position, count, dtype)
        if self.copies is None:
            return None
        store, key = self.copies
        return store.get((*key, k), nbytes, lambda: self._read(position, count, dtype))

    def _offsets(self, field: Field, part: Part, item: int) -> array:
        """The column's offsets (as Python ints, fast to index), checked to index its values
        in order."""
        if part.rows == 0:
            return array("q", [0])
        offsets = self._copy(part.offsets, part.rows + 1, np.int64)
        limit = part.data_bytes // item
        if offsets[0] < 0 or offsets[-1] > limit or np.any(offsets[1:] < offsets[:-1]):
            raise MalformedFileError(
                self.name,
                f"shard's record batch {self.batch}: the offsets of column '{field.name}' "
                f"leave its {limit} values (first {int(offsets[0])}, last {int(offsets[-1])}, "
                "or not increasing)",
            )
        return array("q", offsets.tobytes())

    def _getter(self, k: int, field: Field, part: Part) -> Callable[[int, int], Any]:
        self.nbytes += _VIEW_OVERHEAD
        if field.type in ("string", "bytes"):
            return self._bytes_getter(k, field, part)
        dtype = field.dtype
        if field.shape is None:
            values = self._copy(part.data, part.rows, dtype)
            self.layouts.append(("rows", values))
            return lambda fd, j: values[j : j + 1].reshape(())
        shape = tuple(field.shape)
        if field.fixed_size is not None:
            whole = self._whole(k, part.data, part.rows * field.fixed_size, dtype)
            if whole is not None:
                rows = whole.reshape(part.rows, *shape)
                self.layouts.append(("rows", rows))
                return lambda fd, j: rows[j]
            self.layouts.append(("fixed", part.data, shape, dtype))
            return self._fixed_getter(part, dtype, shape, field.fixed_size * dtype.itemsize)
        self.layouts.append(None)
        return self._ragged_getter(k, field, part, dtype, shape)

    def _bytes_getter(self, k: int, field: Field, part: Part) -> Callable[[int, int], Any]:
        starts = self._offsets(field, part, 1)
        text = field.type == "string"
        first = starts[0]
        data = self._whole(k, part.data + first, starts[-1] - first, np.dtype(np.uint8))
        self.layouts.append(None if text else ("bytes", starts, first, data, part.data))
        if data is not None:
            if text:
                raw = memoryview(data)
                return lambda fd, j: np.array(
                    str(raw[starts[j] - first : starts[j + 1] - first], "utf-8")
                )
            return lambda fd, j: data[starts[j] - first : starts[j + 1] - first]
        self.reads_file = True
        file, position, preadv = self.file, part.data, os.preadv

        def one(fd: int, j: int) -> np.ndarray:
            start = starts[j]
            n = starts[j + 1] - start
            out = np.empty(n, np.uint8)
            if n and preadv(fd, [out], position + start) != n:
                file.read_into(out, position + start, fd)  # the end of the file: the error
            return np.array(str(out.data, "utf-8")) if text else out

        return one

    def _fixed_getter(
        self, part: Part, dtype: np.dtype, shape: tuple, row_bytes: int
    ) -> Callable[[int, int], Any]:
        self.reads_file = True
        file, position, preadv = self.file, part.data, os.preadv

        def one(fd: int, j: int) -> np.ndarray:
            out = np.empty(shape, dtype)
            at = position + j * row_bytes
            if row_bytes and preadv(fd, [out], at) != row_bytes:
                file.read_into(out, at, fd)
            return out

        return one

    def _ragged_getter(
        self, k: int, field: Field, part: Part, dtype: np.dtype, shape: tuple
    ) -> Callable[[int, int], Any]:
        item = dtype.itemsize
        starts = self._offsets(field, part, item)
        file, position, name, batch = self.file, part.data, self.name, self.batch
        known = math.prod(s for s in shape if s != -1)
        first = starts[0]
        whole = self._whole(k, position + first * item, starts[-1] - first, dtype)
        if whole is None:
            self.reads_file = True

        def one(fd: int, j: int) -> np.ndarray:
            start = starts[j]
            count = starts[j + 1] - start
            if count % known:
                raise MalformedFileError(
                    name,
                    f"shard's record batch {batch}, row {j}: column '{field.name}' holds "
                    f"{count} values, which do not fit its shape {list(shape)}",
                )
            if whole is not None:
                return whole[start - first : start - first + count].reshape(shape)
            out = np.empty(count, dtype)
            if count:
                file.read_into(out, position + start * item, fd)
            return out.reshape(shape)

        return one
