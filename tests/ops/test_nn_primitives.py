"""MindSpore parity of jisu's neural-network, image, loss, detection and random primitives
and functions: every case of tests/fixtures/ms_primitives_nn (recorded from MindSpore 2.10 on
CPU, and from 2.0.0 for names 2.10 dropped, such as ``ResizeBilinear``) runs on jisu with the
same constructor arguments and inputs and must give MindSpore's values, dtypes and shapes (or
its error type); random cases give its shapes and dtypes (their distributions are checked in
test_nn_random.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import jisu.ops as ops
from jisu.ops import operations as P

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ms_primitives_nn"
CASES = json.loads((FIXTURES / "cases.json").read_text())


def _unpack() -> dict[str, np.ndarray]:
    """The recorded arrays: one flat buffer per dtype, indexed by the JSON in "_index"."""
    buffers = np.load(FIXTURES / "arrays.npz")
    out = {}
    for key, (dtype, offset, shape) in json.loads(str(buffers["_index"])).items():
        size = int(np.prod(shape)) if shape else 1
        out[key] = buffers[dtype][offset : offset + size].reshape(tuple(shape))
    return out


ARRAYS = _unpack()
DTYPES = {"int32": torch.int32}

# jisu checks these arguments where the primitive is built, with ValueError as its errors
# do; MindSpore raises RuntimeError when it runs
ERROR_EQUIVALENTS = {"RuntimeError": ("ValueError",)}


def _inputs(name: str, case: dict) -> list:
    out = []
    for i, v in enumerate(case["inputs"]):
        if i in case["array_inputs"]:
            out.append(torch.from_numpy(ARRAYS[f"{name}/in{i}"].copy()))
        else:
            out.append(tuple(v) if isinstance(v, list) else v)
    return out


def _kwargs(name: str, case: dict) -> dict:
    kw = {}
    for k, v in case["kwargs"].items():
        if k in case["array_kwargs"]:
            kw[k] = torch.from_numpy(ARRAYS[f"{name}/kw_{k}"].copy())
        elif isinstance(v, list):
            kw[k] = tuple(v)
        else:
            kw[k] = DTYPES.get(v, v) if isinstance(v, str) else v
    return kw


def _call(case: dict, kwargs: dict, inputs: list):
    callee = case["callee"]
    if callee.startswith("ops."):
        return getattr(ops, callee[4:])(*inputs, **kwargs)
    return getattr(P, callee)(**kwargs)(*inputs)


def _as_list(out, case: dict) -> list:
    assert isinstance(out, tuple) == case["tuple"], "tuple output must match MindSpore's"
    return list(out) if isinstance(out, tuple) else [out]


def _numpy_dtype(t: torch.Tensor) -> str:
    return str(t.detach().cpu().numpy().dtype)


def _close(name: str, got: torch.Tensor, want: np.ndarray) -> None:
    g = got.detach().cpu().numpy()
    assert g.shape == want.shape, f"{name}: shape {g.shape} != MindSpore's {want.shape}"
    if want.dtype.kind == "f":
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5, err_msg=name)
    else:
        np.testing.assert_array_equal(g, want, err_msg=name)


# cases where jisu keeps the documented meaning and MindSpore's CPU kernel does not; each is
# checked against its formula below instead
KNOWN_DIFFERENCES = {
    "resize_nn_half": "MindSpore 2.10's CPU kernel ignores half_pixel_centers for nearest",
    "maxpool_argmax_same": "MindSpore 2.10's CPU kernel puts all 'same' padding after",
    "apply_momentum_nesterov": "MindSpore 2.10's CPU kernel ignores use_nesterov",
}
# MindSpore's CPU Adam kernels return zero tensors and update their Parameters in place;
# jisu returns the updated tensors: only the Parameters are compared
PARAMETERS_ONLY = {"adam", "adam_nesterov", "adam_weight_decay"}
DETERMINISTIC = sorted(
    n for n, c in CASES.items() if not c.get("random") and n not in KNOWN_DIFFERENCES
)
RANDOM = sorted(n for n, c in CASES.items() if c.get("random"))


def _raises_like_mindspore(name: str, case: dict, kwargs: dict, inputs: list) -> None:
    allowed = (case["error"], *ERROR_EQUIVALENTS.get(case["error"], ()))
    with pytest.raises(Exception) as info:
        _call(case, kwargs, inputs)
    assert type(info.value).__name__ in allowed, f"{name}: {info.value!r}"


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_matches_mindspore(name: str) -> None:
    case = CASES[name]
    kwargs, inputs = _kwargs(name, case), _inputs(name, case)
    if "error" in case:
        _raises_like_mindspore(name, case, kwargs, inputs)
        return
    outs = _as_list(_call(case, kwargs, inputs), case)
    assert len(outs) == len(case["outputs"])
    for j, (got, meta) in enumerate(zip(outs, case["outputs"])):
        assert _numpy_dtype(got) == meta["dtype"], f"{name} output {j}"
        if name in PARAMETERS_ONLY:
            assert list(got.shape) == meta["shape"]
            continue
        if case["callee"] == "NMSWithMask" and j == 1:
            # MindSpore's CPU kernel gives 0..N-1 here; jisu gives each sorted box's index
            # in the input (its GPU kernel's meaning, which the zoo's gathers rely on)
            assert torch.equal(inputs[0][got.long()], outs[0])
            continue
        _close(f"{name} output {j}", got, ARRAYS[f"{name}/out{j}"])
    for i in case.get("params", ()):  # optimizer primitives update these in place
        _close(f"{name} parameter {i}", inputs[i], ARRAYS[f"{name}/param{i}"])


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.get("grad")))
def test_gradient_matches_mindspore(name: str) -> None:
    case = CASES[name]
    kwargs, inputs = _kwargs(name, case), _inputs(name, case)
    inputs[0] = inputs[0].clone().requires_grad_(True)
    out = _call(case, kwargs, inputs)
    first = out[0] if isinstance(out, tuple) else out
    (grad,) = torch.autograd.grad(first.sum(), inputs[0])
    _close(f"{name} gradient", grad, ARRAYS[f"{name}/grad"])


@pytest.mark.parametrize("name", RANDOM)
def test_random_shapes_and_dtypes_match_mindspore(name: str) -> None:
    case = CASES[name]
    kwargs, inputs = _kwargs(name, case), _inputs(name, case)
    if "error" in case:
        _raises_like_mindspore(name, case, kwargs, inputs)
        return
    outs = _as_list(_call(case, kwargs, inputs), case)
    for got, meta in zip(outs, case["outputs"]):
        assert list(got.shape) == meta["shape"]
        assert _numpy_dtype(got) == meta["dtype"]


def test_resize_nearest_half_pixel_centers_follows_tensorflow() -> None:
    """TensorFlow's rule, which MindSpore documents: source ``floor((i + 0.5) * in / out)``
    (MindSpore 2.10's CPU kernel samples ``floor(i * in / out)`` as without the flag)."""
    x = torch.from_numpy(ARRAYS["resize_nn_half/in0"].copy())
    got = P.ResizeNearestNeighbor((8, 3), half_pixel_centers=True)(x).numpy()
    rows = np.minimum(np.floor((np.arange(8) + 0.5) * 5 / 8), 4).astype(int)
    cols = np.minimum(np.floor((np.arange(3) + 0.5) * 7 / 3), 6).astype(int)
    np.testing.assert_array_equal(got, x.numpy()[:, :, rows][:, :, :, cols])
    legacy = P.ResizeNearestNeighbor((8, 3))(x).numpy()
    np.testing.assert_array_equal(legacy, ARRAYS["resize_nn_half/out0"])


def test_max_pool_with_argmax_same_pads_as_max_pool() -> None:
    """ "same" pads as TensorFlow (and MindSpore's ``MaxPool``) do, the odd element after;
    each argmax points at its maximum in the sample's flattened (C, H, W) block."""
    x = torch.from_numpy(ARRAYS["maxpool_argmax_same/in0"].copy())
    out, idx = P.MaxPoolWithArgmax(kernel_size=3, strides=2, pad_mode="same")(x)
    torch.testing.assert_close(out, P.MaxPool(kernel_size=3, strides=2, pad_mode="same")(x))
    flat = x.reshape(x.shape[0], -1)
    assert torch.equal(flat.gather(1, idx.reshape(x.shape[0], -1).long()).reshape(out.shape), out)


def test_apply_momentum_nesterov_follows_the_documented_formula() -> None:
    """``variable -= lr * (gradient + momentum * accumulation)`` after the accumulation
    update, MindSpore's documented Nesterov step (its 2.10 CPU kernel takes the plain one)."""
    name = "apply_momentum_nesterov"
    var, acc, lr, grad, mom = _inputs(name, CASES[name])
    want_acc = acc * mom + grad
    want_var = var - lr * (grad + mom * want_acc)
    out = P.ApplyMomentum(use_nesterov=True)(var, acc, lr, grad, mom)
    assert out is var
    torch.testing.assert_close(acc, want_acc)
    torch.testing.assert_close(var, want_var)
    np.testing.assert_allclose(acc.numpy(), ARRAYS[f"{name}/param1"], rtol=1e-5)


@pytest.mark.parametrize(
    ("transform", "resize"),
    [
        ("align_corners", P.ResizeBilinearV2(align_corners=True)),
        ("half_pixel", P.ResizeBilinearV2(half_pixel_centers=True)),
        ("asymmetric", P.ResizeBilinearV2()),
    ],
)
def test_interpolate_takes_mindspore_1_keywords(transform: str, resize) -> None:
    """MindSpore 1.x's ``interpolate(x, sizes=..., coordinate_transformation_mode=...)``
    (still in some zoo projects; MindSpore 2 refuses it) resizes as the matching
    ``ResizeBilinearV2``, whose answers are recorded from MindSpore 2.10."""
    x = torch.from_numpy(ARRAYS["resize_bilinear_v2/in0"].copy())
    got = ops.interpolate(
        x, sizes=(8, 3), mode="bilinear", coordinate_transformation_mode=transform
    )
    torch.testing.assert_close(got, resize(x, (8, 3)))
    by_scale = ops.interpolate(
        x, scales=(1.0, 1.0, 2.0, 2.0), mode="bilinear", coordinate_transformation_mode=transform
    )
    torch.testing.assert_close(by_scale, resize(x, (10, 14)))
    line = ops.interpolate(
        x[:, :, 0], sizes=(9,), mode="linear", coordinate_transformation_mode=transform
    )
    torch.testing.assert_close(line, resize(x[:, :, :1], (1, 9))[:, :, 0])


def test_interpolate_1x_nearest_and_errors() -> None:
    x = torch.arange(12.0).reshape(1, 1, 3, 4)
    got = ops.interpolate(
        x, sizes=(6, 8), mode="nearest", coordinate_transformation_mode="asymmetric"
    )
    torch.testing.assert_close(got, x.repeat_interleave(2, 2).repeat_interleave(2, 3))
    with pytest.raises(ValueError, match="exactly one of sizes and scales"):
        ops.interpolate(x, sizes=(2, 2), scales=(1.0, 1.0, 2.0, 2.0))
    with pytest.raises(NotImplementedError, match="roi"):
        ops.interpolate(x, roi=(0.0,), sizes=(2, 2))


def test_ctc_loss_trains_and_its_gradient_output_is_the_backward_gradient() -> None:
    name = "ctc"
    x, indices, values, lengths = _inputs(name, CASES[name])
    x = x.clone().requires_grad_(True)
    loss, grad = P.CTCLoss()(x, indices, values, lengths)
    loss.sum().backward()
    torch.testing.assert_close(x.grad, grad)
    _close("ctc gradient output", grad, ARRAYS[f"{name}/out1"])


def test_detection_ops_keep_float16_boxes_without_overflow() -> None:
    """Pixel areas of real boxes overflow float16; the ops compute wider and give back the
    input's dtype, with float32's answers."""
    name = "iou"
    anchors, gts = (t * 8 for t in _inputs(name, CASES[name]))  # boxes up to ~800 px
    want = P.IOU()(anchors, gts)
    got = P.IOU()(anchors.half(), gts.half())
    assert got.dtype == torch.float16 and torch.isfinite(got).all()
    torch.testing.assert_close(got.float(), want, atol=2e-3, rtol=1e-2)
    boxes = torch.cat([anchors, torch.linspace(0.1, 0.9, len(anchors))[:, None]], 1)
    _, _, keep32 = P.NMSWithMask(0.3)(boxes)
    _, _, keep16 = P.NMSWithMask(0.3)(boxes.half())
    assert torch.equal(keep16, keep32)
    enc = P.BoundingBoxEncode()(anchors.half(), gts[:1].expand(len(anchors), 4).half())
    assert enc.dtype == torch.float16 and torch.isfinite(enc).all()


def test_ctc_loss_drops_blank_padding_of_the_labels() -> None:
    # mindocr pads every label to max_text_len with the blank (C - 1). MindSpore 2.10 and 2.0.0
    # printed, for x = default_rng(0).standard_normal((8, 2, 5)), labels [[1, 2, 4, 4],
    # [0, 0, 3, 4]] padded with the blank 4: [5.994931697845459, 8.265259742736816], the same
    # as for the labels without the padding.
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((8, 2, 5)).astype(np.float32))
    values = torch.tensor([1, 2, 4, 4, 0, 0, 3, 4], dtype=torch.int32)
    indices = torch.tensor([[i, j] for i in range(2) for j in range(4)], dtype=torch.int64)
    seq = torch.tensor([8, 8], dtype=torch.int32)
    loss, _ = P.CTCLoss(ctc_merge_repeated=True)(x, indices, values, seq)
    torch.testing.assert_close(loss, torch.tensor([5.994931697845459, 8.265259742736816]))
    stripped = torch.tensor([[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]])
    loss2, _ = P.CTCLoss()(x, stripped, torch.tensor([1, 2, 0, 0, 3]), seq)
    torch.testing.assert_close(loss2, loss)
