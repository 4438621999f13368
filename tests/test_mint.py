"""jisu.mint against mindspore.mint 2.10's recorded answers (tests/fixtures/ms_mint).

MindSpore 2.10 runs only part of ``mint`` on CPU (the rest are Ascend kernels): cases it
recorded are compared value by value; for the others the test checks that jisu's name is the
torch function of the same name, which is what ``mint`` mirrors.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import jisu
import jisu.mint as mint
from jisu.mint import _names

FIXTURES = Path(__file__).parent / "fixtures" / "ms_mint"
_spec = importlib.util.spec_from_file_location("ms_mint_cases", FIXTURES / "cases.py")
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)
CASES = _cases.CASES
RECORDED = json.loads((FIXTURES / "ms210.json").read_text())
ARRAYS = dict(np.load(FIXTURES / "ms210.npz"))
MODULES = {"mint": mint, "F": mint.nn.functional}


def _resolve(v):
    if isinstance(v, str) and v.startswith("@"):
        name = v[1:]
        return torch.from_numpy(ARRAYS[name].copy()) if name in ARRAYS else getattr(jisu, name)
    if isinstance(v, tuple):
        return tuple(_resolve(e) for e in v)
    if isinstance(v, list):
        return [_resolve(e) for e in v]
    return v


def _check(result, want, key):
    if want["type"] == "tensor":
        assert str(result.dtype).replace("torch.", "") == want["dtype"], key
        np.testing.assert_allclose(result.numpy(), ARRAYS[key], rtol=1e-5, atol=1e-5)
    else:
        assert len(result) == len(want["items"]), key
        for i, (r, w) in enumerate(zip(result, want["items"])):
            _check(r, w, f"{key}.{i}")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_mindspore_mint(case):
    cid, module, name, args, kwargs = case
    fn = getattr(MODULES[module], name)
    want = RECORDED["cases"][cid]
    if want["type"] == "error":  # an Ascend-only kernel in MindSpore 2.10: torch's own
        assert want["error"] in ("RuntimeError", "NotImplementedError"), want
        assert fn is _names.lookup(name)
        fn(*_resolve(args), **{k: _resolve(v) for k, v in kwargs.items()})  # runs on jisu
        return
    _check(fn(*_resolve(args), **{k: _resolve(v) for k, v in kwargs.items()}), want, cid)


def test_every_mindspore_mint_name_is_provided_or_refused():
    provided = {
        "mindspore.mint": mint,
        "mindspore.mint.nn": mint.nn,
        "mindspore.mint.nn.functional": mint.nn.functional,
        "mindspore.mint.optim": mint.optim,
    }
    for module, names in RECORDED["names"].items():
        for name in names:
            if name in _names.REFUSED:
                with pytest.raises(AttributeError, match="collective communication"):
                    getattr(provided[module], name)
            else:
                assert hasattr(provided[module], name), f"{module}.{name}"


def test_names_are_torch_functions():
    assert mint.sum is torch.sum and mint.cat is torch.cat and mint.sigmoid is torch.sigmoid
    assert mint.dropout is F.dropout and mint.embedding is F.embedding  # F's argument order
    assert mint.nn.ReLU is torch.nn.ReLU and mint.optim.AdamW is torch.optim.AdamW
    assert mint.optim.FusedAdamW is torch.optim.AdamW
    assert mint.vector_norm is torch.linalg.vector_norm
    with pytest.raises(AttributeError, match="has no attribute 'no_such_op'"):
        mint.nn.functional.no_such_op  # noqa: B018


def test_linear_with_mindspore_initializers():
    layer = mint.nn.Linear(4, 5, weight_init="ones", bias_init="zeros")
    out = layer(torch.from_numpy(ARRAYS["x"].copy()))
    np.testing.assert_allclose(out.detach().numpy(), ARRAYS["linear_out"], rtol=1e-5)
    assert isinstance(mint.Linear(2, 3), torch.nn.Linear)
