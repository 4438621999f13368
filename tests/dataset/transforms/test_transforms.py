"""Generic ops against their definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import jisu
from jisu.dataset import transforms


def test_typecast_accepts_numpy_torch_and_jisu_dtypes():
    x = np.array([1.7, -2.2])
    assert transforms.TypeCast(np.int32)(x).tolist() == [1, -2]
    assert transforms.TypeCast(torch.float16)(x).dtype == np.float16
    assert transforms.TypeCast(jisu.int64)(x).dtype == np.int64


def test_onehot_with_and_without_smoothing():
    np.testing.assert_array_equal(transforms.OneHot(4)(np.array(2, np.int32)), [0, 0, 1, 0])
    assert transforms.OneHot(4)(np.array(2, np.int32)).dtype == np.int32
    smooth = transforms.OneHot(4, 0.2)(np.array([1, 3]))
    expected = np.full((2, 4), 0.05)
    expected[0, 1] = expected[1, 3] = 0.85
    np.testing.assert_allclose(smooth, expected)
    with pytest.raises(ValueError, match=r"labels must be in \[0, 4\)"):
        transforms.OneHot(4)(np.array(4))


def test_fill_duplicate_concatenate():
    np.testing.assert_array_equal(transforms.Fill(3)(np.zeros(3, np.int32)), [3, 3, 3])
    a, b = transforms.Duplicate()(np.arange(2))
    b[0] = 9
    assert a.tolist() == [0, 1]
    out = transforms.Concatenate(0, np.array([1]), np.array([9]))(np.array([5, 6]))
    assert out.tolist() == [1, 5, 6, 9]


def test_compose_random_apply_and_random_choice():
    add = lambda x: x + 1  # noqa: E731
    double = lambda x: x * 2  # noqa: E731
    assert transforms.Compose([add, double])(np.array(3)) == 8
    rng = np.random.default_rng(0)
    applied = [
        int(transforms.RandomApply([add], prob=0.25).apply(np.array(0), rng=rng))
        for _ in range(4000)
    ]
    assert abs(np.mean(applied) - 0.25) < 0.03
    choice = transforms.RandomChoice([add, double])
    outcomes = {int(choice.apply(np.array(5), rng=rng)) for _ in range(100)}
    assert outcomes == {6, 10}
    assert transforms.Compose([transforms.RandomChoice([add])]).randomized
    with pytest.raises(TypeError, match="RandomApply: transforms"):
        transforms.RandomApply([])
