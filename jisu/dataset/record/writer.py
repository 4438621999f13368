"""FileWriter: pack rows into sharded Arrow IPC files, visible only at ``commit()``.

Layout of a data set written as ``FileWriter("train.rec", shard_num=4)``:

* ``train.rec0`` .. ``train.rec3`` (``train.rec`` when ``shard_num=1``): Arrow IPC files, one
  record batch per block of rows; any Arrow reader opens them (``pyarrow.ipc.open_file``).
* ``train.rec.manifest.json``: format version, schema, rows, bytes and CRC-32 of every shard,
  and ``block_rows``. Rows are dealt to the shards in blocks of ``block_rows`` (block ``k`` to
  shard ``k % shard_num``), so the written order can be rebuilt from the shards.

Files are written under temporary names, fsynced, and renamed at ``commit()``; the manifest is
renamed last and is the commit point. A writer that dies leaves at most temporary files, which
no reader opens.
"""

from __future__ import annotations

import json
import mmap
import os
import secrets
import weakref
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc

from .schema import Field, arrow_schema, check_value, checked_column, column_of, parse_schema

FORMAT = "jisu-record"
FORMAT_VERSION = 1
MANIFEST_SUFFIX = ".manifest.json"
BLOCK_BYTES = 4 << 20  # target size of one record batch
MAX_BLOCK_ROWS = 1024


def shard_files(file_name: str, shard_num: int) -> list[str]:
    """Shard paths, named as MindRecord names them."""
    return [file_name] if shard_num == 1 else [f"{file_name}{i}" for i in range(shard_num)]


def crc32_of(path: str) -> int:
    """CRC-32 of a file, read through a memory map (no copy; zlib releases the GIL)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return 0
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return zlib.crc32(mapped)


def _concat(parts: list) -> Any:
    """One column from consecutive pieces (arrays, Arrow arrays or lists)."""
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    if isinstance(parts[0], pa.Array):
        return pa.concat_arrays(parts)
    return [v for part in parts for v in part]


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(paths: list[str]) -> None:
    for path in paths:
        try:
            os.remove(path)
        except OSError:
            pass


class FileWriter:
    """Write a jisu record data set (MindRecord's ``FileWriter`` API).

    Args:
        file_name: path of the data set (the shard name when ``shard_num=1``).
        shard_num: number of shard files.
        overwrite: replace an existing data set of that name.

    Raises:
        FileExistsError: a file of the data set exists and ``overwrite`` is False.

    Example:
        >>> writer = FileWriter("train.rec", shard_num=2)
        >>> writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}})
        0
        >>> writer.write_raw_data([{"image": b"...", "label": 3}])
        >>> writer.commit()
    """

    def __init__(self, file_name: str, shard_num: int = 1, overwrite: bool = False) -> None:
        if not isinstance(file_name, (str, os.PathLike)) or not str(file_name):
            raise ValueError(f"FileWriter: file_name must be a path. Received: {file_name!r}")
        if isinstance(shard_num, bool) or not isinstance(shard_num, int) or not shard_num >= 1:
            raise ValueError(f"FileWriter: shard_num must be an int >= 1. Received: {shard_num!r}")
        self.file_name = os.path.abspath(os.fspath(file_name))
        self.shard_num = shard_num
        self.paths = shard_files(self.file_name, shard_num)
        self.manifest = self.file_name + MANIFEST_SUFFIX
        if not overwrite:
            for path in [*self.paths, self.manifest]:
                if os.path.exists(path):
                    raise FileExistsError(
                        f"FileWriter: '{path}' already exists; pass overwrite=True to replace "
                        "the data set"
                    )
        directory = os.path.dirname(self.file_name)
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"FileWriter: directory '{directory}' does not exist")
        token = f".tmp-{os.getpid()}-{secrets.token_hex(4)}"
        self._temp = [p + token for p in self.paths]
        self._temp_manifest = self.manifest + token
        self._cleanup = weakref.finalize(self, _remove, [*self._temp, self._temp_manifest])
        self._fields: list[Field] | None = None
        self._desc = ""
        self._index: list[str] = []
        self._schema: pa.Schema | None = None
        self._writers: list[Any] = [None] * shard_num
        self._rows = [0] * shard_num
        self._pending: list[tuple[int, dict]] = []  # (rows, columns) not yet in a block
        self._pending_rows = 0
        self._block_rows: int | None = None
        self._blocks = 0
        self._done = False

    # ------------------------------------------------------------------ schema
    def add_schema(self, content: dict, desc: str | None = None) -> int:
        """Set the schema ``{field: {"type": t, "shape": [...]}}``; returns its id (0).

        Types: int32, int64, float32, float64, string, bytes; numeric fields with a ``shape``
        hold arrays (one ``-1`` allows any length along that axis).
        """
        self._check_open()
        if self._fields is not None:
            raise ValueError("FileWriter.add_schema: the schema is already set (one per file)")
        self._fields = parse_schema(content)
        self._desc = desc or ""
        self._schema = arrow_schema(self._fields, self._desc)
        return 0

    def add_index(self, index_fields: Sequence[str]) -> None:
        """Record fields to index (scalar int/float/string fields), kept in the manifest."""
        self._check_open()
        fields = {f.name: f for f in self._require_schema("add_index")}
        for name in index_fields:
            field = fields.get(name)
            if field is None or field.is_array or field.type == "bytes":
                raise ValueError(
                    f"FileWriter.add_index: '{name}' is not a scalar field of the "
                    f"schema. Fields: {list(fields)}"
                )
        self._index = list(index_fields)

    # ------------------------------------------------------------------ rows
    def write_raw_data(self, raw_data: Sequence[dict], parallel_writer: bool = False) -> None:
        """Add rows (dicts with every schema field). Full blocks go to their shard at once;
        with ``parallel_writer`` the shards of one call are written on parallel threads."""
        self._check_open()
        fields = self._require_schema("write_raw_data")
        if isinstance(raw_data, dict) or not isinstance(raw_data, (list, tuple)):
            raise TypeError(
                "FileWriter.write_raw_data: raw_data must be a list of dicts. "
                f"Received: {type(raw_data).__name__}"
            )
        names = {f.name for f in fields}
        checked: dict[str, list] = {f.name: [] for f in fields}
        for k, row in enumerate(raw_data):
            if not isinstance(row, dict):
                raise TypeError(f"FileWriter.write_raw_data: row {k} is not a dict")
            missing = names - row.keys()
            if missing:
                raise ValueError(
                    f"FileWriter.write_raw_data: row {k} lacks field(s) {sorted(missing)}"
                )
            for f in fields:
                checked[f.name].append(check_value(f, row[f.name], k))
        if raw_data:
            self._add_chunk(
                len(raw_data),
                {f.name: column_of(f, checked[f.name]) for f in fields},
                parallel_writer,
            )

    def write_columns(self, columns: dict[str, Any], parallel_writer: bool = False) -> None:
        """Add rows given column by column: ``columns[field]`` holds one value per row (a list,
        or an array whose first axis is the row). Much faster than ``write_raw_data`` for many
        small rows: values are checked and packed per column, not per row."""
        self._check_open()
        fields = self._require_schema("write_columns")
        missing = {f.name for f in fields} - columns.keys()
        if missing:
            raise ValueError(f"FileWriter.write_columns: missing field(s) {sorted(missing)}")
        lengths = {name: len(columns[name]) for name in (f.name for f in fields)}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"FileWriter.write_columns: columns differ in length: {lengths}")
        n = next(iter(lengths.values()))
        if n:
            self._add_chunk(
                n, {f.name: checked_column(f, columns[f.name]) for f in fields}, parallel_writer
            )

    def _add_chunk(self, n: int, chunk: dict[str, Any], parallel: bool) -> None:
        self._pending.append((n, chunk))
        self._pending_rows += n
        if self._block_rows is None:
            self._block_rows = self._choose_block_rows(chunk, n)
        blocks = []
        while self._pending_rows >= self._block_rows:
            blocks.append(self._take(self._block_rows))
        self._write_blocks(blocks, parallel)

    def _take(self, count: int) -> dict[str, Any]:
        """The first ``count`` pending rows, as one chunk."""
        parts, taken = [], 0
        while taken < count:
            n, chunk = self._pending[0]
            need = count - taken
            if n <= need:
                parts.append(chunk)
                self._pending.pop(0)
                taken += n
            else:
                parts.append({k: v[:need] for k, v in chunk.items()})
                self._pending[0] = (n - need, {k: v[need:] for k, v in chunk.items()})
                taken += need
        self._pending_rows -= count
        if len(parts) == 1:
            return parts[0]
        return {k: _concat([p[k] for p in parts]) for k in parts[0]}

    def _choose_block_rows(self, chunk: dict[str, Any], n: int) -> int:
        size = 0
        for field in self._fields:
            column = chunk[field.name]
            if isinstance(column, np.ndarray):
                size += column[:1].nbytes
            elif isinstance(column, pa.Array):
                size += len(column[0].as_py())
            else:
                first = column[0]
                size += first.nbytes if isinstance(first, np.ndarray) else len(first)
        return int(max(1, min(MAX_BLOCK_ROWS, BLOCK_BYTES // max(size, 1))))

    def _record_batch(self, chunk: dict[str, Any]) -> pa.RecordBatch:
        columns = []
        for field in self._fields:
            values = chunk[field.name]
            if isinstance(values, pa.Array):
                columns.append(values)
            elif field.type in ("string", "bytes") or field.shape is None:
                columns.append(pa.array(values, type=field.arrow_type()))
            elif field.fixed_size is not None:
                flat = pa.array(values.reshape(-1))
                columns.append(pa.FixedSizeListArray.from_arrays(flat, field.fixed_size))
            else:
                offsets = np.zeros(len(values) + 1, dtype=np.int64)
                np.cumsum([v.size for v in values], out=offsets[1:])
                flat = pa.array(np.concatenate(values) if values else np.zeros(0, field.dtype))
                columns.append(pa.LargeListArray.from_arrays(pa.array(offsets), flat))
        return pa.RecordBatch.from_arrays(columns, schema=self._schema)

    def _writer(self, shard: int) -> Any:
        if self._writers[shard] is None:
            self._writers[shard] = pa.ipc.new_file(self._temp[shard], self._schema)
        return self._writers[shard]

    def _write_blocks(self, blocks: list[dict], parallel: bool) -> None:
        by_shard: dict[int, list[dict]] = {}
        for block in blocks:
            by_shard.setdefault(self._blocks % self.shard_num, []).append(block)
            self._blocks += 1

        def write(shard: int) -> None:
            writer = self._writer(shard)
            for block in by_shard[shard]:
                batch = self._record_batch(block)
                writer.write_batch(batch)
                self._rows[shard] += batch.num_rows

        if parallel and len(by_shard) > 1:
            with ThreadPoolExecutor(min(len(by_shard), os.cpu_count() or 1)) as pool:
                list(pool.map(write, by_shard))
        else:
            for shard in by_shard:
                write(shard)

    # ------------------------------------------------------------------ commit
    def commit(self) -> None:
        """Write the last rows, make every file durable, then publish the data set atomically."""
        self._check_open()
        self._require_schema("commit")
        if self._pending_rows:
            self._write_blocks([self._take(self._pending_rows)], parallel=False)
        for i in range(self.shard_num):
            self._writer(i).close()  # a shard with no rows still gets its schema

        def seal(i: int) -> dict:  # durable, then checksummed from the page cache
            _fsync(self._temp[i])
            return {
                "file": os.path.basename(self.paths[i]),
                "rows": self._rows[i],
                "bytes": os.path.getsize(self._temp[i]),
                "crc32": crc32_of(self._temp[i]),
            }

        with ThreadPoolExecutor(min(self.shard_num, os.cpu_count() or 1)) as pool:
            shards = list(pool.map(seal, range(self.shard_num)))
        manifest = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "schema": {f.name: f.to_dict() for f in self._fields},
            "desc": self._desc,
            "index_fields": self._index,
            "rows": sum(self._rows),
            "block_rows": self._block_rows or 1,
            "shards": shards,
        }
        with open(self._temp_manifest, "w") as f:
            json.dump(manifest, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        for temp, final in zip(self._temp, self.paths):
            os.replace(temp, final)
        os.replace(self._temp_manifest, self.manifest)  # the commit point
        _fsync(os.path.dirname(self.manifest))
        self._done = True
        self._cleanup.detach()

    def abort(self) -> None:
        """Give up: remove the temporary files; nothing of this data set becomes visible."""
        for writer in self._writers:
            if writer is not None:
                try:
                    writer.close()
                except Exception:  # a half-written file is removed just below
                    pass
        self._cleanup()
        self._done = True

    def _check_open(self) -> None:
        if self._done:
            raise ValueError(f"FileWriter: '{self.file_name}' is already committed")

    def _require_schema(self, method: str) -> list[Field]:
        if self._fields is None:
            raise ValueError(f"FileWriter.{method}: call add_schema first")
        return self._fields
