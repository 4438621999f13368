"""The jisu record format: round trips, shuffle modes, sharding, corruption, atomic commit."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.ipc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset import Shuffle
from jisu.dataset.record.validate import MalformedFileError
from tests.conftest import rows_of

SCHEMA = {
    "i32": {"type": "int32"},
    "i64": {"type": "int64"},
    "f32": {"type": "float32"},
    "f64": {"type": "float64"},
    "text": {"type": "string"},
    "blob": {"type": "bytes"},
    "image": {"type": "float32", "shape": [2, 3]},
    "ids": {"type": "int64", "shape": [-1]},
}


def make_row(k: int) -> dict:
    return {
        "i32": np.int32(-k),
        "i64": 2**40 + k,
        "f32": k / 3,
        "f64": k / 7,
        "text": f"行{k}",
        "blob": bytes(range(k % 9)),
        "image": np.arange(6, dtype=np.float32).reshape(2, 3) * k,
        "ids": np.arange(k % 5, dtype=np.int64) - k,
    }


def check_row(values: list, k: int) -> None:
    """Compare a read row with ``make_row(k)`` field by field (the independent expectation)."""
    row = dict(zip(SCHEMA, values))
    assert row["i32"].dtype == np.int32 and int(row["i32"]) == -k
    assert row["i64"].dtype == np.int64 and int(row["i64"]) == 2**40 + k
    assert row["f32"].dtype == np.float32 and float(row["f32"]) == np.float32(k / 3)
    assert row["f64"].dtype == np.float64 and float(row["f64"]) == k / 7
    assert str(row["text"]) == f"行{k}"
    assert row["blob"].dtype == np.uint8 and row["blob"].tobytes() == bytes(range(k % 9))
    np.testing.assert_array_equal(row["image"], np.arange(6).reshape(2, 3) * np.float32(k))
    np.testing.assert_array_equal(row["ids"], np.arange(k % 5) - k)


def write(path, rows: int, shards: int = 1, **kwargs) -> str:
    writer = ds.FileWriter(str(path), shard_num=shards, **kwargs)
    writer.add_schema(SCHEMA, "test")
    writer.add_index(["i32", "text"])
    for start in range(0, rows, 700):
        writer.write_raw_data([make_row(k) for k in range(start, min(rows, start + 700))])
    writer.commit()
    return str(path)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.integers(0, 2600), shards=st.integers(1, 5))
def test_round_trip_in_written_order(tmp_path_factory, rows, shards):
    path = write(tmp_path_factory.mktemp("rec") / "data.rec", rows, shards)
    data = ds.RecordDataset(path, shuffle=False)
    assert data.get_dataset_size() == rows
    got = rows_of(data, None)
    assert len(got) == rows
    for k in range(0, rows, max(1, rows // 50)):
        check_row(data.reader[k], k)
    assert [r[0] for r in got] == [-k for k in range(rows)]


def test_any_arrow_reader_opens_a_shard(tmp_path):
    path = write(tmp_path / "data.rec", 50, shards=2)
    table = pa.ipc.open_file(pa.memory_map(path + "0")).read_all()
    assert table.schema.names == list(SCHEMA)
    assert table.column("i32").to_pylist()[:3] == [0, -1, -2]
    assert json.loads(table.schema.metadata[b"jisu.schema"])["image"]["shape"] == [2, 3]


@pytest.mark.parametrize("mode", [True, Shuffle.GLOBAL, Shuffle.FILES, Shuffle.INFILE])
def test_shuffle_modes_read_every_row_once_per_epoch(tmp_path, mode):
    path = write(tmp_path / "data.rec", 3000, shards=3)
    data = ds.RecordDataset(path, columns_list=["i64"], shuffle=mode)
    it = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    epochs = [[int(r[0]) - 2**40 for r in it] for _ in range(2)]
    for order in epochs:
        assert sorted(order) == list(range(3000))
        assert order != list(range(3000))
    assert epochs[0] != epochs[1]
    reader = data.reader
    shard_of = {int(g): s for s in range(3) for g in reader.shard_indices(s)}
    runs = [shard_of[g] for g in epochs[0]]
    changes = sum(a != b for a, b in itertools.pairwise(runs))
    if mode in (Shuffle.FILES, Shuffle.INFILE):
        assert changes == 2  # shard after shard
        if mode is Shuffle.FILES:  # rows of a shard in their order
            for s in range(3):
                mine = [g for g in epochs[0] if shard_of[g] == s]
                assert mine == sorted(mine, key=lambda g: list(reader.shard_indices(s)).index(g))
    else:
        assert changes > 100


@pytest.mark.parametrize("num_shards", [1, 3, 7])
def test_sharding_gives_equal_counts_and_covers_every_row(tmp_path, num_shards):
    path = write(tmp_path / "data.rec", 100, shards=2)
    parts = [
        rows_of(ds.RecordDataset(path, columns_list=["i32"], num_shards=num_shards, shard_id=k))
        for k in range(num_shards)
    ]
    assert len({len(p) for p in parts}) == 1 and len(parts[0]) == -(-100 // num_shards)
    assert {-v for p in parts for v in p} == set(range(100))


def test_padded_samples_fill_the_last_shard(tmp_path):
    path = write(tmp_path / "data.rec", 10, shards=1)
    pad = make_row(999)
    parts = [
        rows_of(
            ds.RecordDataset(
                path,
                columns_list=["i32", "text"],
                shuffle=False,
                num_shards=4,
                shard_id=k,
                padded_sample=pad,
                num_padded=2,
            ),
            0,
        )
        for k in range(4)
    ]
    assert [len(p) for p in parts] == [3, 3, 3, 3]
    assert sorted(v for p in parts for v in p) == sorted([-999, -999] + [-k for k in range(10)])


def test_existing_name_needs_overwrite(tmp_path):
    path = write(tmp_path / "data.rec", 5)
    with pytest.raises(FileExistsError, match=r"'.*data.rec' already exists; pass overwrite"):
        ds.FileWriter(path)
    write(tmp_path / "data.rec", 7, overwrite=True)
    assert ds.RecordDataset(path).get_dataset_size() == 7


def test_bad_rows_are_refused_with_the_field_named(tmp_path):
    writer = ds.FileWriter(str(tmp_path / "bad.rec"))
    writer.add_schema(SCHEMA)
    row = make_row(1)
    row["image"] = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match=r"row 0, field 'image': expected shape \[2, 3\]"):
        writer.write_raw_data([row])
    with pytest.raises(ValueError, match=r"row 0 lacks field\(s\) \['text'\]"):
        writer.write_raw_data([{k: v for k, v in make_row(1).items() if k != "text"}])
    with pytest.raises(ValueError, match="field 'x' needs a type"):
        ds.FileWriter(str(tmp_path / "other.rec")).add_schema({"x": {"type": "complex64"}})


def test_truncated_shard_is_named(tmp_path):
    path = write(tmp_path / "data.rec", 300, shards=2)
    with open(path + "1", "r+b") as f:
        f.truncate(os.path.getsize(path + "1") - 10)
    with pytest.raises(
        MalformedFileError, match=r"data.rec1': shard has \d+ bytes but .* truncated"
    ):
        ds.RecordDataset(path)


def test_altered_byte_is_detected(tmp_path):
    path = write(tmp_path / "data.rec", 300, shards=2)
    with open(path + "0", "r+b") as f:
        f.seek(os.path.getsize(path + "0") // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(MalformedFileError, match=r"data.rec0': shard does not match its checksum"):
        ds.RecordDataset(path)


def test_deleted_shard_is_named(tmp_path):
    path = write(tmp_path / "data.rec", 300, shards=3)
    os.remove(path + "2")
    with pytest.raises(FileNotFoundError, match=r"'.*data.rec2' \(listed in .*\) does not exist"):
        ds.RecordDataset(path)


def test_a_writer_killed_before_commit_leaves_nothing_a_reader_accepts(tmp_path):
    script = textwrap.dedent(f"""
        import os, signal
        import numpy as np
        import jisu.dataset as ds
        w = ds.FileWriter({str(tmp_path / "data.rec")!r}, shard_num=2)
        w.add_schema({{"x": {{"type": "float32", "shape": [256]}}}})
        for _ in range(10):
            w.write_raw_data([{{"x": np.zeros(256, np.float32)}}] * 500)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    subprocess.run([sys.executable, "-c", script], timeout=60)
    leftovers = os.listdir(tmp_path)
    assert leftovers and all(".tmp-" in name for name in leftovers)
    with pytest.raises(FileNotFoundError, match="no jisu record manifest"):
        ds.RecordDataset(str(tmp_path / "data.rec"))
