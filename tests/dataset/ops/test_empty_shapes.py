"""``output_shapes()`` and ``output_types()`` of pipelines that yield no row, and of columns
of empty arrays, against MindSpore 2.10's answers recorded by
tests/fixtures/ms_empty_shapes/make_fixtures.py (issue 51, bug 9).

MindSpore gives ``[]`` (no shapes, no types) for a pipeline that yields no row in an epoch;
a column of empty arrays has a shape with a 0 in it (``[0]``, ``[0, 3]``, ``[2, 0]`` after
``batch``), as any other column.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import jisu.dataset as ds

FIXTURES = Path(__file__).parents[2] / "fixtures" / "ms_empty_shapes"
MS = json.loads((FIXTURES / "shapes.json").read_text())
CASES = {**MS["empty"], **MS["empty_arrays"]}


def build(name: str) -> ds.Dataset:
    """The case's pipeline, from the expression MindSpore built it with."""
    return eval(CASES[name]["expression"], {"ds": ds, "np": np})  # the expressions of our fixture


def test_fixture_is_mindspore_2_10():
    assert MS["mindspore"].startswith("2.10")
    assert all(c["output_shapes"] == {"value": []} for c in MS["empty"].values())
    assert all(c["output_shapes"]["value"] for c in MS["empty_arrays"].values())


@pytest.mark.parametrize("name", list(CASES))
def test_output_shapes_and_types_as_mindspore(name):
    recorded = CASES[name]
    data = build(name)
    assert data.output_shapes() == recorded["output_shapes"]["value"]
    assert [str(t) for t in data.output_types()] == recorded["output_types"]["value"]
    assert data.get_dataset_size() == recorded["get_dataset_size"]["value"]
    assert data.get_col_names() == recorded["get_col_names"]["value"]


@pytest.mark.parametrize("name", list(CASES))
def test_estimated_shapes_as_mindspore(name):
    """Where MindSpore 2.10 estimates, the same answer. Where it raises (an empty pipeline
    without a batch: its engine's "EOF buffer encountered" RuntimeError), jisu gives ``[]``,
    as MindSpore itself does for the same pipeline after a batch."""
    recorded = CASES[name]["estimate"]
    expected = recorded.get("value", [])
    if "error" in recorded:
        assert recorded["error"] == "RuntimeError" and name in MS["empty"]
    assert build(name).output_shapes(estimate=True) == expected


def test_an_empty_pipeline_is_asked_once_and_stays_empty():
    data = build("skip_every_row")
    assert data.output_shapes() == [] and data.output_types() == []
    assert data.output_shapes() == []  # the answer is kept, as for a pipeline with rows
    assert list(data.create_tuple_iterator(num_epochs=1)) == []
