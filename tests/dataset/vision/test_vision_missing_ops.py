"""The vision ops jisu added in issue 51 against MindSpore 2.10's recorded outputs and argument
errors (``tests/fixtures/vision_missing_ops``): RgbToHsv, HsvToRgb, FiveCrop, TenCrop,
NormalizePad, ToNumpy, Erase, SlicePatches, RandomAdjustSharpness, LinearTransformation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset import vision as v

FIXTURES = Path(__file__).parent.parent.parent / "fixtures" / "vision_missing_ops"
OUT = dict(np.load(FIXTURES / "outputs.npz"))
ERRORS = json.loads((FIXTURES / "errors.json").read_text())
RGB, GRAY, UNIT = OUT["rgb"], OUT["gray"], OUT["unit"]
Image = pytest.importorskip("PIL.Image")


def test_fixture_is_mindspore_2_10():
    assert ERRORS["mindspore"].startswith("2.10")


def _same(got, name: str) -> None:
    want = OUT[name]
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "name, op, image",
    [
        ("RgbToHsv/unit_hwc", v.RgbToHsv(True), "unit"),
        ("RgbToHsv/unit_chw", v.RgbToHsv(), "unit_chw"),
        ("RgbToHsv/uint8_hwc", v.RgbToHsv(True), "rgb"),
        ("RgbToHsv/batch", v.RgbToHsv(True), "batch"),
        ("HsvToRgb/hsv_hwc", v.HsvToRgb(True), "hsv"),
        ("HsvToRgb/batch", v.HsvToRgb(True), "batch"),
    ],
)
def test_hsv_conversions_equal_mindspore_float64(name, op, image):
    _same(op(OUT[image]), name)  # exact: the same float64 formulas as colorsys


def test_hsv_to_rgb_chw_and_round_trip():
    _same(v.HsvToRgb()(np.ascontiguousarray(OUT["hsv"].transpose(2, 0, 1))), "HsvToRgb/hsv_chw")
    back = v.HsvToRgb(True)(v.RgbToHsv(True)(UNIT))
    np.testing.assert_allclose(back, UNIT, atol=1e-12)


@pytest.mark.parametrize(
    "name, op",
    [
        ("FiveCrop_3", v.FiveCrop(3)),
        ("FiveCrop_4x6", v.FiveCrop((4, 6))),
        ("FiveCrop_6x5", v.FiveCrop([6, 5])),
        ("TenCrop_4x6", v.TenCrop((4, 6))),
        ("TenCrop_4x6_v", v.TenCrop((4, 6), True)),
        ("TenCrop_3", v.TenCrop(3)),
    ],
)
def test_five_and_ten_crop_equal_mindspore(name, op):
    crops = op(Image.fromarray(RGB))  # a PIL image gives PIL images, as MindSpore's
    assert all(isinstance(c, Image.Image) for c in crops)
    _same(np.stack([np.asarray(c) for c in crops]), name)
    _same(np.stack(op(RGB)), name)  # jisu takes an array too


def test_five_crop_gray_and_in_a_pipeline():
    _same(np.stack(v.FiveCrop(2)(GRAY)), "FiveCrop_gray")
    data = ds.NumpySlicesDataset([RGB], ["image"], shuffle=False)
    data = data.map([v.FiveCrop(3), lambda *crops: np.stack(crops)], input_columns="image")
    (row,) = list(data.create_tuple_iterator(output_numpy=True))
    _same(row[0], "FiveCrop_3")


@pytest.mark.parametrize(
    "name, op, image",
    [
        ("hwc", v.NormalizePad([121.5, 115.0, 100.25], [70.0, 68.5, 71.0]), RGB),
        ("f16", v.NormalizePad([121.5, 115.0, 100.25], [70.0, 68.5, 71.0], "float16"), RGB),
        (
            "chw",
            v.NormalizePad([121.5, 115.0, 100.25], [70.0, 68.5, 71.0], is_hwc=False),
            np.ascontiguousarray(RGB.transpose(2, 0, 1)),
        ),
        ("one_mean", v.NormalizePad([100], [50]), RGB),
        ("gray", v.NormalizePad([100], [50]), GRAY),
        ("float", v.NormalizePad([121.5, 115.0, 100.25], [70.0, 68.5, 71.0]), UNIT * 255),
    ],
)
def test_normalize_pad_equals_mindspore(name, op, image):
    """CHW output is MindSpore's; HWC output keeps each value with its pixel, where MindSpore
    2.10 writes the values in HWC order and then the zeros into the (H, W, C + 1) buffer:
    the same values, flattened, in another place."""
    got = op(image)
    want = OUT[f"NormalizePad/{name}"]
    assert got.dtype == want.dtype and got.shape == want.shape
    if name == "chw":
        np.testing.assert_array_equal(got, want)
        return
    planes = image[..., None] if image.ndim == 2 else image
    formula = (planes.astype(np.float32) - np.float32(op.mean)) / np.float32(op.std)
    np.testing.assert_array_equal(got[..., :-1], formula.astype(op.dtype))
    assert not got[..., -1].any()
    values = got[..., :-1].size
    np.testing.assert_array_equal(want.ravel()[:values], got[..., :-1].ravel())
    assert not want.ravel()[values:].any()


def test_to_numpy_equals_mindspore():
    _same(v.ToNumpy()(Image.fromarray(RGB)), "ToNumpy/pil")
    _same(v.ToNumpy()(Image.fromarray(GRAY)), "ToNumpy/gray_pil")


@pytest.mark.parametrize(
    "name, args",
    [
        ("zero", (1, 2, 3, 4)),
        ("rgb", (0, 0, 7, 9, (10.7, 20.5, 2.5))),
        ("half", (2, 3, 5, 6, 1.5)),
        ("corner", (6, 8, 1, 1, 255)),
    ],
)
def test_erase_equals_mindspore(name, args):
    image = RGB.copy()
    _same(v.Erase(*args)(image), f"Erase/{name}")
    np.testing.assert_array_equal(image, RGB)  # jisu returns a new array


def test_erase_float_and_box_cut_at_the_edges():
    _same(v.Erase(1, 2, 3, 4, 7.25)(UNIT), "Erase/float")
    out = v.Erase(5, 7, 3, 3, 9)(RGB)  # starts inside: cut at the edges, as MindSpore
    assert (out[5:, 7:] == 9).all() and (out[:5] == RGB[:5]).all()


@pytest.mark.parametrize(
    "name, args, image",
    [
        ("2x2", (2, 2), RGB),
        ("3x2_pad9", (3, 2, v.SliceMode.PAD, 9), RGB),
        ("3x2_drop", (3, 2, v.SliceMode.DROP), RGB),
        ("1x1", (1, 1), RGB),
        ("7x9", (7, 9), RGB),
        ("gray_2x4", (2, 4, v.SliceMode.PAD, 3), GRAY),
        ("float_2x4", (2, 4, v.SliceMode.PAD, 3), UNIT),
    ],
)
def test_slice_patches_equal_mindspore(name, args, image):
    _same(
        np.stack(v.SlicePatches(*args)(image)) if name != "1x1" else v.SlicePatches(*args)(image),
        f"SlicePatches/{name}",
    )


def test_slice_patches_to_columns_in_a_pipeline():
    data = ds.NumpySlicesDataset([RGB], ["image"], shuffle=False)
    data = data.map(
        v.SlicePatches(2, 2), input_columns="image", output_columns=["a", "b", "c", "d"]
    )
    (row,) = list(data.create_tuple_iterator(output_numpy=True))
    _same(np.stack(row), "SlicePatches/2x2")


@pytest.mark.parametrize("degree", [0.0, 0.5, 2.0])
def test_random_adjust_sharpness_equals_mindspore(degree):
    _same(v.RandomAdjustSharpness(degree, 1.0)(RGB), f"RandomAdjustSharpness/{degree}")
    _same(v.RandomAdjustSharpness(degree, 0.0)(RGB), "RandomAdjustSharpness/never")


def test_linear_transformation_equals_mindspore():
    matrix, mean = OUT["lt_matrix"], OUT["lt_mean"]
    _same(v.LinearTransformation(matrix, mean)(OUT["small"]), "LinearTransformation/f64")
    got = v.LinearTransformation(matrix.astype(np.float32), mean.astype(np.float32))(
        OUT["small"].astype(np.float32)
    )
    # float32 dot products: the summation order (BLAS) may differ in the last bits
    want = OUT["LinearTransformation/f32"]
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


_ms = v  # the cases below are written as in the fixture script
CASES = {
    "RgbToHsv(1)": lambda: v.RgbToHsv(1),
    "RgbToHsv(None)": lambda: v.RgbToHsv(None),
    "HsvToRgb('a')": lambda: v.HsvToRgb("a"),
    "RgbToHsv()(gray)": lambda: v.RgbToHsv(True)(GRAY.astype(np.float32)),
    "RgbToHsv()(4 channels)": lambda: v.RgbToHsv(True)(np.zeros((3, 3, 4), np.float32)),
    "HsvToRgb()(hwc as chw)": lambda: v.HsvToRgb()(OUT["hsv"]),
    "FiveCrop(0)": lambda: v.FiveCrop(0),
    "FiveCrop(-1)": lambda: v.FiveCrop(-1),
    "FiveCrop(1.5)": lambda: v.FiveCrop(1.5),
    "FiveCrop('a')": lambda: v.FiveCrop("a"),
    "FiveCrop(True)": lambda: v.FiveCrop(True),
    "FiveCrop((2,))": lambda: v.FiveCrop((2,)),
    "FiveCrop((2,3,4))": lambda: v.FiveCrop((2, 3, 4)),
    "FiveCrop((0,2))": lambda: v.FiveCrop((0, 2)),
    "FiveCrop(16777217)": lambda: v.FiveCrop(16777217),
    "FiveCrop(8)(7x9 image)": lambda: v.FiveCrop(8)(Image.fromarray(RGB)),
    "TenCrop(0)": lambda: v.TenCrop(0),
    "TenCrop(2, 1)": lambda: v.TenCrop(2, 1),
    "TenCrop(2, 'x')": lambda: v.TenCrop(2, "x"),
    "NormalizePad(mean=3)": lambda: v.NormalizePad(3, [1.0]),
    "NormalizePad(lengths differ)": lambda: v.NormalizePad([1, 2], [1, 2, 3]),
    "NormalizePad(mean=-1)": lambda: v.NormalizePad([-1], [1]),
    "NormalizePad(mean=256)": lambda: v.NormalizePad([256], [1]),
    "NormalizePad(std=0)": lambda: v.NormalizePad([1], [0]),
    "NormalizePad(std=256)": lambda: v.NormalizePad([1], [256]),
    "NormalizePad(mean=['a'])": lambda: v.NormalizePad(["a"], [1]),
    "NormalizePad(dtype=np.float32)": lambda: v.NormalizePad([1], [1], np.float32),
    "NormalizePad(dtype='int8')": lambda: v.NormalizePad([1], [1], "int8"),
    "NormalizePad(dtype='float64')": lambda: v.NormalizePad([1], [1], "float64"),
    "NormalizePad(is_hwc=1)": lambda: v.NormalizePad([1], [1], is_hwc=1),
    "NormalizePad(empty)()": lambda: v.NormalizePad([], [])(RGB),
    "NormalizePad(2 means)(rgb)": lambda: v.NormalizePad([1, 2], [1, 2])(RGB),
    "NormalizePad(3 means)(gray)": lambda: v.NormalizePad([1, 2, 3], [1, 2, 3])(GRAY),
    "NormalizePad()(batch)": lambda: v.NormalizePad([1], [1])(RGB[None]),
    "Erase(-1,0,1,1)": lambda: v.Erase(-1, 0, 1, 1),
    "Erase(0,-1,1,1)": lambda: v.Erase(0, -1, 1, 1),
    "Erase(0,0,0,1)": lambda: v.Erase(0, 0, 0, 1),
    "Erase(0,0,1,0)": lambda: v.Erase(0, 0, 1, 0),
    "Erase(1.0,0,1,1)": lambda: v.Erase(1.0, 0, 1, 1),
    "Erase(True,0,1,1)": lambda: v.Erase(True, 0, 1, 1),
    "Erase(value=256)": lambda: v.Erase(0, 0, 1, 1, 256),
    "Erase(value=-1)": lambda: v.Erase(0, 0, 1, 1, -1),
    "Erase(value=(1,2))": lambda: v.Erase(0, 0, 1, 1, (1, 2)),
    "Erase(value=[1,2,3])": lambda: v.Erase(0, 0, 1, 1, [1, 2, 3]),
    "Erase(value='a')": lambda: v.Erase(0, 0, 1, 1, "a"),
    "Erase(inplace=1)": lambda: v.Erase(0, 0, 1, 1, 0, 1),
    "Erase(box past bottom)": lambda: v.Erase(5, 0, 3, 2)(RGB),
    "Erase(box past right)": lambda: v.Erase(0, 7, 2, 3)(RGB),
    "Erase(box taller)": lambda: v.Erase(0, 0, 8, 2)(RGB),
    "Erase(top outside)": lambda: v.Erase(10, 0, 1, 1)(RGB),
    "Erase()(gray)": lambda: v.Erase(0, 0, 1, 1)(GRAY),
    "Erase()(4 channels)": lambda: v.Erase(0, 0, 1, 1)(np.zeros((3, 3, 4), np.uint8)),
    "SlicePatches(0,1)": lambda: v.SlicePatches(0, 1),
    "SlicePatches(1,0)": lambda: v.SlicePatches(1, 0),
    "SlicePatches(1.0,1)": lambda: v.SlicePatches(1.0, 1),
    "SlicePatches(True,1)": lambda: v.SlicePatches(True, 1),
    "SlicePatches(slice_mode=0)": lambda: v.SlicePatches(1, 1, 0),
    "SlicePatches(fill_value=256)": lambda: v.SlicePatches(1, 1, v.SliceMode.PAD, 256),
    "SlicePatches(fill_value=-1)": lambda: v.SlicePatches(1, 1, v.SliceMode.PAD, -1),
    "SlicePatches(fill_value=1.5)": lambda: v.SlicePatches(1, 1, v.SliceMode.PAD, 1.5),
    "SlicePatches(8,1)(7x9)": lambda: v.SlicePatches(8, 1)(RGB),
    "SlicePatches(1,10)(7x9)": lambda: v.SlicePatches(1, 10)(RGB),
    "SlicePatches()(batch)": lambda: v.SlicePatches(2, 2)(RGB[None]),
    "RandomAdjustSharpness(-1)": lambda: v.RandomAdjustSharpness(-1),
    "RandomAdjustSharpness('a')": lambda: v.RandomAdjustSharpness("a"),
    "RandomAdjustSharpness(True)": lambda: v.RandomAdjustSharpness(True),
    "RandomAdjustSharpness(2, 1.5)": lambda: v.RandomAdjustSharpness(2.0, 1.5),
    "RandomAdjustSharpness(2, -0.1)": lambda: v.RandomAdjustSharpness(2.0, -0.1),
    "RandomAdjustSharpness(2, 1)": lambda: v.RandomAdjustSharpness(2.0, 1),
    "RandomAdjustSharpness()(batch)": lambda: v.RandomAdjustSharpness(2.0, 1.0)(RGB[None]),
    "LinearTransformation(list)": lambda: v.LinearTransformation(np.eye(3).tolist(), np.ones(3)),
    "LinearTransformation(mean list)": lambda: v.LinearTransformation(np.eye(3), [1, 1, 1]),
    "LinearTransformation(not square)": lambda: v.LinearTransformation(np.ones((3, 2)), np.ones(3)),
    "LinearTransformation(mean length)": lambda: v.LinearTransformation(np.eye(3), np.ones(4)),
    "LinearTransformation()(wrong size)": lambda: v.LinearTransformation(np.eye(10), np.ones(10))(
        RGB
    ),
}


def test_every_recorded_case_is_checked():
    assert set(CASES) == set(ERRORS["errors"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_errors_are_caught_as_mindspore_2_10s(case):
    want = ERRORS["errors"][case]
    if want == "ok":
        CASES[case]()
        return
    with pytest.raises(Exception) as info:
        CASES[case]()
    assert isinstance(info.value, {"TypeError": TypeError, "ValueError": ValueError,
                                   "RuntimeError": RuntimeError}[want])  # fmt: skip
    assert type(info.value).__name__ != "AssertionError"
