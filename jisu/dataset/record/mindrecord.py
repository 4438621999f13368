"""Reading MindSpore's MindRecord files without MindSpore.

A MindRecord shard is: an 8-byte little-endian header length, a JSON header (schema, blob
fields, page table, the names of all shards), zero padding to ``header_size``, then pages of
``page_size`` bytes at ``header_size + page_id * page_size``. RAW_DATA pages hold, per row, an
8-byte little-endian length and a msgpack map of the scalar fields; BLOB_DATA pages hold, per
row, an 8-byte little-endian length and the blob fields (bytes and arrays) in ``blob_fields``
order, each behind an 8-byte big-endian length when there is more than one. int32/int64 arrays
are stored compressed: a 4-byte big-endian count, one 2-bit width code per value (MSB first;
1, 2, 4 or 8 bytes) and the values, little-endian and signed. Rows are read in page order,
shard after shard, which is MindSpore's unshuffled order. The SQLite ``.db`` index beside each
shard is not needed (its row count is cross-checked when present).
"""

from __future__ import annotations

import json
import mmap
import os
import sqlite3
import struct
from collections.abc import Sequence
from typing import Any

import msgpack
import numpy as np

from .schema import Field, select_fields

_WIDTH = {0: (1, "<i1"), 1: (2, "<i2"), 2: (4, "<i4"), 3: (8, "<i8")}


def is_mindrecord(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(24)
    except OSError:
        return False
    return len(head) == 24 and head[8:23] == b'{"header_size":'


def read_header(path: str) -> dict:
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        if size > 1 << 30:
            raise ValueError(f"MindRecord: '{path}' has an implausible header ({size} bytes)")
        try:
            return json.loads(f.read(size))
        except ValueError as exc:
            raise ValueError(f"MindRecord: '{path}' has a corrupt header: {exc}") from exc


def decode_ints(payload: memoryview, dtype: np.dtype) -> np.ndarray:
    """MindRecord's compressed int32/int64 arrays (see the module docstring)."""
    count = struct.unpack(">I", payload[:4])[0]
    codes_len = (count + 3) // 4
    codes = payload[4 : 4 + codes_len]
    out = np.empty(count, dtype=dtype)
    pos = 4 + codes_len
    for k in range(count):
        code = (codes[k // 4] >> (6 - 2 * (k % 4))) & 3
        width, fmt = _WIDTH[code]
        out[k] = np.frombuffer(payload, dtype=fmt, count=1, offset=pos)[0]
        pos += width
    if pos != len(payload):
        raise ValueError("MindRecord: a compressed integer array has trailing bytes")
    return out


class _Shard:
    def __init__(self, path: str, header: dict) -> None:
        self.path = path
        self.header = header
        with open(path, "rb") as f:
            self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.raw_rows = self._rows("RAW_DATA")
        self.blob_rows = self._rows("BLOB_DATA")

    def _rows(self, page_type: str) -> list[tuple[int, int]]:
        """(offset, length) of every row's record in pages of ``page_type``, in order."""
        header_size, page_size = self.header["header_size"], self.header["page_size"]
        pages = sorted(
            (p for p in self.header["page"] if p["page_type"] == page_type),
            key=lambda p: p["page_type_id"],
        )
        rows = []
        for page in pages:
            start = header_size + page["page_id"] * page_size
            end = start + page["page_size"]
            if end > len(self.map):
                raise ValueError(
                    f"MindRecord: '{self.path}' is truncated (page "
                    f"{page['page_id']} ends at {end}, file has {len(self.map)})"
                )
            pos = start
            while pos < end:
                (length,) = struct.unpack_from("<Q", self.map, pos)
                if pos + 8 + length > end:
                    raise ValueError(
                        f"MindRecord: '{self.path}': a row overruns page {page['page_id']}"
                    )
                rows.append((pos + 8, length))
                pos += 8 + length
        return rows


class MindRecordReader:
    """Random access to the rows of one or more MindRecord shards (same schema).

    Args:
        files: one shard (all shards named in its header are opened) or a list of shards.
        columns: fields to read, in order (default: all, in schema order).
    """

    def __init__(self, files: str | Sequence[str], columns: Sequence[str] | None = None) -> None:
        if isinstance(files, (str, os.PathLike)):
            first = os.path.abspath(os.fspath(files))
            header = read_header(first)
            directory = os.path.dirname(first)
            paths = [os.path.join(directory, name) for name in header["shard_addresses"]]
        else:
            paths = [os.path.abspath(os.fspath(p)) for p in files]
        for path in paths:
            if not os.path.exists(path):
                raise FileNotFoundError(f"MindRecord: shard '{path}' is missing")
        self.paths = paths
        headers = [read_header(p) for p in paths]
        schema = headers[0]["schema"][0]
        for path, header in zip(paths, headers):
            if header["schema"][0]["schema"] != schema["schema"]:
                raise ValueError(f"MindRecord: '{path}' has another schema than '{paths[0]}'")
        self.blob_fields = list(schema["blob_fields"])
        self.all_fields = [
            Field(name, spec["type"], spec.get("shape")) for name, spec in schema["schema"].items()
        ]
        self.fields = select_fields(self.all_fields, columns)
        self.columns = [f.name for f in self.fields]
        self._headers = headers
        self._open()

    def _open(self) -> None:
        self._shards = [_Shard(p, h) for p, h in zip(self.paths, self._headers)]
        for shard in self._shards:
            if self.blob_fields and len(shard.blob_rows) != len(shard.raw_rows):
                raise ValueError(
                    f"MindRecord: '{shard.path}' has {len(shard.raw_rows)} raw and "
                    f"{len(shard.blob_rows)} blob rows"
                )
            self._check_index(shard)
        self.shard_rows = [len(s.raw_rows) for s in self._shards]
        self._starts = np.concatenate([[0], np.cumsum(self.shard_rows)]).astype(np.int64)

    @staticmethod
    def _check_index(shard: _Shard) -> None:
        db = shard.path + ".db"
        if not os.path.exists(db):
            return
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                (count,) = conn.execute("SELECT COUNT(DISTINCT ROW_ID) FROM INDEXES").fetchone()
        except sqlite3.Error:
            return  # an index we cannot read is no reason to refuse the data
        if count != len(shard.raw_rows):
            raise ValueError(
                f"MindRecord: '{shard.path}' has {len(shard.raw_rows)} rows but its "
                f"index '{db}' lists {count}"
            )

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_shards", "_starts")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._open()

    def __len__(self) -> int:
        return int(self._starts[-1])

    def shard_indices(self, shard: int) -> np.ndarray:
        return np.arange(self._starts[shard], self._starts[shard + 1], dtype=np.int64)

    def __getitem__(self, index: int) -> tuple:
        if not 0 <= index < len(self):
            raise IndexError(f"MindRecord: row {index} out of range [0, {len(self)})")
        k = int(np.searchsorted(self._starts, index, side="right")) - 1
        shard = self._shards[k]
        local = index - int(self._starts[k])
        offset, length = shard.raw_rows[local]
        raw = msgpack.unpackb(shard.map[offset : offset + length], raw=False)
        blobs = self._blobs(shard, local) if self.blob_fields else {}
        return tuple(self._value(f, raw, blobs) for f in self.fields)

    def _blobs(self, shard: _Shard, local: int) -> dict[str, memoryview]:
        offset, length = shard.blob_rows[local]
        payload = memoryview(shard.map)[offset : offset + length]
        if len(self.blob_fields) == 1:
            return {self.blob_fields[0]: payload}
        out, pos = {}, 0
        for name in self.blob_fields:
            (size,) = struct.unpack_from(">Q", payload, pos)
            out[name] = payload[pos + 8 : pos + 8 + size]
            pos += 8 + size
        return out

    @staticmethod
    def _value(field: Field, raw: dict, blobs: dict[str, memoryview]) -> Any:
        if field.name in blobs:
            payload = blobs[field.name]
            if field.type == "bytes":
                return np.frombuffer(payload, dtype=np.uint8)
            if field.type in ("int32", "int64"):
                values = decode_ints(payload, field.dtype)
            else:
                values = np.frombuffer(payload, dtype=field.dtype.newbyteorder("<"))
            shape = field.shape if field.shape is not None else ()
            return values.reshape(shape) if shape else values.reshape(())
        value = raw[field.name]
        if field.type == "string":
            return np.array(value)
        if field.type == "bytes":
            return np.frombuffer(value, dtype=np.uint8)
        return np.array(value, dtype=field.dtype)
