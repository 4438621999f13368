"""Reading jisu record data sets: manifest checks, shards read by ``pread``, rows as arrays.

A manifest and its shards are treated as hostile: the manifest is validated in full when the
data set is opened (types, counts, names, and the layout of rows in shards) and every shard
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
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .arrow_file import CopyStore, FileColumns, Part, open_shard
from .pread import PreadFile
from .schema import Field, arrow_schema, parse_schema, select_fields
from .validate import MalformedFileError, open_regular, shard_path
from .writer import FORMAT, FORMAT_VERSION, MANIFEST_SUFFIX, generation_base, read_manifest_json

MAX_COUNT = 2**62  # rows and bytes: far beyond any real data set, within int64
MAX_BLOCK_ROWS = 2**31
_OPEN_ATTEMPTS = 3  # a data set replaced while it is being opened is reopened
# A file modified this recently may change again within the same mtime tick (the kernel's
# clock is coarse), so its CRC is not cached ("racy" files, as git treats them).
_RACY_NS = 2_000_000_000
_VIEW_BATCHES = 4096  # record batches whose copied offsets and scalars a reader keeps ...
_VIEW_BYTES = 64 << 20  # ... and at most this many bytes of them

# (path, device, inode, size, mtime_ns) -> crc, per process
_verified: dict[tuple[str, int, int, int, int], int] = {}
_verified_lock = threading.Lock()


def find_manifest(path: str) -> str | None:
    """The manifest of a data set named by its manifest, its name, or one of its shards."""
    path = os.path.abspath(path)
    if path.endswith(MANIFEST_SUFFIX):
        return path
    candidates = [path + MANIFEST_SUFFIX]
    base = generation_base(path)
    if base is not None:
        candidates.append(base + MANIFEST_SUFFIX)
    stripped = path.rstrip("0123456789")
    if stripped != path:
        candidates.append(stripped + MANIFEST_SUFFIX)
    for candidate in candidates:
        if os.path.exists(candidate):
            return candidate
    return None


@dataclass(frozen=True)
class ShardEntry:
    """One shard as the manifest describes it."""

    path: str
    rows: int
    bytes: int
    crc32: int


@dataclass(frozen=True)
class Manifest:
    """A validated manifest."""

    path: str
    fields: list[Field]
    desc: str
    index_fields: list[str]
    rows: int
    block_rows: int
    shards: list[ShardEntry]
    id: str | None


def block_layout(rows: int, block_rows: int, shards: int) -> list[list[int]]:
    """The record batch sizes of each shard of a data set written by ``FileWriter``: blocks of
    ``block_rows`` rows (the last one shorter) dealt to the shards, block ``k`` to shard
    ``k % shards``, one record batch per block. Computed per shard, not per block."""
    full, rest = divmod(rows, block_rows)
    layout = []
    for s in range(shards):
        count = full // shards + (s < full % shards)
        layout.append([block_rows] * count + ([rest] if rest and s == full % shards else []))
    return layout


def _count(value: Any, what: str, path: str, upper: int = MAX_COUNT) -> int:
    """``value`` if it is an int (not a bool) in [0, upper), else a MalformedFileError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < upper:
        raise MalformedFileError(
            path, f"{what} must be an int in [0, {upper}). Received: {value!r}"
        )
    return value


def _fields_of(schema: Any, path: str) -> list[Field]:
    try:
        return parse_schema(schema, op="schema")
    except ValueError as exc:
        raise MalformedFileError(path, str(exc)) from None


def _shards_of(shards: Any, path: str) -> list[ShardEntry]:
    if not isinstance(shards, list) or not shards:
        raise MalformedFileError(path, f"shards must be a non-empty list. Received: {shards!r:.80}")
    directory, entries, seen = os.path.dirname(path), [], set()
    for k, entry in enumerate(shards):
        if not isinstance(entry, dict):
            raise MalformedFileError(path, f"shards[{k}] must be a dict. Received: {entry!r:.80}")
        name = entry.get("file")
        file = shard_path(directory, name, path)  # before anything touches the file
        if name in seen:
            raise MalformedFileError(path, f"shard '{name}' is listed twice")
        seen.add(name)
        entries.append(
            ShardEntry(
                file,
                _count(entry.get("rows"), f"shards[{k}].rows", path),
                _count(entry.get("bytes"), f"shards[{k}].bytes", path),
                _count(entry.get("crc32"), f"shards[{k}].crc32", path, upper=2**32),
            )
        )
    return entries


def parse_manifest(raw: Any, path: str) -> Manifest:
    """Check a manifest's content in full (see the module docstring).

    Raises:
        MalformedFileError: naming ``path`` and the first problem found.
    """
    if not isinstance(raw, dict):
        raise MalformedFileError(path, "is not a jisu record manifest (not a JSON object)")
    version = raw.get("version")
    if (
        raw.get("format") != FORMAT
        or isinstance(version, bool)
        or not isinstance(version, int)
        or not 1 <= version <= FORMAT_VERSION
    ):
        raise MalformedFileError(
            path,
            f"is not a jisu record manifest of version <= {FORMAT_VERSION}. Received: "
            f"format={raw.get('format')!r:.40}, version={version!r:.40}",
        )
    fields = _fields_of(raw.get("schema"), path)
    desc = raw.get("desc", "")
    if not isinstance(desc, str):
        raise MalformedFileError(path, f"desc must be a str. Received: {desc!r:.80}")
    index = raw.get("index_fields", [])
    names = {f.name for f in fields}
    if not isinstance(index, list) or not all(isinstance(n, str) and n in names for n in index):
        raise MalformedFileError(
            path, f"index_fields must be a list of field names. Received: {index!r:.80}"
        )
    shards = _shards_of(raw.get("shards"), path)
    rows = _count(raw.get("rows"), "rows", path)
    if rows != sum(s.rows for s in shards):
        raise MalformedFileError(
            path, f"rows is {rows} but its shards hold {sum(s.rows for s in shards)}"
        )
    block_rows = raw.get("block_rows")
    if _count(block_rows, "block_rows", path, upper=MAX_BLOCK_ROWS) == 0:
        raise MalformedFileError(path, "block_rows must be positive. Received: 0")
    expected = [sum(sizes) for sizes in block_layout(rows, block_rows, len(shards))]
    if [s.rows for s in shards] != expected:
        raise MalformedFileError(
            path,
            f"shard rows {[s.rows for s in shards]} are not {rows} rows dealt in blocks of "
            f"{block_rows} to {len(shards)} shards ({expected})",
        )
    data_set_id = raw.get("id")
    if data_set_id is not None and not isinstance(data_set_id, str):
        raise MalformedFileError(path, f"id must be a str. Received: {data_set_id!r:.80}")
    return Manifest(path, fields, desc, index, rows, block_rows, shards, data_set_id)


def load_manifest(path: str) -> Manifest:
    """Read and check the manifest at ``path`` (a regular file of sane size, valid content).

    Raises:
        FileNotFoundError: there is no manifest at ``path``.
        MalformedFileError: it is not a valid manifest.
    """
    try:
        raw = read_manifest_json(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"RecordDataset: manifest '{path}' is missing") from None
    return parse_manifest(raw, path)


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
    return file, (entry.path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _check_crc(entry: ShardEntry, file: PreadFile, key: tuple, manifest: str) -> None:
    """The shard's CRC-32 against the manifest (computed once per file and process, unless
    the file was modified in the last seconds)."""
    with _verified_lock:
        crc = _verified.get(key)
    if crc is None:
        start = time.time_ns()
        crc = file.crc32()  # by pread, in chunks; zlib releases the GIL
        if key[-1] < start - _RACY_NS:
            with _verified_lock:
                _verified[key] = crc
    if crc != entry.crc32:
        raise MalformedFileError(
            entry.path,
            f"shard does not match its checksum in '{manifest}' (crc32 {crc:08x}, expected "
            f"{entry.crc32:08x}): it was altered or corrupted",
        )


class _BatchLRU:
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


class _ViewCache(dict):
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


class _Columns:
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
        self._views = _ViewCache(_VIEW_BATCHES, _VIEW_BYTES)
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
        place = metadata.get(b"jisu.shard")
        count = len(self.shard_paths)
        if place is not None and place != f"{k}/{count}".encode():
            raise MalformedFileError(
                entry.path,
                f"shard is shard {place.decode(errors='replace')} of its data set, but {where} "
                f"lists it as shard {k}/{count}",
            )
        owner = metadata.get(b"jisu.dataset")
        if owner is not None and owner.decode(errors="replace") != self.meta.id:
            raise MalformedFileError(
                entry.path, f"shard belongs to another data set than {where} (id mismatch)"
            )

    def __getstate__(self) -> dict:
        skip = ("_files", "_parts", "_views", "_copies", "_batch_starts")
        return {k: v for k, v in self.__dict__.items() if k not in skip}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._open()  # already verified by the process that pickled it; sizes checked again

    def __len__(self) -> int:
        return sum(self.shard_rows)

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
        views = self._views.get((shard, batch)) or self._columns(shard, batch)
        return views.row(local - starts[batch])
