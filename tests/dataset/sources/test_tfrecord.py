"""TFRecordDataset: files written by the ``tfrecord`` package, compared with what MindSpore 2.10
reads from them (tests/fixtures/tfrecord, made by make_fixtures.py; no MindSpore needed here)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.record.tfrecord_format import MappedFile, masked_crc
from jisu.dataset.record.validate import MalformedFileError
from jisu.dataset.sources.tfrecord import TFRecordDataset
from tests.conftest import rows_of

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tfrecord"
A = str(FIXTURES / "a.tfrecord")
B = str(FIXTURES / "b.tfrecord")
ALL = [*range(6), 100, 101, 102]


def expected(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.expected.json").read_text(encoding="utf-8"))


def as_spec(value: np.ndarray) -> dict:
    dtype = "str" if value.dtype.kind == "U" else value.dtype.str
    return {"dtype": dtype, "shape": list(value.shape), "values": value.tolist()}


def assert_like_mindspore(data: TFRecordDataset, name: str) -> None:
    ref = expected(name)
    assert data.get_col_names() == ref["columns"]
    assert data.get_dataset_size() == ref["size"]
    rows = [[as_spec(v) for v in row] for row in iter_rows(data)]
    assert rows == ref["rows"]


def iter_rows(data) -> list[tuple]:
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        return [tuple(row) for row in it]
    finally:
        it.close()


def schema() -> ds.Schema:
    s = ds.Schema()
    s.add_column("vec", np.float32, [3, 1])
    s.add_column("label", np.int32, [])
    s.add_column("name", str)
    s.add_column("ids", np.float64)
    return s


# ----------------------------------------------------------------- MindSpore's rows
@pytest.mark.parametrize(
    ("name", "files", "kwargs"),
    [
        ("plain", [A], {}),
        ("gzip", [str(FIXTURES / "a.tfrecord.gz")], {"compression_type": "GZIP"}),
        ("zlib", [str(FIXTURES / "a.tfrecord.zlib")], {"compression_type": "ZLIB"}),
        ("two_files", [B, A], {"columns_list": ["name", "label"]}),
        ("schema_file", [A], {"schema": str(FIXTURES / "schema.json")}),
        ("num_samples", [B, A], {"columns_list": ["label"], "num_samples": 4}),
        *[
            (
                f"equal_rows_{k}",
                [B, A],
                {
                    "columns_list": ["label"],
                    "num_shards": 3,
                    "shard_id": k,
                    "shard_equal_rows": True,
                },
            )
            for k in range(3)
        ],
        *[
            (
                f"file_shards_{k}",
                [B, A],
                {"columns_list": ["label"], "num_shards": 2, "shard_id": k},
            )
            for k in range(2)
        ],
    ],
)
def test_rows_match_mindspore(name, files, kwargs):
    assert_like_mindspore(TFRecordDataset(files, shuffle=False, **kwargs), name)


def test_schema_object_and_columns_list_match_mindspore():
    assert_like_mindspore(TFRecordDataset(A, schema=schema(), shuffle=False), "schema")
    data = TFRecordDataset(A, schema=schema(), columns_list=["label", "vec"], shuffle=False)
    assert_like_mindspore(data, "schema_columns")


def test_glob_pattern_reads_files_sorted():
    data = TFRecordDataset(str(FIXTURES / "?.tfrecord"), columns_list=["label"], shuffle=False)
    assert rows_of(data) == [[i] for i in range(6)] + [[100 + i] for i in range(3)]


# ----------------------------------------------------------------- shuffle and shards
def labels(data) -> list[int]:
    return [r[0] for r in rows_of(data)]


@pytest.mark.parametrize("shuffle", [True, ds.Shuffle.GLOBAL, ds.Shuffle.FILES, ds.Shuffle.INFILE])
def test_shuffle_is_a_deterministic_permutation(shuffle):
    def read():
        return labels(TFRecordDataset([A, B], columns_list=["label"], shuffle=shuffle))

    ds.config.set_seed(7)
    first = read()
    ds.config.set_seed(7)
    assert read() == first
    assert sorted(first) == ALL
    if shuffle is ds.Shuffle.FILES:  # whole files, each in order
        assert first in ([*range(6), 100, 101, 102], [100, 101, 102, *range(6)])
    if shuffle is ds.Shuffle.INFILE:
        assert sorted(first[:6]) == list(range(6)) and sorted(first[6:]) == [100, 101, 102]


def test_equal_row_shards_partition_the_rows_under_shuffle():
    parts = [
        labels(
            TFRecordDataset(
                [A, B], columns_list=["label"], num_shards=3, shard_id=k, shard_equal_rows=True
            )
        )
        for k in range(3)
    ]
    assert all(len(p) == 3 for p in parts)
    assert sorted(v for p in parts for v in p) == ALL


def test_shard_arguments_are_checked():
    with pytest.raises(ValueError, match=r"TFRecordDataset: .*at least num_shards files"):
        TFRecordDataset([A, B], num_shards=3, shard_id=0)
    with pytest.raises(ValueError, match="TFRecordDataset: shard_id"):
        TFRecordDataset([A, B], num_shards=2, shard_id=2)
    with pytest.raises(TypeError, match="TFRecordDataset: shard_equal_rows"):
        TFRecordDataset([A, B], num_shards=2, shard_id=0, shard_equal_rows=1)


# ----------------------------------------------------------------- arguments
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"compression_type": "gzip"}, ValueError, "compression_type must be one of"),
        ({"compression_type": 1}, ValueError, "compression_type must be one of"),
        ({"cache": object()}, ValueError, "cache is not supported"),
        ({"num_samples": -1}, ValueError, "num_samples"),
        ({"num_samples": "3"}, TypeError, "num_samples"),
        ({"shuffle": "yes"}, TypeError, "shuffle"),
        ({"columns_list": ["nope"]}, ValueError, "columns_list"),
        ({"columns_list": []}, ValueError, "columns_list"),
        ({"schema": 3}, TypeError, "schema"),
        ({"schema": "/nonexistent/schema.json"}, FileNotFoundError, "schema"),
    ],
)
def test_bad_arguments_name_the_op_and_argument(kwargs, error, match):
    with pytest.raises(error, match=f"TFRecordDataset: .*{match}|{match}"):
        TFRecordDataset(A, **kwargs)


def test_bad_dataset_files():
    with pytest.raises(FileNotFoundError, match="TFRecordDataset: no file matches"):
        TFRecordDataset(str(FIXTURES / "*.nothing"))
    with pytest.raises(ValueError, match="TFRecordDataset: dataset_files must not be empty"):
        TFRecordDataset([])
    with pytest.raises(TypeError, match="TFRecordDataset: dataset_files"):
        TFRecordDataset(3)
    with pytest.raises(FileNotFoundError, match=r"missing\.tfrecord"):
        TFRecordDataset([A, str(FIXTURES / "missing.tfrecord")])


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ({"numRows": 3}, '"columns" is required'),
        ({"columns": {}}, "is empty"),
        ({"foo": 1, "columns": {"label": {"type": "int64", "rank": 1}}}, "unknown field"),
        # (a column without a rank, or whose rank disagrees with its shape, is read as
        # MindSpore 2.10 reads it: tests/dataset/test_ms_names_checks_51.py)
        ({"columns": {"label": {"type": "long", "rank": 1}}}, "has type 'long'"),
        ({"columns": {"label": {"type": "int64", "rank": -1}}}, "rank -1"),
        ({"columns": {"label": {"type": "int64", "rank": 1, "foo": 0}}}, "unknown attribute"),
        ({"columns": {"vec": {"type": "float32", "rank": 1, "shape": ["3"]}}}, "shape"),
        ({"numRows": -1, "columns": {"label": {"type": "int64", "rank": 1}}}, "numRows"),
        ({"numRows": "3", "columns": {"label": {"type": "int64", "rank": 1}}}, "numRows"),
        ({"columns": [{"type": "int64", "rank": 1}]}, "string name"),
        ([1], "top level"),
    ],
)
def test_schema_file_is_parsed_strictly(tmp_path, doc, match):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(MalformedFileError, match=match) as info:
        TFRecordDataset(A, schema=str(path))
    assert str(path) in str(info.value)


def test_schema_file_list_form_and_rank_zero(tmp_path):
    path = tmp_path / "schema.json"
    columns = [
        {"name": "label", "type": "int16", "rank": 0},
        {"name": "name", "type": "string", "rank": 1},
    ]
    path.write_text(json.dumps({"columns": columns}))
    rows = rows_of(TFRecordDataset(A, schema=str(path), shuffle=False), None)
    assert rows[2] == [2, ["n2-é"]]


def test_schema_mismatches_fail_naming_file_and_record():
    s = ds.Schema()
    s.add_column("vec", np.float32, [2])
    with pytest.raises(Exception, match=r"record 0.*a\.tfrecord|a\.tfrecord.*record 0"):
        TFRecordDataset(A, schema=s, shuffle=False)
    s = ds.Schema()
    s.add_column("nosuch", np.int64)
    with pytest.raises(Exception, match="no feature 'nosuch'"):
        TFRecordDataset(A, schema=s, shuffle=False)
    s = ds.Schema()
    s.add_column("name", np.int32)
    with pytest.raises(Exception, match="bytes list"):
        TFRecordDataset(A, schema=s, shuffle=False)


def test_bytes_lists_pad_with_spaces_and_read_as_text():
    data = TFRecordDataset(A, columns_list=["blobs"], shuffle=False)
    assert rows_of(data)[2] == list(b"ab\0cc ")  # b"ab\0" and b"cc" padded to 3 bytes
    s = ds.Schema()
    s.add_column("blobs", np.uint8, [-1, 4])
    assert rows_of(TFRecordDataset(A, schema=s, shuffle=False))[1] == [
        list(b"ab\0 "),
        list(b"c   "),
    ]


# ----------------------------------------------------------------- damaged files
def record_bytes(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return (
        length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))
    )


def damaged(tmp_path: Path, change) -> str:
    raw = bytearray((FIXTURES / "a.tfrecord").read_bytes())
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(bytes(change(raw)))
    return str(path)


def flip(pos: int):
    def change(raw: bytearray) -> bytearray:
        raw[pos] ^= 1
        return raw

    return change


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (flip(9), "record 0 at byte 0 has a damaged length"),
        (lambda raw: raw[:-7], "is truncated"),
        (lambda raw: raw + b"\1\2\3", "is truncated"),
        (
            lambda raw: (
                struct.pack("<Q", 1 << 60)
                + struct.pack("<I", masked_crc(struct.pack("<Q", 1 << 60)))
                + raw
            ),
            "needs 1152921504606846976 data bytes",
        ),
    ],
)
def test_damaged_framing_fails_at_construction_naming_the_file(tmp_path, change, match):
    path = damaged(tmp_path, change)
    with pytest.raises(MalformedFileError, match=match) as info:
        TFRecordDataset(path, columns_list=["label"], shuffle=False)
    assert info.value.path == path


def test_damaged_data_fails_when_read_naming_file_and_record(tmp_path):
    raw = (FIXTURES / "a.tfrecord").read_bytes()
    second = MappedFile(A).offsets[1]
    path = damaged(tmp_path, flip(int(second) + 3))
    data = TFRecordDataset(path, columns_list=["label"], shuffle=False)
    assert len(raw) == (tmp_path / "bad.tfrecord").stat().st_size
    with pytest.raises(Exception, match=r"record 1 is damaged \(data CRC mismatch\)") as info:
        rows_of(data)
    assert path in str(info.value)


def test_wrong_compression_type_names_the_file(tmp_path):
    with pytest.raises(MalformedFileError, match="damaged length"):
        TFRecordDataset(str(FIXTURES / "a.tfrecord.gz"))
    with pytest.raises(MalformedFileError, match="not a valid ZLIB"):
        TFRecordDataset(str(FIXTURES / "a.tfrecord.gz"), compression_type="ZLIB")
    short = tmp_path / "short.gz"
    short.write_bytes((FIXTURES / "a.tfrecord.gz").read_bytes()[:-20])
    with pytest.raises(MalformedFileError, match="is truncated") as info:
        TFRecordDataset(str(short), compression_type="GZIP")
    assert info.value.path == str(short)


def test_empty_file_has_no_rows(tmp_path):
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    shutil.copy(A, tmp_path / "a.tfrecord")
    data = TFRecordDataset(str(tmp_path / "*.tfrecord"), columns_list=["label"], shuffle=False)
    assert labels(data) == list(range(6))


def test_rows_survive_pickling():
    import pickle

    reader = TFRecordDataset(A, shuffle=False).reader
    copy = pickle.loads(pickle.dumps(reader))
    assert [v.tolist() for v in copy[3]] == [v.tolist() for v in reader[3]]


# ----------------------------------------------------------------- fuzz
_EXAMPLE = (FIXTURES / "a.tfrecord").read_bytes()


@settings(max_examples=50, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=64).map(record_bytes),  # valid framing, arbitrary Example bytes
        st.binary(max_size=80),  # arbitrary bytes
        st.tuples(st.integers(0, len(_EXAMPLE) - 1), st.integers(1, 255)).map(
            lambda p: _EXAMPLE[: p[0]] + bytes([_EXAMPLE[p[0]] ^ p[1]]) + _EXAMPLE[p[0] + 1 :]
        ),
    )
)
def test_fuzzed_files_give_rows_or_clear_errors(tmp_path_factory, payload):
    path = tmp_path_factory.mktemp("fuzz") / "f.tfrecord"
    path.write_bytes(payload)
    try:
        data = TFRecordDataset(str(path), shuffle=False)
        rows_of(data, None)
    except (MalformedFileError, ValueError) as exc:
        assert str(path) in str(exc) or "no record" in str(exc)
    except RuntimeError as exc:  # a pipeline error wrapping the reader's MalformedFileError
        assert isinstance(exc.__cause__, MalformedFileError) or str(path) in str(exc)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"columns_list": ["label", "vec"]},
        {"schema": str(FIXTURES / "schema.json")},
        {"schema": schema()},
    ],
)
def test_a_batch_decoded_at_once_equals_its_rows_stacked(kwargs):
    """The batch path (every record of a batch decoded into stacked columns with one NumPy
    call per column) against the row path and the batch's own stacking."""
    rows = iter_rows(TFRecordDataset([A, B], shuffle=False, **kwargs))
    data = TFRecordDataset([A, B], shuffle=False, **kwargs)
    gathered = data.source.gather(np.arange(len(rows), dtype=np.int64))
    if gathered is None:  # a ragged or text column: the batch stacks the rows itself
        assert any(
            len({np.asarray(r[k]).shape for r in rows}) > 1
            or np.asarray(rows[0][k]).dtype.kind == "U"
            for k in range(len(rows[0]))
        )
        return
    for k, column in enumerate(gathered):
        np.testing.assert_array_equal(column, np.stack([np.asarray(r[k]) for r in rows]))
        assert column.dtype == np.asarray(rows[0][k]).dtype
    batches = list(data.batch(4).create_tuple_iterator(output_numpy=True))
    for b, batch in enumerate(batches):
        for k, column in enumerate(batch):
            np.testing.assert_array_equal(column, gathered[k][4 * b : 4 * b + 4])


def test_a_damaged_record_fails_on_the_batch_path_too(tmp_path):
    second = MappedFile(A).offsets[1]
    path = damaged(tmp_path, flip(int(second) + 3))
    data = TFRecordDataset(path, columns_list=["label"], shuffle=False).batch(2)
    with pytest.raises(Exception, match=r"record 1 is damaged \(data CRC mismatch\)"):
        rows_of(data)
