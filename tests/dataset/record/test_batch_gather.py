"""A record source right below a batch gathers the batch's rows straight into its arrays
(``record/gather.py``), and a fetch stage whose work holds the GIL runs on one thread.

The expectation is independent of the reader: every row's values are a formula of its label
(the row's number in the written order), so each batch is checked against that formula.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.core.cpus import CPUS_ENV
from jisu.dataset.engine.plan import plan
from jisu.dataset.record import arrow_file
from jisu.dataset.record.gather import gather
from jisu.dataset.record.reader import RecordReader
from jisu.dataset.record.validate import MalformedFileError

SCHEMA = {
    "blob": {"type": "bytes"},
    "image": {"type": "float32", "shape": [2, 3]},
    "label": {"type": "int64"},
}


def blob(k: int, length: int) -> bytes:
    return bytes((k * 7 + i) % 251 for i in range(length))


def image(k: int) -> np.ndarray:
    return np.arange(6, dtype=np.float32).reshape(2, 3) + k


def write(path, rows: int, shards: int, length, chunk: int = 37) -> str:
    """``rows`` rows in ``shards`` shards, written ``chunk`` rows at a time (so the shards hold
    many record batches); ``length(k)``: row ``k``'s blob length."""
    writer = ds.FileWriter(str(path), shard_num=shards, overwrite=True)
    writer.add_schema(SCHEMA)
    for start in range(0, rows, chunk):
        writer.write_raw_data(
            [
                {"blob": blob(k, length(k)), "image": image(k), "label": k}
                for k in range(start, min(rows, start + chunk))
            ]
        )
    writer.commit()
    return str(path)


def check_batch(columns, labels_expected=None) -> None:
    """Each row of a batch against the formula of its label."""
    blobs, images, labels = (np.asarray(c) for c in columns)
    assert blobs.dtype == np.uint8 and images.dtype == np.float32 and labels.dtype == np.int64
    if labels_expected is not None:
        assert labels.tolist() == list(labels_expected)
    for row, k in enumerate(labels.tolist()):
        assert blobs[row].tobytes() == blob(k, blobs.shape[1])
        np.testing.assert_array_equal(images[row], image(k))


@pytest.fixture(params=["in memory", "by pread"])
def copies(request, monkeypatch):
    """Record batches kept in memory (the copy budget) or read row by row from the file."""
    if request.param == "by pread":
        monkeypatch.setattr(arrow_file, "COPY_COLUMN_BYTES", 16)
        monkeypatch.setattr(arrow_file, "COPY_BUDGET_BYTES", 0)
    return request.param


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rows=st.integers(1, 300),
    shards=st.integers(1, 4),
    length=st.integers(0, 300),
    picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=70),
)
def test_a_gather_gives_the_rows_asked_for_in_their_order(
    tmp_path, copies, rows, shards, length, picks
):
    path = write(tmp_path / f"d{rows}-{shards}-{length}.rec", rows, shards, lambda k: length)
    reader = RecordReader(path + ".manifest.json")
    indices = np.array([p % rows for p in picks])
    columns = gather(reader, indices)
    assert columns is not None and [len(c) for c in columns] == [len(indices)] * 3
    assert columns[0].shape == (len(indices), length)
    check_batch(columns, indices.tolist())  # the written order: global row i is label i


@pytest.mark.parametrize("rows, shards, chunk", [(1, 3, 1), (700, 4, 37), (2500, 3, 400)])
def test_many_rows_are_located_as_each_row_is(tmp_path, monkeypatch, rows, shards, chunk):
    """``locate_many`` against the one-row ``locate`` and the shard's batch starts."""
    from jisu.dataset.record import writer as writer_module

    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 64)  # blocks dealt to the shards
    path = write(tmp_path / "d.rec", rows, shards, lambda k: 5, chunk=chunk)
    reader = RecordReader(path + ".manifest.json")
    indices = np.random.default_rng(rows).integers(0, rows, 300)
    got = reader.locate_many(indices)
    for i, shard, batch, row in zip(indices.tolist(), *(a.tolist() for a in got)):
        expected_shard, local = reader.locate(i)
        starts = reader._batch_starts[expected_shard]
        assert shard == expected_shard
        assert starts[batch] <= local < starts[batch + 1] and row == local - starts[batch]


def test_rows_of_different_lengths_or_shapes_are_left_to_the_row_by_row_assembly(tmp_path):
    path = write(tmp_path / "mixed.rec", 60, 2, lambda k: 10 + k % 3)
    reader = RecordReader(path + ".manifest.json")
    assert gather(reader, np.array([0, 1, 2])) is None  # lengths 10, 11, 12
    same = gather(reader, np.array([0, 3, 57]))  # all of length 10
    assert same is not None
    check_batch(same, [0, 3, 57])
    with pytest.raises(IndexError, match="row 60 out of range"):
        gather(reader, np.array([5, 60]))

    text = tmp_path / "text.rec"
    writer = ds.FileWriter(str(text), shard_num=1)
    writer.add_schema({"name": {"type": "string"}, "ids": {"type": "int64", "shape": [-1]}})
    writer.write_raw_data([{"name": "ab", "ids": np.arange(2)} for _ in range(4)])
    writer.commit()
    reader = RecordReader(str(text) + ".manifest.json")
    assert gather(reader, np.array([0, 1])) is None  # text and variable-shape columns
    batches = list(
        ds.RecordDataset(str(text), shuffle=False).batch(2).create_tuple_iterator(output_numpy=True)
    )
    assert [b[0].tolist() for b in batches] == [["ab", "ab"], ["ab", "ab"]]


@pytest.mark.parametrize("shuffle", [True, ds.Shuffle.FILES, False])
def test_batches_of_a_record_source_hold_every_row_once_with_its_own_values(
    tmp_path, copies, shuffle
):
    """Batched or not, an epoch has the same rows in the same order (the seed is the same)."""
    path = write(tmp_path / "data.rec", 500, 3, lambda k: 64)
    data = ds.RecordDataset(path, shuffle=shuffle, num_shards=2, shard_id=1).batch(16)
    seen = []
    for columns in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
        check_batch(columns)
        seen += columns[2].tolist()
    # the rows unbatched (read one by one, in the same epoch order): the same labels
    rows = ds.RecordDataset(path, shuffle=shuffle, num_shards=2, shard_id=1)
    assert seen == [int(r[2]) for r in rows.create_tuple_iterator(output_numpy=True)]
    assert len(set(seen)) == len(seen) == 250


def test_a_shard_truncated_while_it_is_read_fails_naming_the_shard_and_the_sample(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(arrow_file, "COPY_COLUMN_BYTES", 16)
    monkeypatch.setattr(arrow_file, "COPY_BUDGET_BYTES", 0)
    path = write(tmp_path / "data.rec", 3000, 2, lambda k: 500)
    with open(path + ".manifest.json") as f:
        shards = json.load(f)["shards"]
    assert all(shard["rows"] > 0 for shard in shards)
    data = ds.RecordDataset(path, shuffle=False).batch(50)
    second = os.path.join(tmp_path, shards[1]["file"])
    with open(second, "r+b") as f:  # after the open: the reads find it short
        f.truncate(1000)
    with pytest.raises(MalformedFileError, match=shards[1]["file"]) as info:
        for _ in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
            pass
    # blocks of 1024 rows dealt to the shards in turn: row 1024 is the second shard's first
    assert "RecordDataset: reading source[1024] failed" in str(info.value)


# ------------------------------------------------------------------ one thread for GIL work
@pytest.fixture
def four_cpus(monkeypatch):
    """Plans made as on 4 CPUs (the default width of an op left to jisu is then 4)."""
    monkeypatch.setenv(CPUS_ENV, "4")


def stage_of(data):
    (stage,) = plan(data).stages
    return stage


def test_a_fetch_stage_of_small_local_rows_runs_on_one_thread(tmp_path, four_cpus):
    small = write(tmp_path / "small.rec", 100, 2, lambda k: 4096)
    data = ds.RecordDataset(small).batch(8)
    assert stage_of(data).workers == 1
    text = data.explain()
    assert "stage batch#2 (fetch): 1 thread" in text
    assert "1 thread, not 4: its work holds the GIL" in text
    # what the user asks for is what runs
    assert stage_of(ds.RecordDataset(small).batch(8, num_parallel_workers=3)).workers == 3
    assert stage_of(ds.RecordDataset(small, num_parallel_workers=2).batch(8)).workers == 2
    assert stage_of(ds.RecordDataset(small, shuffle=False).skip(3).take(50).batch(8)).workers == 1
    # work that releases the GIL (a map's ops, a per_batch_map) keeps the stage wide
    assert (
        stage_of(ds.RecordDataset(small).map(lambda b: b, input_columns="blob").batch(8)).workers
        == 4
    )
    assert stage_of(ds.RecordDataset(small).batch(8, per_batch_map=lambda *c: c)).workers == 4
    # so do sources that do not say their reads hold the GIL
    assert stage_of(ds.NumpySlicesDataset({"x": np.arange(40)}).batch(8)).workers == 4


def test_large_rows_keep_the_default_width(tmp_path, four_cpus):
    large = write(tmp_path / "large.rec", 12, 2, lambda k: 100 << 10)
    assert RecordReader(large + ".manifest.json").local_row_bytes > 64 << 10
    assert stage_of(ds.RecordDataset(large).batch(4)).workers == 4
    batches = list(ds.RecordDataset(large).batch(4).create_tuple_iterator(output_numpy=True))
    for columns in batches:
        check_batch(columns)
    assert sorted(k for b in batches for k in b[2].tolist()) == list(range(12))


def test_a_source_whose_rows_never_gather_stops_trying(tmp_path, monkeypatch):
    """Bytes of different lengths (JPEGs) never gather: after 8 batches of a run the batches
    are read row by row without trying, with the same rows."""
    import jisu.dataset.sources.record as record_source

    calls = []

    def counted(reader, indices):
        calls.append(len(indices))
        return gather(reader, indices)

    monkeypatch.setattr(record_source, "gather", counted)
    path = write(tmp_path / "mixed.rec", 400, 2, lambda k: 10 + k % 3)
    data = ds.RecordDataset(path, shuffle=False).batch(10, ragged=["blob"])
    batches = list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert len(batches) == 40 and len(calls) == 8
    for blobs, _, labels in batches:
        assert [r.tobytes() for r in blobs] == [blob(k, 10 + k % 3) for k in labels.tolist()]
    calls.clear()  # rows that do gather keep being gathered
    even = write(tmp_path / "even.rec", 400, 2, lambda k: 10)
    list(ds.RecordDataset(even).batch(10).create_tuple_iterator(num_epochs=1))
    assert len(calls) == 40
