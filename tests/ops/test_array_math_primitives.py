"""MindSpore's array and math primitives (``P.TopK``, ``P.Div``, ``P.StridedSlice``, ...) and
their functions (``ops.norm``, ``ops.range``, ...) on jisu, against the answers MindSpore 2.10
and 2.0.0 gave for the same calls on the same seeded inputs
(``tests/fixtures/ms_primitives_array_math/make_fixtures.py``): values, dtype names, shapes,
and tuple structure; or MindSpore's error type.

jisu follows MindSpore 2.10 unless the model zoo's release (2.0.0) answered otherwise in a
way the zoo relies on (``ZOO_ERA``); where one release refused a call that the other answered,
jisu gives the answer. Calls that MindSpore's CPU backend could not run (no kernel for the
dtype) say nothing about MindSpore's semantics and are skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import jisu
from jisu import ops
from jisu.ops import operations as P

HERE = Path(__file__).resolve().parent.parent / "fixtures" / "ms_primitives_array_math"
CASES = {c["name"]: c for c in json.loads((HERE / "cases.json").read_text())}
INPUTS = dict(np.load(HERE / "inputs.npz"))
RECORDED = {
    version: (
        json.loads((HERE / f"mindspore_{version}.json").read_text())["results"],
        np.load(HERE / f"mindspore_{version}.npz")["values"],
    )
    for version in ("2.10.0", "2.0.0")
}

#: where jisu gives MindSpore 2.0.0's answer (the zoo's release) rather than 2.10's
ZOO_ERA = {
    "Div_i32": "int32 / int32 is int32, truncated (2.10: float32)",
    "Div_scalar_i32": "int / int32 is int32, truncated (2.10: float32)",
    "ArgMaxWithValue_default": "int32 indices (2.10: int64)",
    "ArgMaxWithValue_axis_keep": "int32 indices (2.10: int64)",
    "ArgMaxWithValue_ties": "int32 indices (2.10: int64)",
    "ArgMinWithValue_axis": "int32 indices (2.10: int64)",
    "ArgMinWithValue_i32": "int32 indices (2.10: int64)",
    "Range_i32": "the dtype of the int32 tensors passed (2.10: int64)",
    "range_tensors": "the dtype of the int32 tensors passed (2.10: int64)",
    "function_range": "the dtype of the int32 tensors passed (2.10: int64)",
    "sum_all": "a sum of int32 is int32 (2.10: int64)",
}
#: where jisu differs from MindSpore on purpose
KNOWN_DIFFERENCES = {
    "full": "ops.full(size, 1.5) without dtype: MindSpore truncates to int64 1, jisu keeps 1.5",
}
DTYPE_NAMES = {
    torch.float16: "Float16", torch.float32: "Float32", torch.float64: "Float64",
    torch.int8: "Int8", torch.int16: "Int16", torch.int32: "Int32", torch.int64: "Int64",
    torch.uint8: "UInt8", torch.bool: "Bool", torch.bfloat16: "BFloat16",
}  # fmt: skip


def expected(name: str) -> tuple[dict, np.ndarray]:
    """MindSpore's answer that jisu follows for case ``name``, and its values array."""
    new, old = RECORDED["2.10.0"], RECORDED["2.0.0"]
    first, second = (old, new) if name in ZOO_ERA else (new, old)
    if "error" in first[0][name] and "error" not in second[0][name]:
        return second[0][name], second[1]
    return first[0][name], first[1]


def build(spec):
    if isinstance(spec, dict) and "a" in spec:
        return torch.from_numpy(INPUTS[spec["a"]].copy())
    if isinstance(spec, dict) and "p" in spec:
        return jisu.Parameter(torch.from_numpy(INPUTS[spec["p"]].copy()), name="p")
    if isinstance(spec, dict) and "d" in spec:
        return getattr(jisu, spec["d"])
    if isinstance(spec, dict) and "t" in spec:
        return tuple(build(s) for s in spec["t"])
    return spec


def run(case: dict):
    if case["kind"] == "prim":
        init_kw = {k: build(v) for k, v in case.get("init_kw", {}).items()}
        # the class at MindSpore's module path (array_ops / math_ops) where jisu has one there
        cls = getattr(P.array_ops, case["op"], None) or getattr(P.math_ops, case["op"], None)
        fn = (cls or getattr(P, case["op"]))(*map(build, case.get("init", [])), **init_kw)
    else:
        fn = ops
        for part in case["op"].split("."):
            fn = getattr(fn, part)
    return fn(*map(build, case["args"]), **{k: build(v) for k, v in case.get("kwargs", {}).items()})


def check(got, want: dict, values: np.ndarray, name: str) -> None:
    if "tuple" in want:
        assert isinstance(got, tuple), f"{name}: MindSpore gives a tuple; jisu {type(got)}"
        assert len(got) == len(want["tuple"]), name
        for g, w in zip(got, want["tuple"]):
            check(g, w, values, name)
        return
    if "py" in want:
        got = list(got) if isinstance(got, tuple) else got
        assert not isinstance(got, torch.Tensor) and got == want["py"], name
        return
    assert isinstance(got, torch.Tensor), f"{name}: a tensor expected, got {type(got)}"
    assert DTYPE_NAMES[got.dtype] == want["dtype"], f"{name}: dtype {got.dtype}"
    assert list(got.shape) == want["shape"], f"{name}: shape {tuple(got.shape)}"
    n = int(np.prod(want["shape"]))
    ref = values[want["at"] : want["at"] + n].reshape(want["shape"])
    tol = 2e-3 if got.dtype == torch.float16 else 2e-5
    mine = got.detach().double().numpy()
    np.testing.assert_allclose(mine, ref, rtol=tol, atol=tol, equal_nan=True, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jisu_gives_mindspores_answer(name):
    if name in KNOWN_DIFFERENCES:
        pytest.skip(KNOWN_DIFFERENCES[name])
    want, values = expected(name)
    if "error" in want:
        other = RECORDED["2.0.0" if name not in ZOO_ERA else "2.10.0"][0][name]
        if want.get("backend") or other.get("backend"):
            pytest.skip(f"MindSpore's CPU backend could not run it: {want['message']}")
        error = {"TypeError": TypeError, "ValueError": ValueError}.get(want["error"], Exception)
        with pytest.raises(error):
            run(CASES[name])
        return
    check(run(CASES[name]), want, values, name)


def test_full_keeps_a_float_value_and_takes_a_string():
    got = ops.full((2, 3), 1.5)
    assert got.dtype == torch.float32 and bool((got == 1.5).all())
    got = ops.full([2], "-inf", dtype=jisu.float32)
    assert got.dtype == torch.float32 and bool(torch.isneginf(got).all())


def test_einsum_against_numpy():
    # MindSpore's CPU backend has no Einsum kernel: numpy's einsum is the reference
    a, b = INPUTS["bm"], INPUTS["bm2"]
    got = P.Einsum("bij,bjk->bik")((torch.from_numpy(a), torch.from_numpy(b)))
    np.testing.assert_allclose(got.numpy(), np.einsum("bij,bjk->bik", a, b), rtol=1e-5)
    got = ops.einsum("ij,jk->ik", torch.from_numpy(INPUTS["m34"]), torch.from_numpy(INPUTS["m43"]))
    np.testing.assert_allclose(got.numpy(), INPUTS["m34"] @ INPUTS["m43"], rtol=1e-5, atol=1e-6)


def test_a_mindspore_primitive_jisu_lacks_fails_when_built():
    from jisu.ops.operations import _mindspore_names

    assert "Bucketize" in _mindspore_names.MINDSPORE_PRIMITIVES and not hasattr(
        P.array_ops, "Bucketize"
    )
    with pytest.raises(NotImplementedError, match="Bucketize is not provided by jisu"):
        P.Bucketize()
    with pytest.raises(AttributeError):
        P.NotAMindSporePrimitive  # noqa: B018


def test_constructor_arguments_are_checked_by_name():
    with pytest.raises(TypeError, match=r"ReduceSum: keep_dims must be a bool. Received: "):
        P.ReduceSum(keep_dims=1)
    with pytest.raises(TypeError, match="TopK: sorted must be a bool"):
        P.TopK(sorted="yes")
    with pytest.raises(TypeError, match="ArgMaxWithValue: axis must be an int"):
        P.ArgMaxWithValue(axis=1.0)
    with pytest.raises(ValueError, match="Meshgrid: indexing must be 'xy' or 'ij'"):
        P.Meshgrid(indexing="xx")
    with pytest.raises(ValueError, match="StridedSlice: only one bit of ellipsis_mask"):
        P.StridedSlice(ellipsis_mask=3)
    with pytest.raises(TypeError, match="Add: takes 2 input"):
        P.Add()(torch.ones(2))
    with pytest.raises(ValueError, match=r"Split: the size of axis 0 \(3\) must be divisible"):
        P.Split(0, 2)(torch.ones(3))


def test_table_primitives_have_mindspores_names_and_docs():
    for name in ("Sqrt", "Greater", "ReduceMin", "GatherNd", "Fill", "LogicalAnd"):
        cls = getattr(P, name)
        assert cls.__name__ == name and f"``{name}" in cls.__doc__
        assert getattr(jisu.ops, name) is cls
    assert P.math_ops.Sqrt is P.Sqrt and P.array_ops.GatherNd is P.GatherNd


def test_scatter_updates_write_the_parameter_in_place():
    p = jisu.Parameter(torch.zeros(3, 2), name="p")
    out = P.ScatterNdUpdate()(p, torch.tensor([[0, 1], [2, 0]], dtype=torch.int32),
                              torch.tensor([5.0, 7.0]))  # fmt: skip
    assert out is p and p.requires_grad
    np.testing.assert_array_equal(p.detach().numpy(), [[0, 5], [0, 0], [7, 0]])


def test_function_package_at_mindspores_path():
    from jisu.ops.function import array_func, math_func
    from jisu.ops.function import range as ms_range

    assert ms_range is ops.range and array_func.gather_nd is ops.gather_nd
    assert math_func.norm is ops.norm
    got = ops.norm(torch.tensor([[3.0, 4.0]]), axis=1, p=2)  # MindSpore 1.x keywords (zoo)
    np.testing.assert_allclose(got.numpy(), [5.0])


def test_primitives_run_under_autograd():
    x = torch.from_numpy(INPUTS["f32"].copy()).requires_grad_()
    _, value = P.ArgMaxWithValue(axis=1)(x)
    (value.sum() + P.ReduceProd()(P.Square()(x), 2).sum()).backward()
    assert x.grad is not None and x.grad.shape == x.shape


def test_primitives_compile_without_graph_breaks():
    add, reduce_sum, div = P.Add(), P.ReduceSum(keep_dims=True), P.Div()
    arg_max, top_k, strided = P.ArgMaxWithValue(axis=1), P.TopK(), P.StridedSlice()

    def fn(x, i):
        y = add(x, 2.5) + reduce_sum(x, 1) + P.Greater()(3, i)
        _, value = arg_max(y)
        values, _ = top_k(y, 2)
        return value.sum() + values.sum() + div(i, i + 1).sum() + strided(x, (0, 1), (2, 3), (1, 1))

    x, i = torch.randn(2, 3), torch.arange(6, dtype=torch.int32).reshape(2, 3)
    compiled = torch.compile(fn, backend="eager", fullgraph=True)  # fullgraph: a break fails
    torch.testing.assert_close(compiled(x, i), fn(x, i))


def test_split_takes_mindspore_1x_keywords_the_zoo_passes():
    # ops.split(x, axis=, output_num=) is MindSpore 1.x's signature (2.x has
    # split_size_or_sections): equal parts along axis
    x = torch.from_numpy(INPUTS["f32"].copy())
    parts = ops.split(x, axis=2, output_num=2)
    assert isinstance(parts, tuple) and len(parts) == 2
    np.testing.assert_array_equal(parts[1].numpy(), INPUTS["f32"][:, :, 2:])
    with pytest.raises(ValueError, match="give split_size_or_sections or output_num"):
        ops.split(x, 2, axis=2, output_num=2)


def test_split_takes_sizes_as_a_tensor():
    # a zoo network (CTPN) passes a 0-d tensor as the chunk size: what an int gives, also
    # under torch.jit.trace (used by export's TorchScript exporter), where a 0-d tensor
    # cannot be iterated
    x = torch.arange(12.0).reshape(6, 2)
    expected = torch.split(x, 2)
    for size in (torch.tensor(2), torch.tensor([2, 2, 2])):
        got = ops.split(x, size)
        assert len(got) == 3 and all(torch.equal(a, b) for a, b in zip(got, expected))
    traced = torch.jit.trace(lambda t: ops.split(t, torch.tensor(3))[1], x)
    torch.testing.assert_close(traced(x), x[3:])
