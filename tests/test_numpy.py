"""jisu.numpy against mindspore.numpy 2.10's recorded answers (tests/fixtures/ms_numpy), and
NumPy's where MindSpore rejects a form jisu takes."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import jisu.numpy as mnp

FIXTURES = Path(__file__).parent / "fixtures" / "ms_numpy"
_spec = importlib.util.spec_from_file_location("ms_numpy_cases", FIXTURES / "cases.py")
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)
CASES = _cases.CASES
RECORDED = json.loads((FIXTURES / "ms210.json").read_text())
ARRAYS = dict(np.load(FIXTURES / "ms210.npz"))


def _resolve(v):
    if isinstance(v, str) and v.startswith("@"):
        name = v[1:]
        if name in ARRAYS:
            return ARRAYS[name] if name == "nd" else torch.from_numpy(ARRAYS[name].copy())
        return getattr(mnp, name)
    if isinstance(v, tuple):
        return tuple(_resolve(e) for e in v)
    if isinstance(v, list):
        return [_resolve(e) for e in v]
    return v


def _check(result, want, key, how):
    if want["type"] == "tensor":
        assert isinstance(result, torch.Tensor), f"{key}: {type(result)}"
        assert list(result.shape) == want["shape"], key
        if how != "values":
            assert str(result.dtype).replace("torch.", "") == want["dtype"], key
        if how != "shape":
            np.testing.assert_allclose(result.numpy(), ARRAYS[key], rtol=1e-5, atol=1e-6)
    elif want["type"] == "seq":
        assert len(result) == len(want["items"]), key
        for i, (r, w) in enumerate(zip(result, want["items"])):
            _check(r, w, f"{key}.{i}", how)
    else:
        assert result == want["value"], key


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_mindspore_numpy(case):
    cid, fn, args, kwargs, how = case
    result = getattr(mnp, fn)(*_resolve(args), **{k: _resolve(v) for k, v in kwargs.items()})
    tag = "np" if how == "np" else "ms"
    want = RECORDED[tag][cid]
    if how == "np":
        assert RECORDED["ms"][cid]["type"] == "error"  # MindSpore rejects it; jisu takes it
        if want["type"] == "tensor":
            assert list(result.shape) == want["shape"]
            np.testing.assert_allclose(result.numpy(), ARRAYS[f"np.{cid}"], rtol=1e-6)
        else:
            for i, r in enumerate(result):
                np.testing.assert_array_equal(r.numpy(), ARRAYS[f"np.{cid}.{i}"])
        return
    _check(result, want, f"ms.{cid}", how)


def test_constants_and_dtypes():
    want = RECORDED["constants"]
    assert mnp.pi == want["pi"] and math.isinf(mnp.inf)
    assert mnp.int_ is torch.int32 and mnp.float_ is torch.float32
    assert mnp.float32 is torch.float32 and mnp.bool_ is torch.bool


def test_errors_name_the_function():
    with pytest.raises(ValueError, match="split: 4 sections do not divide"):
        mnp.split(torch.zeros(6), 4)
    with pytest.raises(ValueError, match="squeeze: axis 1 has size 3"):
        mnp.squeeze(torch.zeros(1, 3), 1)
    with pytest.raises(ValueError, match="pad: mode must be one of"):
        mnp.pad(torch.zeros(2), 1, mode="median")
    with pytest.raises(TypeError, match="array: input must be numbers"):
        mnp.array("text")
    with pytest.raises(ValueError, match="where: give both x and y"):
        mnp.where(torch.ones(2, dtype=torch.bool), 1.0)


def test_numpy_inside_jisu_is_still_numpy():
    import jisu
    import jisu.common.tensor as tensor_module
    import jisu.numpy._convert as convert

    assert tensor_module.np is np and convert.np is np
    assert jisu.numpy is mnp
    assert np.__name__ == "numpy"


def test_array_copies_and_asarray_shares():
    t = torch.ones(3)
    assert mnp.asarray(t) is t
    copied = mnp.array(t)
    copied[0] = 5.0
    assert t[0].item() == 1.0
