"""FileWriter: pack rows into sharded Arrow IPC files, visible only at ``commit()``.

Layout of a data set written as ``FileWriter("train.rec", shard_num=4)`` (its names, the
manifest and the metadata keys are defined in :mod:`.format`):

* ``train.rec0`` .. ``train.rec3`` (``train.rec`` when ``shard_num=1``): Arrow IPC files, one
  record batch per block of rows; any Arrow reader opens them (``pyarrow.ipc.open_file``).
* ``train.rec.manifest.json``: format version, schema, rows, bytes and CRC-32 of every shard,
  ``block_rows``, the data set's ``id`` and its ``class_indexing``
  (:meth:`FileWriter.set_class_indexing`). Rows are dealt to the shards in blocks of
  ``block_rows`` (block ``k`` to shard ``k % shard_num``), so the written order can be rebuilt
  from the shards. Each shard's Arrow metadata names its place (``jisu.shard``: ``"k/n"``) and
  the data set's id, so a reader notices shards swapped or mixed in from another data set.

Commit protocol (a reader sees the old data set or the new one, never a mix, whenever the
writer dies; two writers of one name never both win):

* Files are written under temporary names ``<shard>.tmp-<pid>-<token>``, fsynced, then
  published. The manifest is published last and is the commit point.
* A first write (no file of the data set exists) publishes under the names above with
  ``os.link``, which fails if the name exists: without ``overwrite`` a second writer of the
  same name gets ``FileExistsError`` at commit, not only in its constructor.
* Replacing a data set (``overwrite=True``) writes the new shards under names that only the new
  manifest references, ``train.rec.g<pid>-<token>`` + shard number, replaces the manifest,
  then removes the shards the old manifest listed.
* A writer removes the leftovers of writers of its name that were killed (their process is
  gone): temporary files, and generation shards that the current manifest does not list.
"""

from __future__ import annotations

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

from ...files import host_tag
from .format import (
    DATASET_ID_KEY,
    MANIFEST_SUFFIX,
    SHARD_PLACE_KEY,
    class_indexing_problem,
    shard_files,
    write_manifest,
)
from .format import FORMAT as FORMAT  # re-exported (as X): defined here before format.py
from .format import FORMAT_VERSION as FORMAT_VERSION
from .format import MAX_MANIFEST_BYTES as MAX_MANIFEST_BYTES
from .format import generation_base as generation_base
from .format import read_manifest_json as read_manifest_json
from .publish import DataSetFiles, fsync_path, link_exclusive, remove_files
from .schema import Field, arrow_schema, check_value, checked_column, column_of, parse_schema
from .storage import is_url

BLOCK_BYTES = 4 << 20  # target size of one record batch
MAX_BLOCK_ROWS = 1024


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


class FileWriter:
    """Write a jisu record data set (MindRecord's ``FileWriter`` API).

    Args:
        file_name: path of the data set (the shard name when ``shard_num=1``).
        shard_num: number of shard files.
        overwrite: replace an existing data set of that name. Readers see the old data set
            until ``commit()`` publishes the new one, whenever the writer dies.
        storage_options: with a URL ``file_name`` (``s3://bucket/train.rec``, any fsspec
            URL), the filesystem's options (endpoint, credentials); see
            :mod:`jisu.dataset.record.remote` for how a remote data set is committed.

    Attributes:
        paths: the shard files (their final names once committed).
        removed_leftovers: ``(path, bytes freed)`` of the files of killed writers of this
            data set that the constructor removed (see the module docstring).

    Raises:
        FileExistsError: a file of the data set exists and ``overwrite`` is False (checked
            here and again, atomically, at ``commit()``).

    Example:
        >>> writer = FileWriter("train.rec", shard_num=2)
        >>> writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}})
        0
        >>> writer.write_raw_data([{"image": b"...", "label": 3}])
        >>> writer.commit()
    """

    def __init__(
        self,
        file_name: str,
        shard_num: int = 1,
        overwrite: bool = False,
        storage_options: dict | None = None,
    ) -> None:
        if not isinstance(file_name, (str, os.PathLike)) or not str(file_name):
            raise ValueError(f"FileWriter: file_name must be a path. Received: {file_name!r}")
        if isinstance(shard_num, bool) or not isinstance(shard_num, int) or not shard_num >= 1:
            raise ValueError(f"FileWriter: shard_num must be an int >= 1. Received: {shard_num!r}")
        self._remote = None
        if is_url(file_name):  # files are staged locally, uploaded at commit (see remote.py)
            from .remote_writer import RemoteTarget

            self._remote = RemoteTarget(file_name, shard_num, overwrite, storage_options)
            weakref.finalize(self, self._remote.cleanup)
            file_name = self._remote.name
        self.file_name = os.path.abspath(os.fspath(file_name))
        self.shard_num = shard_num
        self.paths = shard_files(self.file_name, shard_num)
        self.manifest = self.file_name + MANIFEST_SUFFIX
        if not overwrite and self._remote is None:
            DataSetFiles(self.file_name).remove_orphan_manifest(self.paths)
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
        self.overwrite = bool(overwrite)
        self._files = DataSetFiles(self.file_name)
        self.removed_leftovers = self._files.remove_leftovers()
        self._token = f"{os.getpid()}-{host_tag()}{secrets.token_hex(4)}"
        self._temp = [f"{p}.tmp-{self._token}" for p in self.paths]
        self._temp_manifest = f"{self.manifest}.tmp-{self._token}"
        self._cleanup = weakref.finalize(self, remove_files, [*self._temp, self._temp_manifest])
        self._fields: list[Field] | None = None
        self._desc = ""
        self._index: list[str] = []
        self._class_indexing: dict[str, int] = {}
        self._schema: pa.Schema | None = None
        self._writers: list[Any] = [None] * shard_num
        self._rows = [0] * shard_num
        self._pending: list[tuple[int, dict]] = []  # (rows, columns) not yet in a block
        self._pending_rows = 0
        self._block_rows: int | None = None
        self._blocks = 0
        self._done = False
        self.bytes_written = 0  # the shards' bytes, once committed
        if self._remote is not None:
            self.file_name, self.manifest = self._remote.url, self._remote.manifest
            self.paths = shard_files(self.file_name, shard_num)  # generation URLs at commit

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

    def set_class_indexing(self, class_indexing: dict[str, int]) -> None:
        """Record ``{class name: label}`` in the manifest, for ``RecordDataset``'s
        ``get_class_indexing()`` (``jisu convert`` records an image folder's; by default a
        data set has none, ``{}``).

        Raises:
            ValueError: not a dict of str to int labels in [0, 2**31) (bools are not labels),
                or more than :data:`~.format.MAX_MANIFEST_CLASSES` classes.
        """
        self._check_open()
        problem = class_indexing_problem(class_indexing)
        if problem is not None:
            raise ValueError(f"FileWriter.set_class_indexing: {problem}")
        self._class_indexing = dict(class_indexing)

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
            # the shard's place and data set ride in its metadata (see the module docstring)
            place = {SHARD_PLACE_KEY: f"{shard}/{self.shard_num}", DATASET_ID_KEY: self._token}
            schema = self._schema.with_metadata({**self._schema.metadata, **place})
            self._writers[shard] = pa.ipc.new_file(self._temp[shard], schema)
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
        """Write the last rows, make every file durable, then publish the data set atomically.

        Raises:
            FileExistsError: without ``overwrite``, a file of the data set appeared since the
                constructor (another writer committed first). Nothing of this writer stays.
        """
        self._check_open()
        self._require_schema("commit")
        if self._pending_rows:
            self._write_blocks([self._take(self._pending_rows)], parallel=False)
        for i in range(self.shard_num):
            self._writer(i).close()  # a shard with no rows still gets its schema

        def seal(i: int) -> dict:  # durable, then checksummed from the page cache
            fsync_path(self._temp[i])
            return {
                "rows": self._rows[i],
                "bytes": os.path.getsize(self._temp[i]),
                "crc32": crc32_of(self._temp[i]),
            }

        with ThreadPoolExecutor(min(self.shard_num, os.cpu_count() or 1)) as pool:
            sealed = list(pool.map(seal, range(self.shard_num)))
        replacing = self.overwrite and any(os.path.lexists(p) for p in [self.manifest, *self.paths])
        try:
            if self._remote is not None:
                self.paths = self._remote.publish(self, sealed)
            elif replacing:
                self._replace(sealed)
            else:
                self._publish_first(sealed)
        except FileExistsError:
            self.abort()
            raise
        self._done = True
        self.bytes_written = sum(s["bytes"] for s in sealed)
        self._cleanup.detach()
        if self._remote is not None:
            self._remote.cleanup()

    def _write_manifest(self, paths: list[str], sealed: list[dict]) -> None:
        """The manifest listing shards ``paths`` (rows, bytes, crc32 in ``sealed``), written
        durably under its temporary name."""
        write_manifest(
            self._temp_manifest,
            data_set_id=self._token,
            fields=self._fields,
            desc=self._desc,
            index_fields=self._index,
            class_indexing=self._class_indexing,
            block_rows=self._block_rows or 1,
            shards=paths,
            sealed=sealed,
        )

    def _publish_first(self, sealed: list[dict]) -> None:
        """Publish under the plain names, each only if it does not exist (``os.link``), the
        manifest last. If a name exists, undo what this writer published and fail, or, with
        ``overwrite``, replace the data set instead."""
        self._write_manifest(self.paths, sealed)
        published = []
        target = ""
        try:
            for temp, target in zip(self._temp, self.paths):
                published.append((temp, target, link_exclusive(temp, target)))
            fsync_path(self._files.directory)  # the shards' names are durable before the manifest
            target = self.manifest
            link_exclusive(self._temp_manifest, target)
        except FileExistsError:
            # names this writer created: nobody else can have replaced them since
            for temp, final, moved in published:
                if moved:
                    os.replace(final, temp)
                else:
                    remove_files([final])
            if self.overwrite:
                self._replace(sealed)
                return
            raise FileExistsError(
                f"FileWriter.commit: '{target}' already exists (another writer committed a "
                "data set of this name first); pass overwrite=True to replace it"
            ) from None
        fsync_path(self._files.directory)
        remove_files([*self._temp, self._temp_manifest])  # the published names keep the data

    def _replace(self, sealed: list[dict]) -> None:
        """Replace the data set: new shards under generation names that only the new manifest
        lists, the manifest replaced (the commit point), then the old shards removed."""
        generation = f"{self.file_name}.g{self._token}"
        paths = shard_files(generation, self.shard_num)
        self._write_manifest(paths, sealed)
        for temp, final in zip(self._temp, paths):
            os.replace(temp, final)  # names of this writer alone: nothing is replaced
        fsync_path(self._files.directory)  # the shards' names are durable before the manifest
        old = self._files.listed_shards() or set()
        os.replace(self._temp_manifest, self.manifest)  # the commit point
        fsync_path(self._files.directory)
        self.paths = paths
        current = {os.path.basename(p) for p in paths}
        remove_files([os.path.join(self._files.directory, n) for n in sorted(old - current)])

    def abort(self) -> None:
        """Give up: remove the temporary files; nothing of this data set becomes visible."""
        for writer in self._writers:
            if writer is not None:
                try:
                    writer.close()
                except Exception:  # a half-written file is removed just below
                    pass
        self._cleanup()
        if self._remote is not None:
            self._remote.cleanup()
        self._done = True

    def _check_open(self) -> None:
        if self._done:
            raise ValueError(f"FileWriter: '{self.file_name}' is already committed")

    def _require_schema(self, method: str) -> list[Field]:
        if self._fields is None:
            raise ValueError(f"FileWriter.{method}: call add_schema first")
        return self._fields
