"""jisu.nn.probability.distribution against MindSpore 2.10's recorded answers
(tests/fixtures/nn_probability/make_fixtures.py): each method's value, samples' shapes and
dtypes."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import jisu.nn.probability.distribution as msd
from jisu import nn

FIXTURE = os.path.join(
    os.path.dirname(__file__), "..", "fixtures", "nn_probability", "mindspore.json"
)
with open(FIXTURE) as f:
    MS = json.load(f)
DTYPES = {"Float32": torch.float32, "Int32": torch.int32}


def _arg(value):
    if isinstance(value, list) and value and value[0] == "int":
        return torch.tensor(value[1:], dtype=torch.int32)
    if isinstance(value, list):
        return torch.tensor(value, dtype=torch.float32)
    return value


def test_the_fixture_was_recorded_by_mindspore_2_10() -> None:
    assert MS["mindspore"] == "2.10.0" and len(MS["cases"]) == 26


@pytest.mark.parametrize("case", MS["cases"], ids=lambda c: c["name"])
def test_methods_give_mindspores_values(case: dict) -> None:
    dist = getattr(msd, case["kind"])(*[_arg(v) for v in case["init"]])
    got = getattr(dist, case["method"])(*[_arg(v) for v in case["call"]])
    np.testing.assert_allclose(
        np.asarray(got, dtype=np.float64), np.array(case["value"]), rtol=2e-6, atol=1e-6
    )


@pytest.mark.parametrize("case", MS["samples"], ids=lambda c: f"{c['kind']}{c['call']}")
def test_samples_have_mindspores_shape_and_dtype(case: dict) -> None:
    dist = getattr(msd, case["kind"])(*[_arg(v) for v in case["init"]])
    shape, *params = case["call"]
    got = dist.sample(tuple(shape), *[_arg(v) for v in params])
    assert list(got.shape) == case["shape"] and got.dtype == DTYPES[case["dtype"]]


def test_call_by_method_name_and_missing_parameters() -> None:
    normal = msd.Normal(0.0, 1.0)
    assert normal("mean") == 0.0 and nn.probability.distribution is msd
    torch.manual_seed(0)
    assert normal("sample", (1000,)).std().item() == pytest.approx(1.0, abs=0.1)
    with pytest.raises(ValueError, match="mean must be given"):
        msd.Normal().prob(torch.tensor(0.0))
    with pytest.raises(ValueError, match="unknown method"):
        normal("pdf", 0.0)
