"""NumpySlicesDataset's and GeneratorDataset's argument checks against MindSpore 2.10's
recorded answers (tests/fixtures/ms_slices_checks/expected.json; issue 51: MindSpore's own
test_dataset_numpy_slices.py, re-run against jisu, found empty data, an empty column name and
num_shards above 2**31 - 1 accepted, and a non-str column name refused as a ValueError where
MindSpore raises TypeError). Each call is only built: MindSpore refuses all of them there."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

import jisu.dataset as ds

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ms_slices_checks")
with open(os.path.join(FIXTURES, "expected.json")) as _f:
    EXPECTED = json.load(_f)["cases"]
BUILTIN = {"TypeError": TypeError, "ValueError": ValueError, "RuntimeError": RuntimeError}


def gen():
    for i in range(3):
        yield (np.array([i]),)


CASES = {
    "slices_column_names_int": lambda: ds.NumpySlicesDataset([1, 2, 3], column_names=[1]),
    "slices_column_names_empty_str": lambda: ds.NumpySlicesDataset([1, 2, 3], column_names=[""]),
    "slices_column_names_empty": lambda: ds.NumpySlicesDataset([1, 2, 3], column_names=[]),
    "slices_column_names_dup": lambda: ds.NumpySlicesDataset(([1], [2]), column_names=["a", "a"]),
    "slices_data_empty_list": lambda: ds.NumpySlicesDataset([]),
    "slices_data_empty_dict": lambda: ds.NumpySlicesDataset({}),
    "slices_data_empty_tuple": lambda: ds.NumpySlicesDataset(()),
    "slices_num_shards_maxsize": lambda: ds.NumpySlicesDataset(
        [1, 2, 3], num_shards=sys.maxsize, shard_id=0
    ),
    "slices_num_shards_2p31": lambda: ds.NumpySlicesDataset(
        [1, 2, 3], num_shards=2**31, shard_id=0
    ),
    "slices_num_shards_int32_max": lambda: ds.NumpySlicesDataset(
        [1, 2, 3], num_shards=2**31 - 1, shard_id=0
    ),
    "generator_column_names_int": lambda: ds.GeneratorDataset(gen, column_names=[1]),
    "generator_column_names_empty_str": lambda: ds.GeneratorDataset(gen, column_names=[""]),
    "generator_num_shards_2p31": lambda: ds.GeneratorDataset(
        gen, column_names=["a"], num_shards=2**31, shard_id=0
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_build_time_answer_is_mindspores(name: str) -> None:
    expected = EXPECTED[name]
    if expected == "ok":
        CASES[name]()
        return
    with pytest.raises(Exception) as info:
        CASES[name]()
    # every class MindSpore's exception is, jisu's is too (jisu may be more: ArgumentError)
    for cls in BUILTIN:
        if expected[cls]:
            assert isinstance(info.value, BUILTIN[cls]), (
                name,
                cls,
                repr(info.value),
            )
    assert "NumpySlicesDataset" in str(info.value) or "GeneratorDataset" in str(info.value)
