"""MindRecord files written by MindSpore 2.10 (tests/fixtures/mindrecord) read without it."""

from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import sqlite3
import struct
from contextlib import closing

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.record.mindrecord import MindRecordReader, decode_ints
from jisu.dataset.record.validate import MalformedFileError

from .mindrecord_files import FIXTURES, copy_set, header_of, snapshot


def expected(name: str) -> list[dict]:
    """Rows as MindSpore's own MindDataset read them back (made by make_fixtures.py)."""
    return json.loads((FIXTURES / f"{name}.expected.json").read_text())


def assert_matches(value: np.ndarray, spec: dict) -> None:
    if "str" in spec:
        assert str(value) == spec["str"]
    elif "bytes" not in spec:
        assert str(value.dtype) == spec["dtype"] and list(value.shape) == spec["shape"]
        assert value.ravel().tolist() == spec["values"]


def test_all_field_types_match_what_mindspore_reads():
    data = ds.MindDataset(str(FIXTURES / "all_types.mindrecord"), shuffle=False)
    rows = list(data.create_dict_iterator(num_epochs=1, output_numpy=True))
    reference = expected("all_types.mindrecord")
    assert len(rows) == len(reference) == 12
    for i, (row, ref) in enumerate(zip(rows, reference)):
        assert set(row) == set(ref)
        for name, spec in ref.items():
            assert_matches(row[name], spec)
        # bytes: compared with what make_fixtures.py wrote; MindSpore's own read-back returns
        # them as a NumPy bytes string, which drops trailing zero bytes (b"\x00" -> b"")
        assert row["data"].tobytes() == bytes(range(i % 7))
        assert base64.b64decode(ref["data"]["bytes"]) == bytes(range(i % 7)).rstrip(b"\0")


def test_two_shards_and_many_pages_in_mindspore_order():
    data = ds.MindDataset(str(FIXTURES / "raw_only.mindrecord0"), shuffle=False)
    assert data.get_dataset_size() == 300
    assert data.reader.shard_rows[0] > 0 and data.reader.shard_rows[1] > 0
    rows = list(data.create_dict_iterator(num_epochs=1, output_numpy=True))
    for row, ref in zip(rows, expected("raw_only.mindrecord"), strict=True):
        for name, spec in ref.items():
            assert_matches(row[name], spec)


def test_columns_list_shuffle_and_shards_work_on_mindrecord():
    path = str(FIXTURES / "raw_only.mindrecord1")  # any shard opens the whole set
    parts = [
        [
            float(r[0])
            for r in ds.MindDataset(
                path, columns_list=["score"], num_shards=2, shard_id=k
            ).create_tuple_iterator(num_epochs=1, output_numpy=True)
        ]
        for k in range(2)
    ]
    assert sorted(parts[0] + parts[1]) == [i / 4 for i in range(300)]


def test_compressed_integer_arrays():
    payload = bytes.fromhex("0000000a1b0100012c0170110100000000000001000005ff072c01090a")
    decoded = decode_ints(memoryview(payload), np.dtype(np.int64))
    assert decoded.tolist() == [1, 300, 70000, 2**40, 5, -1, 7, 300, 9, 10]


def compress(values: list[int]) -> bytes:
    """MindSpore's integer compression (shard_column.cc, CompressInt), written independently:
    a big-endian count, 2-bit width codes MSB first, each value in its narrowest width."""
    widths = [
        next(w for w in (1, 2, 4, 8) if -(2 ** (8 * w - 1)) <= v < 2 ** (8 * w - 1)) for v in values
    ]
    codes = bytearray((len(values) + 3) // 4)
    for k, width in enumerate(widths):
        codes[k // 4] |= {1: 0, 2: 1, 4: 2, 8: 3}[width] << (6 - 2 * (k % 4))
    body = b"".join(v.to_bytes(w, "little", signed=True) for v, w in zip(values, widths))
    return len(values).to_bytes(4, "big") + bytes(codes) + body


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([np.int32, np.int64]), st.integers(0, 150), st.data())
def test_integer_decoding_matches_the_encoding(dtype, count, data):
    """Up to 64 values decode one by one, more vectorised: both against the encoding."""
    info = np.iinfo(dtype)
    values = data.draw(
        st.lists(st.integers(int(info.min), int(info.max)), min_size=count, max_size=count)
    )
    decoded = decode_ints(memoryview(compress(values)), np.dtype(dtype))
    assert decoded.dtype == np.dtype(dtype) and decoded.tolist() == values


def test_truncated_mindrecord_is_named(tmp_path):
    target = tmp_path / "all_types.mindrecord"
    shutil.copy(FIXTURES / "all_types.mindrecord", target)
    with open(target, "r+b") as f:
        f.truncate(os.path.getsize(target) - 100)
    with pytest.raises(MalformedFileError, match=r"all_types.mindrecord': is truncated") as info:
        ds.MindDataset(str(target))
    assert info.value.path == str(target)


def test_a_shard_without_rows_reads_as_zero_rows(tmp_path):
    """MindSpore 2.10 writes a shard that got no rows (2 shards, 1 row) as its JSON header
    with ``"page": null`` and nothing after it, not even the header's padding, and an index
    without rows; MindSpore reads such a data set without complaint."""
    first = copy_set(tmp_path, "raw_only")[0]
    header = header_of(first)
    header["page"] = None
    data = json.dumps(header, separators=(",", ":")).encode()
    first.write_bytes(struct.pack("<Q", len(data)) + data)
    with closing(sqlite3.connect(f"{first}.db")) as conn:
        conn.execute("DELETE FROM INDEXES")
        conn.commit()
    reader = MindRecordReader(str(first))
    assert reader.shard_rows == [0, 150]
    second_shard = expected("raw_only.mindrecord")[150:]  # MindSpore reads shard 0, then 1
    for i, ref in enumerate(second_shard):
        for value, name in zip(reader[i], reader.columns):
            assert_matches(value, ref[name])


def test_reader_pickles_and_reopens():
    reader = MindRecordReader(str(FIXTURES / "all_types.mindrecord"), ["ivec", "name"])
    again = pickle.loads(pickle.dumps(reader))
    assert snapshot(again) == snapshot(reader) and again.columns == ["ivec", "name"]
