"""Copies of the MindRecord fixtures (written by MindSpore 2.10, or made from its files as
version 2.0 ones) to damage in tests, and what MindSpore's own ``.db`` index says about where
each row's bytes lie."""

from __future__ import annotations

import json
import shutil
import sqlite3
import struct
from contextlib import closing
from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mindrecord"
SETS = {
    "all_types": ["all_types.mindrecord"],
    "raw_only": ["raw_only.mindrecord0", "raw_only.mindrecord1"],
    # version 2.0 (integer arrays stored plain), made from MindSpore 2.10's files
    "v2_all": ["v2_all.mindrecord0", "v2_all.mindrecord1"],
    "v2_one_blob": ["v2_one_blob.mindrecord"],
    # array (blob) fields alone: MindSpore still writes each row a raw record, {"id": 0}
    "blob_only": ["blob_only.mindrecord"],
}


def copy_set(directory: Path, name: str) -> list[Path]:
    """Copy the fixture data set ``name`` (shards and ``.db`` indexes) into ``directory``;
    return its shards' paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for shard in SETS[name]:
        for suffix in ("", ".db"):
            shutil.copyfile(FIXTURES / (shard + suffix), directory / (shard + suffix))
        paths.append(directory / shard)
    return paths


def header_of(path: Path) -> dict:
    """A shard's JSON header."""
    data = path.read_bytes()
    (length,) = struct.unpack_from("<Q", data)
    return json.loads(data[8 : 8 + length])


def write_header(path: Path, header: dict) -> None:
    """Replace a shard's JSON header (in place: pages stay where they are), compact and with
    ``header_size`` first as MindSpore writes it, zero-filling what the old JSON held."""
    data = bytearray(path.read_bytes())
    (old,) = struct.unpack_from("<Q", data)
    new = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    data[0 : 8 + max(old, len(new))] = (
        struct.pack("<Q", len(new)) + new + bytes(max(old - len(new), 0))
    )
    path.write_bytes(bytes(data))


def row_records(path: Path) -> list[dict]:
    """Where MindSpore's index says each row of a shard lies: per row (in order) the file
    offsets of its raw and blob records (``raw``/``blob``: (length field, end))."""
    header = header_of(path)
    base, page = header["header_size"], header["page_size"]
    query = (
        "SELECT DISTINCT ROW_ID, PAGE_ID_RAW, PAGE_OFFSET_RAW, PAGE_OFFSET_RAW_END, "
        "PAGE_ID_BLOB, PAGE_OFFSET_BLOB, PAGE_OFFSET_BLOB_END FROM INDEXES ORDER BY ROW_ID"
    )
    with closing(sqlite3.connect(f"file:{path}.db?mode=ro", uri=True)) as conn:
        rows = conn.execute(query).fetchall()
    return [
        {
            "raw": (base + raw_page * page + raw_at, base + raw_page * page + raw_end),
            "blob": (base + blob_page * page + blob_at, base + blob_page * page + blob_end),
        }
        for _, raw_page, raw_at, raw_end, blob_page, blob_at, blob_end in rows
    ]


def snapshot(reader) -> list[tuple]:
    """Every row of a reader as comparable values: (dtype, shape, bytes) per column."""
    return [
        tuple((v.dtype.str, v.shape, v.tobytes()) for v in map(np.asarray, reader[i]))
        for i in range(len(reader))
    ]
