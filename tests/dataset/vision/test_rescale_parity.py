"""Rescale is bit-exact with MindSpore 2.10 (issue 51: MindSpore's md5 golden test failed
because jisu multiplied then added in float32, rounding twice). Expected outputs recorded by
tests/fixtures/rescale_parity/make_fixtures.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.vision import Rescale

ARRAYS = np.load(Path(__file__).parents[2] / "fixtures" / "rescale_parity" / "rescale.npz")
PAIRS = [tuple(p) for p in ARRAYS["pairs"]]
OUTPUTS = sorted(k for k in ARRAYS.files if k.startswith("out_"))


@pytest.mark.parametrize("key", OUTPUTS)
def test_rescale_is_mindspores_bit_for_bit(key):
    _, dtype, k = key.split("_")
    got = Rescale(*PAIRS[int(k)])(ARRAYS[f"in_{dtype}"])
    expected = ARRAYS[key]
    assert got.dtype == np.float32 and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("k", range(len(PAIRS)))
def test_rescale_in_a_pipeline_is_mindspores_bit_for_bit(k):
    data = ds.NumpySlicesDataset([ARRAYS["in_uint8"]], ["image"], shuffle=False)
    data = data.map(Rescale(*PAIRS[k]), input_columns=["image"])
    (got,) = next(data.create_tuple_iterator(output_numpy=True))
    assert got.tobytes() == ARRAYS[f"pipeline_{k}"].tobytes()


def test_a_float32_multiply_then_add_would_differ():
    # the recorded answers tell the two roundings apart (else the tests above prove nothing)
    x = ARRAYS["in_uint8"]
    twice = x.astype(np.float32) * np.float32(1 / 255) + np.float32(-1.0)
    assert (twice != ARRAYS["out_uint8_0"]).any()
