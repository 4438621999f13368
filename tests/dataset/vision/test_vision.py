"""Vision ops against independent NumPy formulas and distributional checks."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import simplejpeg

import jisu.dataset as ds
from jisu.dataset import vision
from jisu.dataset.vision import Border, Inter

RNG = np.random.default_rng(0)


def image(h=7, w=9, c=3, dtype=np.uint8):
    return RNG.integers(0, 256, (h, w, c)).astype(dtype)


def test_rescale_formula_and_dtype():
    x = image()
    out = vision.Rescale(1 / 255, -0.5)(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, x.astype(np.float64) / 255 - 0.5, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("size", [(7, 9), (150, 130)])  # the NumPy and the OpenCV path
@pytest.mark.parametrize("is_hwc", [True, False])
def test_normalize_per_channel(is_hwc, size):
    x = image(*size).astype(np.float32)
    if not is_hwc:
        x = x.transpose(2, 0, 1)
    mean, std = [10.0, 20.0, 30.0], [2.0, 4.0, 8.0]
    out = vision.Normalize(mean, std, is_hwc=is_hwc)(x)
    for c in range(3):
        channel = x[..., c] if is_hwc else x[c]
        got = out[..., c] if is_hwc else out[c]
        np.testing.assert_allclose(got, (channel - mean[c]) / std[c], rtol=1e-6)
    assert out.dtype == np.float32
    with pytest.raises(ValueError, match="Normalize: 3 mean/std values"):
        vision.Normalize(mean, std)(np.zeros((4, 4, 2), np.float32))


def test_hwc2chw_layouts():
    x = image()
    np.testing.assert_array_equal(vision.HWC2CHW()(x), np.moveaxis(x, -1, 0))
    batch = np.stack([x, x + 1])
    np.testing.assert_array_equal(vision.HWC2CHW()(batch), np.moveaxis(batch, -1, 1))
    gray = x[..., 0]
    assert vision.HWC2CHW()(gray).shape == gray.shape  # MindSpore passes HW through


def bilinear_reference(x: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Half-pixel-centre bilinear interpolation, written out in NumPy."""
    h, w = x.shape[:2]
    ys = np.clip((np.arange(out_h) + 0.5) * h / out_h - 0.5, 0, h - 1)
    xs = np.clip((np.arange(out_w) + 0.5) * w / out_w - 0.5, 0, w - 1)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    xf = x.astype(np.float64)
    top = xf[y0][:, x0] * (1 - wx) + xf[y0][:, x1] * wx
    bottom = xf[y1][:, x0] * (1 - wx) + xf[y1][:, x1] * wx
    return top * (1 - wy) + bottom * wy


def test_resize_bilinear_matches_the_formula():
    x = image(6, 8).astype(np.float32)
    out = vision.Resize((9, 12))(x)
    np.testing.assert_allclose(out, bilinear_reference(x, 9, 12), atol=1e-3)


def test_resize_nearest_and_shorter_side_rule():
    x = image(4, 6)
    out = vision.Resize((8, 12), Inter.NEAREST)(x)
    rows, cols = (np.arange(8) * 4) // 8, (np.arange(12) * 6) // 12
    np.testing.assert_array_equal(out, x[rows][:, cols])
    # MindSpore: Resize(4) on 8x12 -> 4x6, on 9x7 -> 5x4 (int(long * size / short))
    assert vision.Resize(4)(np.zeros((8, 12, 3), np.uint8)).shape == (4, 6, 3)
    assert vision.Resize(4)(np.zeros((9, 7, 3), np.uint8)).shape == (5, 4, 3)
    assert vision.Resize(3)(np.zeros((6, 6), np.uint8)).shape == (3, 3)


def test_center_crop_matches_mindspore():
    x = np.arange(25, dtype=np.uint8).reshape(5, 5, 1)
    np.testing.assert_array_equal(vision.CenterCrop(2)(x)[..., 0], [[6, 7], [11, 12]])
    small = np.arange(16, dtype=np.uint8).reshape(4, 4, 1)
    padded = vision.CenterCrop(6)(small)[..., 0]
    np.testing.assert_array_equal(padded, np.pad(small[..., 0], 1))


def test_random_crop_positions_are_uniform_and_cover_all_offsets():
    x = np.arange(5 * 6, dtype=np.int32).reshape(5, 6)
    op = vision.RandomCrop((3, 4))
    seen = {}
    rng = np.random.default_rng(1)
    for _ in range(3000):
        out = op.apply(x, rng=rng)
        top, left = divmod(int(out[0, 0]), 6)
        np.testing.assert_array_equal(out, x[top : top + 3, left : left + 4])
        seen[(top, left)] = seen.get((top, left), 0) + 1
    assert set(seen) == {(t, left) for t in range(3) for left in range(3)}
    counts = np.array(list(seen.values()))
    assert counts.min() > 3000 / 9 * 0.75  # each of 9 offsets ~ 333 times


def test_random_crop_padding_and_pad_if_needed():
    x = image(4, 4)
    out = vision.RandomCrop(8, padding=2, fill_value=7)(x)
    np.testing.assert_array_equal(out, np.pad(x, ((2, 2), (2, 2), (0, 0)), constant_values=7))
    grown = vision.RandomCrop((6, 6), pad_if_needed=True)(x)
    assert grown.shape == (6, 6, 3)
    with pytest.raises(ValueError, match="larger than the image"):
        vision.RandomCrop(6)(x)


@pytest.mark.parametrize(
    "op, axis", [(vision.RandomHorizontalFlip, 1), (vision.RandomVerticalFlip, 0)]
)
def test_flips_follow_their_probability(op, axis):
    x = image()
    np.testing.assert_array_equal(op(1.0)(x), np.flip(x, axis))
    np.testing.assert_array_equal(op(0.0)(x), x)
    rng = np.random.default_rng(2)
    flips = sum(not np.array_equal(op(0.3).apply(x, rng=rng), x) for _ in range(2000))
    assert abs(flips / 2000 - 0.3) < 0.04  # binomial sd ~ 0.01
    odd = x.astype(np.int64)  # a dtype OpenCV does not take: MindSpore 2.10 refuses it
    with pytest.raises(RuntimeError, match="int64"):
        op(1.0)(odd)


@pytest.mark.parametrize(
    "mode, numpy_mode",
    [
        (Border.CONSTANT, "constant"),
        (Border.EDGE, "edge"),
        (Border.REFLECT, "reflect"),
        (Border.SYMMETRIC, "symmetric"),
    ],
)
def test_pad_modes_match_numpy(mode, numpy_mode):
    x = image(5, 6)
    out = vision.Pad((1, 2, 3, 4), padding_mode=mode)(x)
    np.testing.assert_array_equal(out, np.pad(x, ((2, 4), (1, 3), (0, 0)), mode=numpy_mode))
    gray = x[..., 0]
    np.testing.assert_array_equal(
        vision.Pad(2, padding_mode=mode)(gray), np.pad(gray, 2, mode=numpy_mode)
    )


def test_pad_per_channel_fill():
    out = vision.Pad(1, fill_value=(1, 2, 3))(np.zeros((2, 2, 3), np.uint8))
    assert out[0, 0].tolist() == [1, 2, 3] and out[1, 1].tolist() == [0, 0, 0]


def test_decode_jpeg_and_png_to_rgb():
    rgb = np.zeros((16, 24, 3), np.uint8)
    rgb[..., 0] = 200  # red
    rgb[8:, :, 2] = 120
    jpeg = simplejpeg.encode_jpeg(rgb, quality=95, colorspace="RGB")
    decoded = vision.Decode()(np.frombuffer(jpeg, np.uint8))
    assert decoded.shape == (16, 24, 3) and decoded.dtype == np.uint8
    assert np.abs(decoded.astype(int) - rgb).max() <= 8
    _, png = cv2.imencode(".png", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    np.testing.assert_array_equal(vision.Decode()(png.ravel()), rgb)
    np.testing.assert_array_equal(vision.Decode()(png.tobytes()), rgb)
    with pytest.raises(ValueError, match="Decode: cannot decode"):
        vision.Decode()(np.frombuffer(jpeg[: len(jpeg) // 3] + b"garbage", np.uint8)[5:])


class _UnfusedRescale(vision.Rescale):
    """A subclass is not fused: the reference path, one op at a time."""


class _UnfusedNormalize(vision.Normalize):
    """Likewise."""


def test_rescale_normalize_run_fuses_into_one_pass_with_the_same_results():
    rng = np.random.default_rng(8)
    images = rng.integers(0, 256, (6, 5, 7, 3)).astype(np.uint8)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]

    def run(rescale, normalize):
        ops = [
            rescale(1 / 255, 0),
            normalize(mean, std),
            vision.RandomHorizontalFlip(),  # keeps its random draws after the fused run
            vision.HWC2CHW(),
        ]
        data = ds.NumpySlicesDataset({"image": images}, shuffle=False).map(ops, "image")
        return np.concatenate(
            [b[0] for b in data.batch(4).create_tuple_iterator(num_epochs=1, output_numpy=True)]
        )

    fused, unfused = run(vision.Rescale, vision.Normalize), run(_UnfusedRescale, _UnfusedNormalize)
    np.testing.assert_allclose(fused, unfused, rtol=1e-6, atol=1e-6)
    # and both equal the formula in float64, some rows mirrored
    formula = ((images / 255.0 - np.array(mean)) / np.array(std)).transpose(0, 3, 1, 2)
    flipped = [not np.allclose(fused[i], formula[i], atol=1e-5) for i in range(len(images))]
    for i, mirrored in enumerate(flipped):
        np.testing.assert_allclose(
            fused[i], formula[i][..., ::-1] if mirrored else formula[i], atol=1e-5
        )
    assert 0 < sum(flipped) < len(images)


def test_fuse_affine_joins_only_compatible_neighbours():
    from jisu.dataset.vision.pixel import ChannelAffine, fuse_affine

    flip = vision.RandomHorizontalFlip()
    steps = fuse_affine(
        [vision.Rescale(2, 1), vision.Normalize([1, 2, 3], [1, 1, 2]), flip, vision.Rescale(3, 0)]
    )
    assert [k for k, _ in steps] == [0, 2, 3] and steps[1][1] is flip
    joined = steps[0][1]
    assert isinstance(joined, ChannelAffine) and joined.name == "Rescale+Normalize"
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    expected = (x * 2 + 1 - np.array([1, 2, 3])) / np.array([1, 1, 2])
    np.testing.assert_allclose(joined(x), expected, rtol=1e-6)
    # different channel layouts, or channel counts, stay apart
    assert (
        len(
            fuse_affine(
                [vision.Normalize([1] * 3, [1] * 3), vision.Normalize([1] * 3, [1] * 3, False)]
            )
        )
        == 2
    )
    assert (
        len(fuse_affine([vision.Normalize([1] * 3, [1] * 3), vision.Normalize([1] * 4, [1] * 4)]))
        == 2
    )
    with pytest.raises(ValueError, match=r"Rescale\+Normalize: 3 mean/std values"):
        joined(np.zeros((4, 4, 2), np.float32))
