"""Padding in ``padded_batch`` and ``bucket_batch_by_length`` against what MindSpore 2.10 gave
(tests/fixtures/pad_parity/expected.json, made by make_fixtures.py there; issue 51): ragged
int, float, string and bytes columns, ``pad_info={}``, long string pad values."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import jisu.dataset as ds

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "pad_parity")
with open(os.path.join(FIXTURES, "expected.json")) as _f:
    EXPECTED = json.load(_f)


def mixed():
    yield np.array([1, 2, 3], np.int32), np.array(["ab"]), np.array([0.5], np.float32)
    yield np.array([4], np.int32), np.array(["c", "defg"]), np.array([1.5, 2.5], np.float32)
    yield np.array([5, 6], np.int32), np.array(["hij", "k"]), np.array([3.5, 4.5, 5.5], np.float32)


def words():
    yield (np.array("a"),)
    yield (np.array("bcd"),)


def blobs():
    yield (np.array([b"ab"]),)
    yield (np.array([b"c", b"defg"]),)


SOURCES = {"mixed": (mixed, ["i", "s", "f"]), "words": (words, ["w"]), "blobs": (blobs, ["b"])}
NUMBERS = {"i": (None, 0), "f": (None, 0.0)}
BUCKETS = dict(column_names=["i"], bucket_boundaries=[2, 5], bucket_batch_sizes=[2, 2, 2])
CASES = {  # the same as make_fixtures.py's
    "bucket_pad_info_none": ("mixed", "bucket", dict(BUCKETS)),
    "bucket_pad_info_empty": ("mixed", "bucket", dict(BUCKETS, pad_info={})),
    "bucket_pad_info_empty_boundary": (
        "mixed",
        "bucket",
        dict(BUCKETS, pad_info={}, pad_to_bucket_boundary=True),
    ),
    "bucket_names_one_column": ("mixed", "bucket", dict(BUCKETS, pad_info={"i": (None, -1)})),
    "bucket_shape_none_boundary": (
        "mixed",
        "bucket",
        dict(
            BUCKETS,
            pad_info={"i": (None, -1), "s": (None, "-"), "f": (None, 0.0)},
            pad_to_bucket_boundary=True,
        ),
    ),
    "bucket_shape_list_boundary": (
        "mixed",
        "bucket",
        dict(
            BUCKETS,
            pad_info={"i": ([None], -1), "s": (None, "-"), "f": (None, 0.0)},
            pad_to_bucket_boundary=True,
        ),
    ),
    "bucket_string_long_pad": (
        "mixed",
        "bucket",
        dict(BUCKETS, pad_info={"s": (None, "PAD_VALUE"), **NUMBERS}),
    ),
    "padded_pad_info_empty": ("mixed", "padded", dict(batch_size=3, pad_info={})),
    "padded_string_long_pad": (
        "mixed",
        "padded",
        dict(batch_size=3, pad_info={"s": (None, "PAD_VALUE"), **NUMBERS}),
    ),
    "padded_string_long_pad_shape": (
        "mixed",
        "padded",
        dict(batch_size=3, pad_info={"s": ([3], "PAD_VALUE"), **NUMBERS}),
    ),
    "padded_string_empty_pad": (
        "mixed",
        "padded",
        dict(batch_size=3, pad_info={"s": (None, ""), **NUMBERS}),
    ),
    "padded_string_number_pad": (
        "mixed",
        "padded",
        dict(batch_size=3, pad_info={"s": (None, 0), **NUMBERS}),
    ),
    "padded_number_string_pad": (
        "mixed",
        "padded",
        dict(batch_size=3, pad_info={"s": (None, "-"), "i": (None, "7"), "f": (None, 0.0)}),
    ),
    "padded_scalar_strings": (
        "words",
        "padded",
        dict(batch_size=2, pad_info={"w": (None, "LONG")}),
    ),
    "padded_bytes_long_pad": (
        "blobs",
        "padded",
        dict(batch_size=2, pad_info={"b": (None, b"PAD_VALUE")}),
    ),
    "padded_bytes_pad_info_empty": ("blobs", "padded", dict(batch_size=2, pad_info={})),
    "padded_bytes_string_pad": (
        "blobs",
        "padded",
        dict(batch_size=2, pad_info={"b": (None, "PAD")}),
    ),
}
# jisu's message for each case MindSpore refused (MindSpore's own is in expected.json)
REFUSALS = {
    "bucket_names_one_column": r"bucket_batch_by_length: cannot batch column 's'",
    "padded_string_number_pad": r"padded_batch: cannot pad string column 's' with 0",
    "padded_number_string_pad": r"padded_batch: cannot pad int32 column 'i' with '7'",
    "padded_bytes_string_pad": r"padded_batch: cannot pad bytes column 'b' with 'PAD'",
}


def column(array: np.ndarray) -> dict:
    values = (
        np.char.decode(array, "latin-1").tolist() if array.dtype.kind == "S" else array.tolist()
    )
    return {"dtype": array.dtype.str, "shape": list(array.shape), "values": values}


def pipeline(source: str, method: str, kwargs: dict) -> ds.Dataset:
    make, names = SOURCES[source]
    data = ds.GeneratorDataset(make, names, shuffle=False)
    if method == "padded":
        return data.padded_batch(**kwargs)
    return data.bucket_batch_by_length(**kwargs)


@pytest.mark.parametrize("case", sorted(CASES))
def test_padding_matches_mindspore(case):
    data = pipeline(*CASES[case])
    batches = data.create_dict_iterator(num_epochs=1, output_numpy=True)
    want = EXPECTED[case]
    if "error" in want:  # MindSpore refused it while iterating: so does jisu, naming the column
        with pytest.raises(ValueError, match=REFUSALS[case]):
            list(batches)
        return
    assert [{k: column(v) for k, v in b.items()} for b in batches] == want["batches"]


def test_a_string_pad_value_is_never_cut_to_the_column_width():
    # issue 51: a "<U1" column padded with "PAD_VALUE" became "P"; it widens instead
    rows = [(np.array(["a"]),), (np.array(["b", "c"]),)]
    data = ds.GeneratorDataset(rows, ["s"], shuffle=False)
    data = data.padded_batch(2, pad_info={"s": ([3], "PAD_VALUE")})
    (batch,) = [b[0] for b in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert batch.tolist() == [["a", "PAD_VALUE", "PAD_VALUE"], ["b", "c", "PAD_VALUE"]]
