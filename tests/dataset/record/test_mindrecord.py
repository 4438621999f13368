"""MindRecord files written by MindSpore 2.10 (tests/fixtures/mindrecord) read without it."""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.record.mindrecord import decode_ints

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mindrecord"


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


def test_truncated_mindrecord_is_named(tmp_path):
    target = tmp_path / "all_types.mindrecord"
    shutil.copy(FIXTURES / "all_types.mindrecord", target)
    with open(target, "r+b") as f:
        f.truncate(os.path.getsize(target) - 100)
    with pytest.raises(ValueError, match=r"'.*all_types.mindrecord' is truncated"):
        ds.MindDataset(str(target))
