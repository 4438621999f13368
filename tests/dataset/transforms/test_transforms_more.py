"""Slice, PadEnd, Mask, Unique, RandomOrder (and Concatenate/Duplicate) against MindSpore 2.10's
recorded outputs (tests/fixtures/transforms_pil/make_fixtures.py)."""

from __future__ import annotations

import importlib.util
import itertools
import os
import types
from collections import Counter

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.transforms import more_ops
from jisu.dataset.transforms import ops as base_ops
from jisu.dataset.vision import geometry, pil, pixel
from tests.conftest import rows_of

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "transforms_pil")


def _public(module) -> dict:
    return {k: v for k, v in vars(module).items() if not k.startswith("_")}


def _load():
    spec = importlib.util.spec_from_file_location("make_fixtures", f"{FIXTURES}/make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    T = types.SimpleNamespace(**{**_public(base_ops), **_public(more_ops)})
    V = types.SimpleNamespace(**{**_public(geometry), **_public(pixel), **_public(pil)})
    mstype = types.SimpleNamespace(int32=np.int32, float32=np.float32, uint8=np.uint8)
    with np.load(f"{FIXTURES}/mindspore_outputs.npz") as f:
        expected = dict(f)
    return module.inputs(), module.cases(T, V, mstype), expected


INPUTS, CASES, EXPECTED = _load()


def check_case(name: str, float_rtol: float = 0.0) -> None:
    _, op, names = next(c for c in CASES if c[0] == name)
    result = op(*[INPUTS[n] for n in names])
    result = result if isinstance(result, tuple) else (result,)
    assert len(result) == sum(k.startswith(f"{name}/") for k in EXPECTED)
    for k, r in enumerate(result):
        want = EXPECTED[f"{name}/{k}"]
        # MindSpore's strings have no fixed width: compare their kind, not NumPy's width
        same = r.dtype.kind == want.dtype.kind if want.dtype.kind in "SU" else r.dtype == want.dtype
        assert same and r.shape == want.shape, (name, k, r.dtype, r.shape)
        if float_rtol and want.dtype.kind == "f":
            np.testing.assert_allclose(r, want, rtol=float_rtol, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(r, want, err_msg=name)


@pytest.mark.parametrize("name", [c[0] for c in CASES if not c[0].startswith(("totensor", "b_"))])
def test_matches_mindspore(name):
    check_case(name)


# -- Slice -----------------------------------------------------------------------------------


def test_slice_follows_python_where_mindspore_fails():
    x = np.arange(24).reshape(4, 6)
    # MindSpore refuses a step or a start with stop=None ("Wrong slice object")
    np.testing.assert_array_equal(more_ops.Slice(slice(None, None, -1))(x), x[::-1])
    np.testing.assert_array_equal(more_ops.Slice(slice(-2, None))(x), x[-2:])
    # MindSpore gives rows 3, 2, 1 here; Python's rules give 3, 2, 1, 0
    np.testing.assert_array_equal(more_ops.Slice(slice(3, -5, -1))(x), x[3:-5:-1])


@pytest.mark.parametrize("args", [(10,), (-5,), ([0, 4],), (1, 1, 1)])
def test_slice_errors(args):
    with pytest.raises((IndexError, ValueError), match="Slice"):
        more_ops.Slice(*args)(np.arange(24).reshape(4, 6))


@pytest.mark.parametrize(
    "args", [((0, 1),), (np.array([1]),), ([],), ([True],), (False,), (..., ...), (slice(0, 2, 0),)]
)
def test_slice_bad_arguments(args):
    with pytest.raises((TypeError, ValueError), match="Slice"):
        more_ops.Slice(*args)


def test_slice_in_pipeline():
    data = ds.NumpySlicesDataset({"x": np.arange(24).reshape(2, 3, 4)}, shuffle=False)
    data = data.map([more_ops.Slice([2, 0], slice(1, 3))], input_columns=["x"])
    assert rows_of(data) == [[[9, 10], [1, 2]], [[21, 22], [13, 14]]]


# -- PadEnd, Mask, Unique --------------------------------------------------------------------


def test_padend_none_keeps_axis_and_strings_widen():
    x = np.arange(6).reshape(2, 3)
    assert more_ops.PadEnd([None, 4])(x).tolist() == [[0, 1, 2, 0], [3, 4, 5, 0]]
    out = more_ops.PadEnd([3], "long")(np.array(["a"]))
    assert out.tolist() == ["a", "long", "long"]
    assert more_ops.PadEnd([3], b"q")(np.array([b"a"])).tolist() == [b"a", b"q", b"q"]


def test_padend_errors():
    x = np.arange(6, dtype=np.uint8).reshape(2, 3)
    with pytest.raises(ValueError, match="PadEnd: pad_value -1 does not fit"):
        more_ops.PadEnd([3, 4], -1)(x)  # MindSpore wraps it to 255
    with pytest.raises(ValueError, match="PadEnd: pad_shape"):
        more_ops.PadEnd([3])(x)
    with pytest.raises(ValueError, match="PadEnd: pad_shape"):
        more_ops.PadEnd([0, 3])
    with pytest.raises(TypeError, match="PadEnd: cannot pad"):
        more_ops.PadEnd([4], "z")(np.array([1, 2]))


def test_mask_compares_exactly():
    v = np.array([1, 2, 3], np.uint8)
    R = more_ops.Relational
    # MindSpore casts the constant to the input dtype first: 2.5 -> 2, -1 -> 255
    assert more_ops.Mask(R.EQ, 2.5)(v).tolist() == [False, False, False]
    assert more_ops.Mask(R.GT, -1)(v).tolist() == [True, True, True]
    assert more_ops.Mask(R.LT, 300)(v).tolist() == [True, True, True]
    with pytest.raises(TypeError, match="Mask: cannot compare"):
        more_ops.Mask(R.EQ, "1")(v)
    with pytest.raises(TypeError, match="Mask: operator"):
        more_ops.Mask("==", 1)
    with pytest.raises(TypeError, match="Mask: dtype"):
        more_ops.Mask(R.EQ, 1, dtype=np.str_)


def test_unique_beyond_mindspore():
    out, idx, counts = more_ops.Unique()(np.array([5, 1, 5, 3, 1, 1]))
    assert (out.tolist(), idx.tolist(), counts.tolist()) == (
        [5, 1, 3],
        [0, 1, 0, 2, 1, 1],
        [2, 3, 1],
    )
    assert idx.dtype == counts.dtype == np.int32
    out, idx, counts = more_ops.Unique()(np.array(["b", "a", "b"]))
    assert (out.tolist(), idx.tolist(), counts.tolist()) == (["b", "a"], [0, 1, 0], [2, 1])
    out, idx, counts = more_ops.Unique()(np.zeros((0, 3), np.int32))
    assert out.shape == idx.shape == counts.shape == (0,)


def test_unique_in_pipeline():
    data = ds.NumpySlicesDataset({"x": np.array([[[3, 3], [1, 3]]] * 2)}, shuffle=False)
    data = data.map([more_ops.Unique()], input_columns=["x"], output_columns=["u", "i", "c"])
    assert rows_of(data, None)[0] == [[3, 1], [0, 0, 1, 0], [3, 1]]


# -- RandomOrder -----------------------------------------------------------------------------


def _order_op():
    return more_ops.RandomOrder([lambda x: x * 10 + 1, lambda x: x * 10 + 2, lambda x: x * 10 + 3])


def test_random_order_uniform_permutations():
    op = _order_op()
    counts = Counter(int(op(np.array(0))) for _ in range(3000))
    expected = {int("".join(p)) for p in itertools.permutations("123")}
    assert set(counts) == expected
    assert all(400 < c < 600 for c in counts.values()), counts


def test_random_order_validation():
    with pytest.raises(TypeError, match="RandomOrder"):
        more_ops.RandomOrder([])
    with pytest.raises(TypeError, match="RandomOrder"):
        more_ops.RandomOrder([1])


@pytest.mark.parametrize("workers", [1, 3])
def test_random_order_seeded_and_worker_independent(workers):
    def run(n):
        ds.config.set_seed(7)
        data = ds.NumpySlicesDataset({"x": np.zeros(60, np.int64)}, shuffle=False)
        data = data.map([_order_op()], input_columns=["x"], num_parallel_workers=n)
        return rows_of(data)

    first = run(workers)
    assert first == run(2)
    assert len(set(first)) == 6  # all six orders appear in 60 rows
