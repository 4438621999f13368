"""MindSpore 2.10 parity of MindDataset: version 2.0 MindRecord files (written by MindSpore
before 0.5), schemas of array fields alone and the column order, against MindSpore's answers
recorded by tests/fixtures/mindrecord/make_fixtures.py."""

from __future__ import annotations

import base64
import json
import pickle
from collections import Counter
from itertools import pairwise

import msgpack
import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.record.mindrecord import MindRecordReader
from jisu.dataset.record.mindrecord_values import _blob_value, _Corrupt
from jisu.dataset.record.schema import Field
from jisu.dataset.record.validate import MalformedFileError

from .mindrecord_files import (
    FIXTURES,
    copy_set,
    header_of,
    row_records,
    snapshot,
    write_header,
)

V2_SETS = [("v2_all", "v2_all.mindrecord0", 200), ("v2_one_blob", "v2_one_blob.mindrecord", 30)]


def expected(name: str) -> list[dict]:
    return json.loads((FIXTURES / f"{name}.mindrecord.expected.json").read_text())


def assert_matches(value: np.ndarray, spec: dict) -> None:
    """A value as MindSpore read it: a str, bytes (MindSpore drops trailing zero bytes) or an
    array of the dtype, shape and values it gave."""
    if "str" in spec:
        assert str(value) == spec["str"]
    elif "bytes" in spec:
        assert value.dtype == np.uint8 and value.ndim == 1
        assert value.tobytes().rstrip(b"\0") == base64.b64decode(spec["bytes"])
    else:
        assert str(value.dtype) == spec["dtype"] and list(value.shape) == spec["shape"]
        assert value.ravel().tolist() == spec["values"]


@pytest.mark.parametrize("name, first, rows", V2_SETS, ids=[s[0] for s in V2_SETS])
def test_version_2_files_read_as_mindspore_reads_them(name, first, rows):
    header = header_of(FIXTURES / first)
    assert header["version"] == "2.0" and "compression_size" not in header
    data = ds.MindDataset(str(FIXTURES / first), shuffle=False)
    reference = expected(name)
    assert data.get_dataset_size() == len(reference) == rows
    assert data.get_col_names() == list(reference[0])
    got = list(data.create_dict_iterator(num_epochs=1, output_numpy=True))
    for row, ref in zip(got, reference, strict=True):
        assert list(row) == list(ref)
        for column, spec in ref.items():
            assert_matches(row[column], spec)


def test_version_2_integer_arrays_span_their_full_range():
    """The fixture's int32 arrays hold both int32 limits: read plain, not decompressed."""
    data = ds.MindDataset(str(FIXTURES / "v2_all.mindrecord0"), columns_list=["ids"])
    values = np.concatenate([r[0] for r in data.create_tuple_iterator(output_numpy=True)])
    assert values.dtype == np.int32
    assert values.min() == -(2**31) and values.max() == 2**31 - 1


def test_version_2_shards_shuffle_and_shard_like_version_3_ones():
    path = str(FIXTURES / "v2_all.mindrecord1")  # any shard opens the whole set
    parts = [
        [
            float(r[0])
            for r in ds.MindDataset(
                path, columns_list=["score"], num_shards=3, shard_id=k, shuffle=ds.Shuffle.FILES
            ).create_tuple_iterator(num_epochs=1, output_numpy=True)
        ]
        for k in range(3)
    ]
    scores = [spec["score"]["values"][0] for spec in expected("v2_all")]
    assert [len(p) for p in parts] == [67, 67, 67]  # ceil(200 / 3), the last wraps around
    extra = Counter(parts[0] + parts[1] + parts[2]) - Counter(scores)
    assert set(parts[0] + parts[1] + parts[2]) == set(scores) and sum(extra.values()) == 1


def test_shards_of_two_versions_are_refused(tmp_path):
    """MindSpore 2.10 refuses shards whose headers differ; a 3.0 shard among 2.0 ones would
    read its integer arrays wrongly."""
    first, second = copy_set(tmp_path, "v2_all")
    header = header_of(second)
    header["version"] = "3.0"
    write_header(second, header)
    with pytest.raises(MalformedFileError, match=r"has MindRecord version 3.0, but .* has 2.0"):
        MindRecordReader(str(first))


def test_a_version_2_array_of_partial_values_is_an_error():
    """Plain integer bytes must be whole values (and fit the shape), as float arrays must."""
    field = Field("ids", "int64", [-1])
    assert _blob_value(field, memoryview(bytes(16)), compressed=False).tolist() == [0, 0]
    with pytest.raises(_Corrupt, match="7 bytes are not a whole number of int64 values"):
        _blob_value(field, memoryview(bytes(7)), compressed=False)
    with pytest.raises(_Corrupt, match="3 values do not fit the shape"):
        _blob_value(Field("m", "int32", [2]), memoryview(bytes(12)), compressed=False)


def test_a_version_2_file_reads_the_same_after_pickling():
    reader = MindRecordReader(str(FIXTURES / "v2_one_blob.mindrecord"))
    assert snapshot(pickle.loads(pickle.dumps(reader))) == snapshot(reader)


# ------------------------------------------------------------------------- column order
ORDER = json.loads((FIXTURES / "column_order.json").read_text())


def write_order_set(path: str) -> None:
    writer = ds.FileWriter(path)
    writer.add_schema({name: spec for name, spec in zip(ORDER["schema"], SPECS, strict=True)})
    writer.write_raw_data(
        [{"label": 1, "data": b"x", "Zeta": np.zeros(2, np.float32), "_id": 2, "b2": "s"}]
    )
    writer.commit()


SPECS = [
    {"type": "int32"},
    {"type": "bytes"},
    {"type": "float32", "shape": [2]},
    {"type": "int64"},
    {"type": "string"},
]


def test_jisu_files_yield_mindspores_column_order(tmp_path):
    """MindSpore's MindDataset yields a file's columns sorted by name (its header keeps the
    schema as a sorted JSON object), not in add_schema's order: a script unpacking the
    tuples must get the same columns from jisu's FileWriter's files."""
    path = str(tmp_path / "order.rec")
    write_order_set(path)
    assert ORDER["schema"] != ORDER["default"]  # the fixture's fields are not sorted
    data = ds.MindDataset(path, shuffle=False)
    assert data.get_col_names() == ORDER["default"]
    (row,) = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    by_name = dict(zip(ORDER["default"], row, strict=True))
    assert by_name["label"] == 1 and by_name["data"].tobytes() == b"x" and by_name["b2"] == "s"
    (row,) = data.create_dict_iterator(num_epochs=1, output_numpy=True)
    assert list(row) == ORDER["default_dict"]


@pytest.mark.parametrize("columns", list(ORDER["columns_list"]))
def test_columns_list_keeps_its_own_order_as_in_mindspore(tmp_path, columns):
    path = str(tmp_path / "order.rec")
    write_order_set(path)
    data = ds.MindDataset(path, columns_list=columns.split(","), shuffle=False)
    assert data.get_col_names() == ORDER["columns_list"][columns]


def test_mindspores_own_files_keep_their_sorted_order():
    data = ds.MindDataset(str(FIXTURES / "all_types.mindrecord"), shuffle=False)
    names = data.get_col_names()
    assert names == sorted(names) and len(names) == 10


# ---------------------------------------------------------------------- shuffle levels
RAW_ONLY = str(FIXTURES / "raw_only.mindrecord0")


def file_of() -> dict[float, int]:
    """Each row's shard file, by its unique score, from the unshuffled read."""
    reader = ds.MindDataset(RAW_ONLY, columns_list=["score"], shuffle=False).reader
    return {float(reader[i][0]): k for k in range(2) for i in reader.shard_indices(k)}


def scores(shuffle, epochs: int = 2, **kwargs) -> list[list[float]]:
    data = ds.MindDataset(RAW_ONLY, columns_list=["score"], shuffle=shuffle, **kwargs)
    it = data.create_tuple_iterator(num_epochs=epochs, output_numpy=True)
    return [[float(r[0]) for r in it] for _ in range(epochs)]


def test_mindrecord_files_and_infile_shuffles_follow_mindspores_rules():
    """As MindSpore 2.10 does: FILES puts the shard files in a new order, each file's rows
    contiguous and in order; INFILE keeps the files in order and shuffles within each."""
    ds.config.set_seed(4)
    unshuffled = scores(False, 1)[0]
    files = file_of()
    by_file = [[s for s in unshuffled if files[s] == k] for k in range(2)]
    for rows in scores(ds.Shuffle.FILES, 3):
        assert rows in (by_file[0] + by_file[1], by_file[1] + by_file[0])
    for rows in scores(ds.Shuffle.INFILE):
        cut = len(by_file[0])
        assert sorted(rows[:cut]) == sorted(by_file[0]) and rows[:cut] != by_file[0]
        assert sorted(rows[cut:]) == sorted(by_file[1])


def test_mindrecord_shards_deal_the_shuffled_order_round_robin():
    """MindSpore 2.10 deals rows to shards round-robin after the FILES/INFILE shuffle: shard
    k of one epoch holds positions k, k + n, ... of one order, which keeps FILES' blocks."""
    ds.config.set_seed(9)
    files = file_of()
    for shuffle in (ds.Shuffle.FILES, ds.Shuffle.INFILE):
        parts = [scores(shuffle, 1, num_shards=2, shard_id=k)[0] for k in range(2)]
        assert len(parts[0]) == len(parts[1]) == 150
        order = [v for pair in zip(*parts, strict=True) for v in pair]
        assert sorted(order) == sorted(files)
        if shuffle is ds.Shuffle.FILES:  # the merged order is whole files, one after the other
            changes = sum(files[a] != files[b] for a, b in pairwise(order))
            assert changes == 1


def test_a_header_that_lost_its_only_raw_field_is_refused(tmp_path):
    """Found by the header fuzzer on v2_one_blob: with no scalar field left in the schema, the
    rows' raw records (which still hold 'label') must be checked, not skipped."""
    paths = copy_set(tmp_path, "v2_one_blob")
    header = header_of(paths[0])
    del header["schema"][0]["schema"]["label"]
    write_header(paths[0], header)
    with pytest.raises(MalformedFileError, match=r"raw record holds \['label'\], which the schema"):
        snapshot(MindRecordReader(str(paths[0])))


# ------------------------------------------------------------ a schema of blob fields alone
BLOB_ONLY = FIXTURES / "blob_only.mindrecord"


def raw_records(path) -> list[bytes]:
    """Each row's raw record (the bytes after its 8-byte length), where MindSpore's index says."""
    data = path.read_bytes()
    return [data[begin + 8 : end] for begin, end in (r["raw"] for r in row_records(path))]


def test_a_schema_of_array_fields_alone_reads_as_mindspore_reads_it():
    """Issue 51, bug 1: MindSpore 2.10's FileWriter gives every row of a schema without any
    scalar field a raw record all the same, a map holding only ``id`` (0), a field that the
    schema does not name; MindSpore's MindDataset reads the file (yielding the blob fields
    alone), so jisu must too, not refuse it as a hostile file."""
    header = header_of(BLOB_ONLY)["schema"][0]
    assert sorted(header["blob_fields"]) == sorted(header["schema"])  # no raw field
    assert set(raw_records(BLOB_ONLY)) == {msgpack.packb({"id": 0})}
    data = ds.MindDataset(str(BLOB_ONLY), shuffle=False)
    reference = expected("blob_only")
    assert data.get_dataset_size() == len(reference) == 12
    assert data.get_col_names() == list(reference[0])
    got = list(data.create_dict_iterator(num_epochs=1, output_numpy=True))
    for row, ref in zip(got, reference, strict=True):
        assert list(row) == list(ref)
        for column, spec in ref.items():
            assert_matches(row[column], spec)


@pytest.mark.parametrize(
    "record, named",
    [({"ie": 0}, r"holds \['ie'\], which the schema does not name"), ({"id": 7}, "'id' 7")],
    ids=["another_name", "another_id"],
)
def test_a_schema_of_blobs_alone_refuses_any_other_raw_record(tmp_path, record, named):
    """Only MindSpore's own placeholder (``{"id": 0}``) is accepted where the schema has no
    scalar field: a raw record of another name or value is a field the header does not name
    (as in a header that lost its only scalar field), refused as before."""
    (path,) = copy_set(tmp_path, "blob_only")
    data = bytearray(path.read_bytes())
    new = msgpack.packb(record)
    for begin, end in (r["raw"] for r in row_records(path)):
        assert end - begin - 8 == len(new)  # the same length: the pages stay as they are
        data[begin + 8 : end] = new
    path.write_bytes(bytes(data))
    with pytest.raises(MalformedFileError, match=named):
        snapshot(MindRecordReader(str(path)))
