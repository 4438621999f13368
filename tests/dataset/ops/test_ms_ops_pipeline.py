"""Issue 29's pipeline cases, checked against MindSpore 2.10's recorded answers
(tests/fixtures/ms_ops/make_fixtures.py): padded_batch against pad shapes, batch(True),
concat of unlike datasets, Fill on strings and bytes, the default seed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset import config
from jisu.dataset import transforms as T
from tests.conftest import rows_of

PIPELINE = json.loads((Path(__file__).parents[2] / "fixtures" / "ms_ops" / "ops.json").read_text())[
    "pipeline"
]


def _ragged():
    for i in range(3):
        yield (np.arange(i + 1, dtype=np.int32),)


def _two():
    for i in range(2):
        yield np.array([i], np.int32), np.array([10 * i], np.int32)


def _one():
    for i in range(2):
        yield (np.array([i + 5], np.int32),)


def _two_float():
    for i in range(2):
        yield np.array([i + 0.5], np.float32), np.array([10 * i], np.int32)


def _source(gen, cols):
    return ds.GeneratorDataset(gen, cols, shuffle=False)


def _rows(data):
    iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    return [[np.asarray(c).tolist() for c in row] for row in iterator]


@pytest.mark.parametrize(
    "case, size, pad", [("padded_larger", 3, ([5], -1)), ("padded_none", 2, (None, 7))]
)
def test_padded_batch_matches_mindspore(case, size, pad):
    data = _source(_ragged, ["a"]).padded_batch(size, pad_info={"a": pad})
    assert _rows(data) == PIPELINE[case]["rows"]


def test_pad_shape_smaller_than_a_row_is_an_error():
    # MindSpore cuts the row to the pad shape ([0, 1, 2] -> [0, 1]), losing data silently
    assert PIPELINE["padded_smaller"]["rows"] == [[[[0, -1], [0, 1], [0, 1]]]]
    data = _source(_ragged, ["a"]).padded_batch(3, pad_info={"a": ([2], -1)})
    with pytest.raises(
        ValueError, match=r"column 'a' has shape \(3,\), larger than the pad shape \[2\]"
    ):
        rows_of(data)


def test_bool_batch_size_is_refused():
    # MindSpore takes True as 1 (and refuses False as out of range); a bool is a slip here
    assert PIPELINE["batch_true"]["rows"] == _rows(_source(_ragged, ["a"]).batch(1))
    assert PIPELINE["batch_true_size"]["rows"] == 3
    assert PIPELINE["batch_false"]["error"] == "ValueError"
    for flag in (True, False):
        with pytest.raises(TypeError, match="batch: batch_size must be an int"):
            _source(_ragged, ["a"]).batch(flag)


@pytest.mark.parametrize(
    "case, gen, cols",
    [
        ("concat_fewer", _one, ["a"]),
        ("concat_renamed", _two, ["c", "d"]),
        ("concat_reordered", _two, ["b", "a"]),
        ("concat_dtype", _two_float, ["a", "b"]),
    ],
)
def test_concat_of_unlike_datasets_is_refused_when_built(case, gen, cols):
    # MindSpore accepts the datasets and fails when iterated (RuntimeError); jisu refuses unlike
    # columns when built, and unlike dtypes (unknown before a generator runs) on the first row
    assert PIPELINE[case]["ok"] is False and PIPELINE[case]["error"] == "RuntimeError"
    with pytest.raises((ValueError, TypeError), match="concat"):
        _rows(_source(_two, ["a", "b"]) + _source(gen, cols))
    if case != "concat_dtype":
        with pytest.raises(ValueError, match="concat: datasets\\[1\\] has columns"):
            _source(_two, ["a", "b"]) + _source(gen, cols)


@pytest.mark.parametrize(
    "case, value, array",
    [
        ("fill_str", "xyz", np.array(["ab", "c"])),
        ("fill_str_scalar", "xyz", np.array("ab")),
        ("fill_bytes", b"xyz", np.array([b"ab", b"c"])),
        ("fill_empty_str", "", np.array(["ab", "c"])),
    ],
)
def test_fill_on_strings_and_bytes_matches_mindspore(case, value, array):
    expected = PIPELINE[case]["rows"]
    out = T.Fill(value)(array)
    assert out.dtype.str == expected["dtype"] and list(out.shape) == expected["shape"]
    flat = [v.decode() if isinstance(v, bytes) else v for v in out.ravel().tolist()]
    assert flat == expected["value"]


@pytest.mark.parametrize(
    "case, value, array",
    [
        ("fill_str_on_int", "xy", np.array([1, 2])),
        ("fill_int_on_str", 3, np.array(["ab", "c"])),
        ("fill_bytes_on_str", b"q", np.array(["ab", "c"])),
        ("fill_str_on_bytes", "q", np.array([b"ab", b"c"])),
    ],
)
def test_fill_mixing_text_and_other_types_is_an_error(case, value, array):
    assert PIPELINE[case]["ok"] is False
    with pytest.raises(TypeError, match="Fill: fill_value and the input must both be strings"):
        T.Fill(value)(array)


@pytest.mark.parametrize(
    "case, value", [("fill_str_pipeline", "zz"), ("fill_bytes_pipeline", b"zz")]
)
def test_fill_in_a_pipeline_keeps_the_whole_value(case, value):
    texts = ["ab", "c", "defg"]
    data = ds.GeneratorDataset(
        [(np.array(t if isinstance(value, str) else t.encode()),) for t in texts],
        ["s"],
        shuffle=False,
    ).map(T.Fill(value), ["s"])
    got = [[v.decode() if isinstance(v, bytes) else v for v in row] for row in _rows(data)]
    assert got == PIPELINE[case]["rows"]


def test_default_seed_is_reported_as_mindspores(monkeypatch):
    monkeypatch.setattr(config, "_seed", None)
    assert config.get_seed() == PIPELINE["default_seed"] == 5489
    assert not config.seed_was_set()
    # unseeded pipelines draw from the process's own seed, as before: the same rows as an
    # explicit set_seed of it, whatever get_seed reports
    data = ds.NumpySlicesDataset(np.arange(32), shuffle=True)
    unseeded = _rows(data)
    monkeypatch.setattr(config, "_seed", config.pipeline_seed())
    assert _rows(data) == unseeded
    config.set_seed(5489)
    assert config.get_seed() == 5489 and config.pipeline_seed() == 5489
    assert config.seed_was_set()
