"""Reading jisu record data sets: manifest checks, shards read by ``pread``, rows as arrays.

A manifest and its shards are treated as hostile: the manifest is validated in full when the
data set is opened (types, counts, names, and the layout of rows in shards; see
:func:`~.format.parse_manifest`, where the format's rules live) and every shard
is checked against it (plain name beside the manifest, regular file, size, CRC-32, Arrow
schema, its place in the data set, record batch sizes) before any row is read, so that a
malformed data set fails at once with one :class:`MalformedFileError` naming the file.

Shards are read by ``pread``, never through a memory map (see :mod:`.arrow_file` and
:mod:`.pread`): a shard truncated or shortened while it is read is a :class:`MalformedFileError`
naming it, never a SIGBUS that kills the process.
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from .arrow_file import CopyStore, FileColumns, Part, open_shard
from .format import (
    DATASET_ID_KEY,
    MAX_MANIFEST_BLOCK_ROWS,
    SHARD_PLACE_KEY,
    Manifest,
    ShardEntry,
    block_layout,
    file_identity,
    load_manifest,
    memo_crc,
)
from .format import MAX_COUNT as MAX_COUNT  # re-exported (as X): defined here before format.py
from .format import find_manifest as find_manifest
from .format import parse_manifest as parse_manifest
from .pread import PreadFile
from .schema import arrow_schema, select_fields
from .validate import MalformedFileError, open_regular

_OPEN_ATTEMPTS = 3  # a data set replaced while it is being opened is reopened
VIEW_BATCHES = 4096  # record batches whose copied offsets and scalars a reader keeps ...
VIEW_BYTES = 64 << 20  # ... and at most this many bytes of them
MAX_BLOCK_ROWS = MAX_MANIFEST_BLOCK_ROWS  # its name here before record/format.py


def _open_shard(entry: ShardEntry, manifest: str) -> tuple[PreadFile, tuple]:
    """Open a shard after checking, on the opened file, that it is a regular file of the
    recorded size; returns the file and its identity (for the CRC cache)."""
    fd = open_regular(entry.path, manifest)
    try:
        info = os.fstat(fd)
        if info.st_size != entry.bytes:
            raise MalformedFileError(
                entry.path,
                f"shard has {info.st_size} bytes but '{manifest}' says {entry.bytes}: it is "
                "truncated or was replaced",
            )
        if info.st_size == 0:
            raise MalformedFileError(entry.path, "shard is empty, not an Arrow file")
    except BaseException:
        os.close(fd)
        raise
    file = PreadFile(entry.path, fd)  # owns the descriptor from here on
    return file, file_identity(entry.path, info)


def _check_crc(entry: ShardEntry, file: PreadFile, key: tuple, manifest: str) -> None:
    """The shard's CRC-32 against the manifest (computed once per file and process, unless
    the file was modified in the last seconds)."""
    crc = memo_crc(key, file.crc32)  # by pread, in chunks; zlib releases the GIL
    if crc != entry.crc32:
        raise MalformedFileError(
            entry.path,
            f"shard does not match its checksum in '{manifest}' (crc32 {crc:08x}, expected "
            f"{entry.crc32:08x}): it was altered or corrupted",
        )


class ViewCache(dict):
    """``(shard, batch)`` -> the batch's :class:`FileColumns`: at most ``capacity`` of them
    and ``max_bytes`` of copied buffers, the oldest dropped first. Reads take no lock (one
    dict lookup per row); :meth:`put` is thread-safe."""

    def __init__(self, capacity: int, max_bytes: int) -> None:
        super().__init__()
        self.capacity, self.max_bytes, self.nbytes = capacity, max_bytes, 0
        self._lock = threading.Lock()

    def put(self, key: tuple, views: Any) -> None:
        with self._lock:
            old = self.pop(key, None)
            if old is not None:
                self.nbytes -= old.nbytes
            self[key] = views
            self.nbytes += views.nbytes
            while len(self) > 1 and (len(self) > self.capacity or self.nbytes > self.max_bytes):
                self.nbytes -= self.pop(next(iter(self))).nbytes


class RecordReader:
    """Random access to the rows of a jisu record data set.

    Opening validates the manifest (:func:`parse_manifest`), then checks every shard: a plain
    name beside the manifest, a regular file of the recorded size, with ``verify`` the
    recorded CRC-32 (computed once per file and process, in parallel), the manifest's schema,
    its place in this data set and the record batches the layout implies. A data set replaced
    while it is being opened is reopened, so the reader sees the old or the new one.
    Rows are read from the shards by ``pread`` (see :mod:`.arrow_file`): each row's arrays are
    private memory (fresh arrays, or read-only views of a batch's copy), never views of the
    file, and a shard truncated while it is read is a :class:`MalformedFileError` naming it.
    The reader is thread-safe and pickles by path (worker processes reopen the files,
    checking their sizes and structure again).

    Raises:
        FileNotFoundError: the manifest or a shard is missing.
        MalformedFileError: the manifest or a shard is malformed (named in the message).
    """

    def __init__(
        self, manifest: str, columns: Sequence[str] | None = None, verify: bool = True
    ) -> None:
        self.manifest_path = manifest
        self.verify = verify
        for attempt in range(_OPEN_ATTEMPTS):
            meta = load_manifest(manifest)
            try:
                opened = [_open_shard(entry, manifest) for entry in meta.shards]  # cheap checks
                break
            except FileNotFoundError:
                if attempt + 1 == _OPEN_ATTEMPTS or not self._replaced(meta):
                    raise
        self.meta = meta
        self.all_fields = meta.fields
        self.fields = select_fields(self.all_fields, columns)
        self.columns = [f.name for f in self.fields]
        self.shard_paths = [s.path for s in meta.shards]
        self.shard_rows = [s.rows for s in meta.shards]
        self.block_rows = meta.block_rows
        if verify:
            with ThreadPoolExecutor(min(8, len(opened))) as pool:
                list(
                    pool.map(
                        lambda eo: _check_crc(eo[0], *eo[1], manifest), zip(meta.shards, opened)
                    )
                )
        self._open([file for file, _ in opened])

    def _replaced(self, meta: Manifest) -> bool:
        """Whether the manifest now describes another data set than ``meta`` (a writer
        replaced it, and removed the old shards, while this reader opened them)."""
        try:
            now = load_manifest(self.manifest_path)
        except (OSError, ValueError):
            return False
        return (now.id, now.shards) != (meta.id, meta.shards)

    def _open(self, files: list[PreadFile] | None = None) -> None:
        if files is None:
            files = [_open_shard(entry, self.manifest_path)[0] for entry in self.meta.shards]
        layout = block_layout(self.meta.rows, self.block_rows, len(files))
        expected = arrow_schema(self.all_fields, None)
        self._files = files
        self._parts = []
        self._batch_starts = []
        for k, (entry, file) in enumerate(zip(self.meta.shards, files)):
            sizes, parts = self._open_shard_batches(k, entry, file, entry.path, expected)
            if sizes != layout[k]:
                raise MalformedFileError(
                    entry.path,
                    f"shard's record batches hold {sizes[:8]}{'...' if len(sizes) > 8 else ''} "
                    f"rows; the layout in '{self.manifest_path}' (blocks of {self.block_rows} "
                    f"rows dealt to {len(files)} shards) gives {layout[k][:8]}",
                )
            self._parts.append(parts)
            self._batch_starts.append([0, *itertools.accumulate(sizes)])
        self._views = ViewCache(VIEW_BATCHES, VIEW_BYTES)
        self._copies = CopyStore()

    def _open_shard_batches(
        self, k: int, entry: ShardEntry, file: PreadFile, name: str, expected: pa.Schema
    ) -> tuple[list[int], list[list[Part]]]:
        """The record batch sizes of shard ``k`` (read from ``file``, named ``name`` in
        errors) and where the selected columns lie in each, once its schema is checked."""
        return open_shard(
            file,
            name,
            self.fields,
            lambda schema: self._check_shard_schema(k, entry, schema, expected),
        )

    def _check_shard_schema(
        self, k: int, entry: ShardEntry, schema: pa.Schema, expected: pa.Schema
    ) -> None:
        """The shard holds the manifest's fields, and is shard ``k`` of this data set."""
        where = f"'{self.manifest_path}'"
        metadata = schema.metadata or {}
        try:
            described = json.loads(metadata.get(b"jisu.schema", b"null"))
        except ValueError:
            described = None
        mine = {f.name: f.to_dict() for f in self.all_fields}
        if (
            not schema.remove_metadata().equals(expected.remove_metadata())
            or not isinstance(described, dict)
            or list(described.items()) != list(mine.items())
        ):
            raise MalformedFileError(
                entry.path, f"shard's schema differs from the schema in {where}"
            )
        place = metadata.get(SHARD_PLACE_KEY.encode())
        count = len(self.shard_paths)
        if place is not None and place != f"{k}/{count}".encode():
            raise MalformedFileError(
                entry.path,
                f"shard is shard {place.decode(errors='replace')} of its data set, but {where} "
                f"lists it as shard {k}/{count}",
            )
        owner = metadata.get(DATASET_ID_KEY.encode())
        if owner is not None and owner.decode(errors="replace") != self.meta.id:
            raise MalformedFileError(
                entry.path, f"shard belongs to another data set than {where} (id mismatch)"
            )

    def __getstate__(self) -> dict:
        skip = ("_files", "_parts", "_views", "_copies", "_batch_starts", "_flat_starts")
        return {k: v for k, v in self.__dict__.items() if k not in skip}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._open()  # already verified by the process that pickled it; sizes checked again

    def __len__(self) -> int:
        return sum(self.shard_rows)

    @property
    def local_row_bytes(self) -> float:
        """Bytes per row on average, read from local files (``RecordDataset.work_holds_gil``)."""
        return sum(s.bytes for s in self.meta.shards) / max(1, len(self))

    @property
    def class_indexing(self) -> dict[str, int]:
        """The manifest's ``{class name: label}`` (``{}`` when it records none)."""
        return dict(self.meta.class_indexing)

    def locate(self, index: int) -> tuple[int, int]:
        """(shard, row within the shard) of global row ``index`` (the written order)."""
        block, offset = divmod(index, self.block_rows)
        shard = block % len(self.shard_paths)
        return shard, (block // len(self.shard_paths)) * self.block_rows + offset

    def shard_indices(self, shard: int) -> np.ndarray:
        """Global indices of a shard's rows, in the shard's order."""
        local = np.arange(self.shard_rows[shard], dtype=np.int64)
        blocks = (local // self.block_rows) * len(self.shard_paths) + shard
        return blocks * self.block_rows + local % self.block_rows

    def locate_many(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`locate` of many rows at once: their shards, record batches and rows within
        those batches (``indices`` checked to be in range)."""
        indices = np.asarray(indices, dtype=np.int64)
        if len(indices) and (indices.min() < 0 or indices.max() >= len(self)):
            bad = indices[(indices < 0) | (indices >= len(self))][0]
            raise IndexError(f"RecordDataset: row {bad} out of range [0, {len(self)})")
        block, offset = np.divmod(indices, self.block_rows)
        count = len(self.shard_paths)
        shards = block % count
        local = (block // count) * self.block_rows + offset
        starts, first_batch = self._flat_batch_starts()
        # one search over every shard's batch starts, each shard's lifted above the last's
        flat = np.searchsorted(starts, (shards << 40) + local, side="right") - 1
        return shards, flat - first_batch[shards], (shards << 40) + local - starts[flat]

    def _flat_batch_starts(self) -> tuple[np.ndarray, np.ndarray]:
        """Every record batch's first row as ``shard << 40 | row`` (sorted), and where each
        shard's batches begin in that array; made once per opening."""
        made = self.__dict__.get("_flat_starts")
        if made is not None and made[0] is self._batch_starts:
            return made[1], made[2]
        lifted = [
            (k << 40) + np.asarray(s[:-1], np.int64) for k, s in enumerate(self._batch_starts)
        ]
        starts = np.concatenate(lifted) if lifted else np.zeros(0, np.int64)
        first_batch = np.cumsum([0] + [len(s) for s in lifted[:-1]]).astype(np.int64)
        self._flat_starts = (self._batch_starts, starts, first_batch)
        return starts, first_batch

    def batch_columns(self, shard: int, batch: int) -> Any:
        """The rows of record batch ``batch`` of shard ``shard`` (:class:`FileColumns` for a
        local file)."""
        return self._views.get((shard, batch)) or self._columns(shard, batch)

    def _columns(self, shard: int, batch: int) -> Any:
        views = self._views.get((shard, batch))
        if views is None:
            file, parts = self._files[shard], self._parts[shard][batch]
            copies = (self._copies, (shard, batch))
            views = FileColumns(file, file.path, self.fields, parts, batch, copies)
            self._views.put((shard, batch), views)
        return views

    def __getitem__(self, index: int) -> tuple:
        if not 0 <= index < len(self):
            raise IndexError(f"RecordDataset: row {index} out of range [0, {len(self)})")
        shard, local = self.locate(int(index))
        starts = self._batch_starts[shard]
        batch = bisect.bisect_right(starts, local) - 1
        return self.batch_columns(shard, batch).row(local - starts[batch])
