"""Behaviours where jisu once differed from MindSpore 2.10, against MindSpore's recorded output
(tests/fixtures/manifest_edges/make_fixtures.py)."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset import transforms as T
from tests.conftest import rows_of

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "manifest_edges")
with open(os.path.join(HERE, "expected.json"), encoding="utf-8") as _f:
    EDGES = json.load(_f)["edges"]


def encode(value):
    value = np.asarray(value)
    return {"dtype": str(value.dtype), "shape": list(value.shape), "values": value.ravel().tolist()}


# B1 ----------------------------------------------------------------- one-shot iterables
@pytest.mark.parametrize("name", ["zip", "generator_object", "iter", "map"])
def test_one_shot_iterator_replays(name):
    make = {
        "zip": lambda: zip([1, 2, 3], [4, 5, 6]),
        "iter": lambda: iter([1, 2, 3]),
        "map": lambda: map(int, [1, 2, 3]),
        "generator_object": lambda: (i for i in [1, 2, 3]),
    }[name]
    columns = ["x", "y"] if name == "zip" else ["x"]
    data = ds.GeneratorDataset(make(), columns, shuffle=False)
    it = data.create_tuple_iterator(output_numpy=True, num_epochs=2)
    try:
        epochs = [[int(r[0]) for r in it] for _ in range(2)]
    finally:
        it.close()
    # MindSpore repeats zip and generator objects but gives iter()/map() an empty epoch 2;
    # jisu replays every one-shot iterator that was read to its end
    assert EDGES["one_shot"][name][0] == [1, 2, 3]
    assert epochs == [[1, 2, 3], [1, 2, 3]]
    assert rows_of(data) == [1, 2, 3]  # a new iterator too


def test_one_shot_iterator_not_read_to_end_is_an_error():
    data = ds.GeneratorDataset(iter([1, 2, 3]), ["x"], shuffle=False, num_samples=2)
    assert rows_of(data) == [1, 2]
    with pytest.raises(ValueError, match="one-shot iterator"):
        rows_of(data)


# B2 ----------------------------------------------------------------- OneHot
@pytest.mark.parametrize("name", sorted(EDGES["onehot"]))
def test_onehot_shapes_match_mindspore(name):
    label = {
        "scalar": np.array(2),
        "shape_1": np.array([2]),
        "shape_1_1": np.array([[2]]),
        "shape_2": np.array([2, 1]),
        "shape_1_2": np.array([[2, 1]]),
        "shape_2_1": np.array([[2], [1]]),
        "uint8": np.array([1], np.uint8),
    }[name]
    assert encode(T.OneHot(4)(label)) == EDGES["onehot"][name]


# B3 ----------------------------------------------------------------- Fill
@pytest.mark.parametrize(
    "name, value, dtype",
    [("uint8_255", 255, "uint8"), ("int32_2.7", 2.7, "int32"), ("float32_1e40", 1e40, "float32")],
)
def test_fill_in_range_matches_mindspore(name, value, dtype):
    with np.errstate(over="ignore"):
        assert encode(T.Fill(value)(np.array([1, 2], dtype))) == EDGES["fill"][name]


@pytest.mark.parametrize(
    "name, value, dtype",
    [("uint8_-1", -1, "uint8"), ("uint8_300", 300, "uint8"), ("int8_200", 200, "int8")],
)
def test_fill_out_of_range_is_an_error(name, value, dtype):
    assert EDGES["fill"][name]["values"][0] != value  # MindSpore wraps it silently
    with pytest.raises(ValueError, match=f"fill_value {value} does not fit the input's dtype"):
        T.Fill(value)(np.array([1, 2], dtype))
    with pytest.raises(ValueError, match="does not fit"):
        T.Fill(float("nan"))(np.array([1], np.uint8))


# B4 ----------------------------------------------------------------- ImageFolder {}
@pytest.mark.parametrize("name, ci", [("none", None), ("empty", {}), ("b_only", {"b": 0})])
def test_image_folder_class_indexing(name, ci):
    data = ds.ImageFolderDataset(
        os.path.join(HERE, "image_folder"), class_indexing=ci, shuffle=False
    )
    assert rows_of(data, 1) == EDGES["image_folder"][name]["labels"]
    assert data.get_class_indexing() == EDGES["image_folder"][name]["class_indexing"]


# B5 ----------------------------------------------------------------- ragged NumpySlices
@pytest.mark.parametrize(
    "data, where",
    [([[1, 2], [3]], "data is ragged"), ({"a": [[1, 2], [3]]}, "data['a'] is ragged"),
     (([[1, 2], [3]], [1, 2]), "data[0] is ragged")],
)  # fmt: skip
def test_numpy_slices_ragged_is_a_clear_error(data, where):
    assert len(EDGES["ragged"]) == 2  # MindSpore reads each row as its own array
    with pytest.raises(ValueError, match="NumpySlicesDataset: " + re.escape(where)):
        ds.NumpySlicesDataset(data)


# B6 ----------------------------------------------------------------- empty MindRecord shards
@pytest.mark.parametrize(
    "shard", ["one_row.mindrecord0", "one_row.mindrecord1", "one_row.mindrecord2"]
)
def test_mindrecord_with_empty_shards(shard):
    data = ds.MindDataset(os.path.join(HERE, shard), shuffle=False)
    got = [[encode(r[1]), r[0].tobytes().decode()] for r in _rows(data)]
    assert got == EDGES["mindrecord"][shard]


def test_mindrecord_only_empty_shards():
    sizes = EDGES["mindrecord"]["sizes"]
    empty = [os.path.join(HERE, f) for f, size in sizes.items() if size < 1000]
    assert len(empty) == 2
    data = ds.MindDataset(empty, shuffle=False)
    assert len(_rows(data)) == EDGES["mindrecord"]["only_empty_shards"] == 0


def _rows(data):
    it = data.create_tuple_iterator(output_numpy=True, num_epochs=1)
    try:
        return list(it)
    finally:
        it.close()


# B7 ----------------------------------------------------------------- concat dtypes
@pytest.mark.parametrize(
    "name, a, b, error",
    [
        ("int32_int64", np.array([1, 2], np.int32), np.array([3], np.int64), TypeError),
        ("int32_float32", np.array([1, 2], np.int32), np.array([3.5], np.float32), TypeError),
        ("rank", np.array([[1, 2]], np.int32), np.array([3], np.int32), ValueError),
        ("same", np.array([1], np.int32), np.array([2], np.int32), None),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_concat_checks_types(name, a, b, error, stream):
    first = ds.NumpySlicesDataset({"x": a}, shuffle=False)
    if stream:  # an iterable input: the concat streams
        first = ds.GeneratorDataset(lambda: iter([(v,) for v in a]), ["x"])
    data = first + ds.NumpySlicesDataset({"x": b}, shuffle=False)
    if error is None:
        assert EDGES["concat"][name] is None
        assert len(rows_of(data, None)) == len(a) + len(b)
        return
    assert "Concat" in EDGES["concat"][name]
    with pytest.raises(error, match="column 'x'"):
        rows_of(data, None)
    batched = first + ds.NumpySlicesDataset({"x": b}, shuffle=False)
    with pytest.raises(error, match="column 'x'"):
        rows_of(batched.batch(4), None)


def test_concat_strings_of_any_length():
    a = ds.NumpySlicesDataset({"x": np.array(["a"])}, shuffle=False)
    b = ds.NumpySlicesDataset({"x": np.array(["bcd"])}, shuffle=False)
    assert rows_of(a + b) == ["a", "bcd"]
