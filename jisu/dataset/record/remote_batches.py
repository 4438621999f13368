"""The record batches of a shard in object storage, as :class:`~.remote.RemoteRecordReader`
reads them: a shard's verified copy in the cache or Arrow readers over ranged reads
(:class:`RemoteShard`, which checks every batch it fetches), a fetched batch's columns as
NumPy views (:class:`BatchColumns`), and the last fetched batches (:class:`BatchLRU`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc

from .arrow_file import Part
from .format import ShardEntry
from .pread import PreadFile
from .schema import Field
from .storage import RemoteFile
from .storage_requests import StorageError
from .validate import MalformedFileError


class RemoteShard:
    """One shard: its verified copy in the cache (read by ``pread``), or Arrow readers over
    ranged reads (a pool, one per concurrent thread; they share the fetched footer)."""

    def __init__(
        self, entry: ShardEntry, open_file: Callable[[], RemoteFile], layout: list[int]
    ) -> None:
        self.entry, self.layout = entry, layout
        self._open_file = open_file
        self._file: RemoteFile | None = None
        self._file_lock = threading.Lock()
        self._ahead: Any = None  # the read-ahead's hook, given to the file once it is open
        #: the cache file and where the columns lie in each batch, once the copy is there
        self.local: tuple[PreadFile, list[list[Part]]] | None = None
        self.error: BaseException | None = None  # a failed background fill (bad checksum)
        self.filling = False
        #: each record batch's bytes (the footer's), once read (``RemoteRecordReader._footer``)
        self.ranges: list[tuple[int, int]] | None = None
        self.footer_lock = threading.Lock()
        self._pool: list[Any] = []
        self._lock = threading.Lock()

    @property
    def file(self) -> RemoteFile:
        """The shard's object in storage (:meth:`open`)."""
        return self.open()

    def open(self) -> RemoteFile:
        """The shard's object in storage, its size checked against the manifest and its reads
        pinned to this version of it: one metadata request, made on first use (a shard read
        from its verified copy in the cache never needs it)."""
        file = self._file
        if file is None:
            with self._file_lock:
                if self._file is None:
                    opened = self._open_file()
                    opened.ahead = self._ahead
                    self._file = opened
                file = self._file
        return file

    def set_ahead(self, ahead: Any) -> None:
        """Serve this shard's ranged reads from ``ahead`` when it has them (:mod:`.read_ahead`)."""
        self._ahead = ahead
        with self._file_lock:
            if self._file is not None:
                self._file.ahead = ahead

    def remote_reader(self) -> Any:
        try:
            return pa.ipc.open_file(pa.PythonFile(self.file.clone(), mode="r"))
        except (pa.ArrowException, ValueError) as exc:
            raise MalformedFileError(
                self.entry.path, f"shard is not a readable Arrow file: {exc}"
            ) from exc

    def keep_reader(self, reader: Any) -> None:
        """Add an opened Arrow reader of this shard to the pool (its footer is checked)."""
        with self._lock:
            self._pool.append(reader)

    def claim_fill(self) -> bool:
        """Whether the caller is the one to start the shard's background fill (once)."""
        with self._lock:
            start, self.filling = not self.filling, True
        return start

    def check(self) -> None:
        """Raise the failure of the shard's checksum check or background fill, if any (a bad
        checksum; object storage failing after its retries), a new exception each time."""
        error = self.error
        if error is None:
            return
        if isinstance(error, MalformedFileError):
            raise MalformedFileError(error.path, error.reason) from error
        if isinstance(error, StorageError):
            raise StorageError(str(error)) from error
        raise RuntimeError(f"'{self.entry.path}': checking the shard failed: {error!r}") from error

    def get_batch(self, index: int) -> pa.RecordBatch:
        self.check()
        with self._lock:
            reader = self._pool.pop() if self._pool else None
        if reader is None:
            reader = self.remote_reader()
        try:
            batch = reader.get_batch(index)
            batch.validate()  # buffer sizes fit the lengths (no data is scanned)
        except (pa.ArrowException, ValueError) as exc:
            raise MalformedFileError(
                self.entry.path, f"shard has an unreadable record batch {index}: {exc}"
            ) from exc
        self.keep_reader(reader)
        if batch.num_rows != self.layout[index]:
            raise MalformedFileError(
                self.entry.path,
                f"shard's record batch {index} holds {batch.num_rows} rows; the manifest's "
                f"layout gives {self.layout[index]}",
            )
        return batch


class BatchColumns:
    """NumPy views of the columns of one record batch held in memory (zero-copy where Arrow
    allows): a batch fetched from object storage."""

    def __init__(self, batch: pa.RecordBatch, fields: list[Field]) -> None:
        self.getters = []
        for field in fields:
            column = batch.column(field.name)
            self.getters.append(self._getter(field, column))

    def row(self, j: int) -> tuple:
        """Row ``j`` of the batch, one array per column."""
        return tuple([get(j) for get in self.getters])

    @staticmethod
    def _getter(field: Field, column: pa.Array) -> Any:
        if field.type == "string":
            starts = np.frombuffer(column.buffers()[1], dtype=np.int64)[column.offset :]
            text = column.buffers()[2]
            text = b"" if text is None else memoryview(text)
            return lambda j: np.array(str(text[starts[j] : starts[j + 1]], "utf-8"))
        if field.type == "bytes":
            offsets = np.frombuffer(column.buffers()[1], dtype=np.int64)[column.offset :]
            data = np.frombuffer(column.buffers()[2], dtype=np.uint8)
            return lambda j: data[offsets[j] : offsets[j + 1]]
        if field.shape is None:
            values = column.to_numpy(zero_copy_only=True)
            return lambda j: values[j : j + 1].reshape(())
        flat = column.values.to_numpy(zero_copy_only=True)
        if field.fixed_size is not None:
            rows = flat.reshape(len(column), *field.shape)
            return lambda j: rows[j]
        offsets = column.offsets.to_numpy(zero_copy_only=True)
        shape = field.shape
        return lambda j: flat[offsets[j] : offsets[j + 1]].reshape(shape)


class BatchLRU:
    """The last ``(shard, batch)`` column views, thread-safe: at most ``capacity`` of them and
    ``max_bytes`` in all (the newest one is kept whatever its size), so that record batches a
    hostile or unusual footer makes large cannot pile up in memory."""

    def __init__(self, capacity: int, max_bytes: int) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Any:
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            self._items.move_to_end(key)
            return entry[0]

    def __contains__(self, key: tuple) -> bool:
        with self._lock:
            return key in self._items

    def put(self, key: tuple, value: Any, nbytes: int = 0) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            self._items[key] = (value, nbytes)
            self.nbytes += nbytes
            while len(self._items) > 1 and (
                len(self._items) > self.capacity or self.nbytes > self.max_bytes
            ):
                self.nbytes -= self._items.popitem(last=False)[1][1]

    def drop_shard(self, shard: int) -> None:
        with self._lock:
            for key in [k for k in self._items if k[0] == shard]:
                self.nbytes -= self._items.pop(key)[1]
