"""Reading jisu record data sets: manifest checks, memory-mapped shards, zero-copy rows."""

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
import pyarrow.ipc

from .schema import Field, select_fields
from .writer import FORMAT, FORMAT_VERSION, MANIFEST_SUFFIX, crc32_of

_verified: dict[tuple[str, int, int], int] = {}  # (path, size, mtime_ns) -> crc, per process
_verified_lock = threading.Lock()


def find_manifest(path: str) -> str | None:
    """The manifest of a data set named by its manifest, its name, or one of its shards."""
    path = os.path.abspath(path)
    if path.endswith(MANIFEST_SUFFIX):
        return path
    candidates = [path + MANIFEST_SUFFIX]
    stripped = path.rstrip("0123456789")
    if stripped != path:
        candidates.append(stripped + MANIFEST_SUFFIX)
    for candidate in candidates:
        if os.path.exists(candidate):
            return candidate
    return None


def _check_shard(path: str, entry: dict, manifest: str, verify: bool) -> None:
    if not os.path.exists(path):
        raise FileNotFoundError(f"RecordDataset: shard '{path}' listed in '{manifest}' is missing")
    stat = os.stat(path)
    if stat.st_size != entry["bytes"]:
        raise ValueError(
            f"RecordDataset: shard '{path}' has {stat.st_size} bytes but '{manifest}' says "
            f"{entry['bytes']}: it is truncated or was replaced"
        )
    if not verify:
        return
    key = (path, stat.st_size, stat.st_mtime_ns)
    with _verified_lock:
        crc = _verified.get(key)
    if crc is None:
        crc = crc32_of(path)
        with _verified_lock:
            _verified[key] = crc
    if crc != entry["crc32"]:
        raise ValueError(
            f"RecordDataset: shard '{path}' does not match its checksum in '{manifest}' "
            f"(crc32 {crc:08x}, expected {entry['crc32']:08x}): it was altered or corrupted"
        )


class _Columns:
    """NumPy views of one record batch's columns (zero-copy where Arrow allows)."""

    def __init__(self, batch: pa.RecordBatch, fields: list[Field]) -> None:
        self.getters = []
        for field in fields:
            column = batch.column(field.name)
            self.getters.append(self._getter(field, column))

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

    Opening checks the manifest: every shard must exist, have the recorded size and, with
    ``verify``, the recorded CRC-32 (computed once per file and process, in parallel).
    Rows are read from memory-mapped shards; numeric arrays and bytes are views of the file.
    The reader is thread-safe and pickles by path (worker processes reopen the files).
    """

    def __init__(
        self, manifest: str, columns: Sequence[str] | None = None, verify: bool = True
    ) -> None:
        self.manifest_path = manifest
        try:
            with open(manifest) as f:
                self.manifest = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(f"RecordDataset: manifest '{manifest}' is missing") from None
        except (OSError, ValueError) as exc:
            raise ValueError(f"RecordDataset: manifest '{manifest}' is unreadable: {exc}") from exc
        if (
            self.manifest.get("format") != FORMAT
            or self.manifest.get("version", 0) > FORMAT_VERSION
        ):
            raise ValueError(
                f"RecordDataset: '{manifest}' is not a jisu record manifest of "
                f"version <= {FORMAT_VERSION}"
            )
        schema = self.manifest["schema"]
        self.all_fields = [
            Field(name, spec["type"], spec.get("shape")) for name, spec in schema.items()
        ]
        self.fields = select_fields(self.all_fields, columns)
        self.columns = [f.name for f in self.fields]
        directory = os.path.dirname(manifest)
        self.shard_paths = [os.path.join(directory, s["file"]) for s in self.manifest["shards"]]
        self.shard_rows = [int(s["rows"]) for s in self.manifest["shards"]]
        self.block_rows = int(self.manifest["block_rows"])
        self.verify = verify
        entries = self.manifest["shards"]
        for path, entry in zip(self.shard_paths, entries):  # cheap checks first, all shards
            if not os.path.exists(path) or os.path.getsize(path) != entry["bytes"]:
                _check_shard(path, entry, manifest, verify=False)
        if verify:
            with ThreadPoolExecutor(min(8, len(entries))) as pool:  # zlib releases the GIL
                list(
                    pool.map(
                        lambda pe: _check_shard(*pe, manifest, True), zip(self.shard_paths, entries)
                    )
                )
        self._open()

    def _open(self) -> None:
        self._readers = []
        self._batch_starts = []
        for path, rows in zip(self.shard_paths, self.shard_rows):
            try:
                reader = pa.ipc.open_file(pa.memory_map(path, "r"))
            except (pa.ArrowInvalid, OSError) as exc:
                raise ValueError(
                    f"RecordDataset: shard '{path}' is not a readable Arrow file: {exc}"
                ) from exc
            sizes = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
            if sum(sizes) != rows:
                raise ValueError(
                    f"RecordDataset: shard '{path}' holds {sum(sizes)} rows, "
                    f"the manifest says {rows}"
                )
            self._readers.append(reader)
            self._batch_starts.append([0, *itertools.accumulate(sizes)])
        self._views: dict[tuple[int, int], _Columns] = {}

    def __getstate__(self) -> dict:
        state = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("_readers", "_views", "_batch_starts")
        }
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._open()  # already verified by the process that pickled it

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

    def _columns(self, shard: int, batch: int) -> _Columns:
        views = self._views.get((shard, batch))
        if views is None:
            views = _Columns(self._readers[shard].get_batch(batch), self.fields)
            self._views[(shard, batch)] = views
        return views

    def __getitem__(self, index: int) -> tuple:
        if not 0 <= index < len(self):
            raise IndexError(f"RecordDataset: row {index} out of range [0, {len(self)})")
        shard, local = self.locate(int(index))
        starts = self._batch_starts[shard]
        batch = bisect.bisect_right(starts, local) - 1
        views = self._views.get((shard, batch)) or self._columns(shard, batch)
        j = local - starts[batch]
        return tuple(get(j) for get in views.getters)
