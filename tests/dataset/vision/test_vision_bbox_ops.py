"""The bounding-box vision ops jisu added in issue 51 (RandomHorizontalFlipWithBBox,
RandomVerticalFlipWithBBox, ResizeWithBBox, RandomResizeWithBBox, RandomCropWithBBox,
RandomResizedCropWithBBox, BoundingBoxAugment): deterministic outputs and error classes against
MindSpore 2.10's recorded answers (``tests/fixtures/vision_bbox_ops``), the random crops
against an independent computation of MindSpore's box rule."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset import vision as v
from jisu.dataset.vision import Border, Inter  # noqa: F401  (used by the fixture's strings)
from jisu.dataset.vision.random_crop_resize import sample_crop

FIXTURES = Path(__file__).parent.parent.parent / "fixtures" / "vision_bbox_ops"
OUT = dict(np.load(FIXTURES / "outputs.npz"))
MS = json.loads((FIXTURES / "errors.json").read_text())
IMAGE = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)  # the fixture's bad-input image


def test_fixture_is_mindspore_2_10():
    assert MS["mindspore"].startswith("2.10")


@pytest.mark.parametrize("name", sorted(MS["cases"]))
def test_deterministic_outputs_equal_mindspore(name):
    call, which = MS["cases"][name]
    boxes = OUT["boxes"].copy()
    image, bbox = eval(call)(OUT[which], boxes)
    for got, key in ((image, f"{name}/image"), (bbox, f"{name}/bbox")):
        want = OUT[key]
        assert got.dtype == want.dtype and got.shape == want.shape
        if key == "resize_gray_3x7/image":  # jisu's Resize of float32 pixels: within 1 ulp
            np.testing.assert_allclose(got, want, rtol=1e-6)
        else:
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(boxes, OUT["boxes"])  # the input is not written to


@pytest.mark.parametrize("call", sorted(MS["args"]))
def test_argument_errors_are_mindspore_classes_at_construction(call):
    want = MS["args"][call]
    if want == "ok":
        eval(call)
        return
    with pytest.raises(getattr(builtins, want), match=call[2 : call.index("(")]):
        eval(call)


#: image batches: MindSpore 2.10's ResizeWithBBox reads a batch's first two axes as the
#: image's height and width; jisu refuses the batch (a RuntimeError too)
KEPT_DIFFERENCES = {
    "v.ResizeWithBBox((3, 5)) | image_4d",
    "v.RandomResizeWithBBox(4) | image_4d",
}

INPUTS = {
    "bbox_int32": (IMAGE, np.array([[1, 2, 3, 2]], np.int32)),
    "bbox_float64": (IMAGE, np.array([[1, 2, 3, 2]], np.float64)),
    "bbox_3_columns": (IMAGE, np.array([[1, 2, 3]], np.float32)),
    "bbox_1d": (IMAGE, np.array([1, 2, 3, 2], np.float32)),
    "bbox_empty": (IMAGE, np.zeros((0, 4), np.float32)),
    "bbox_past_right": (IMAGE, np.array([[5, 2, 4, 2]], np.float32)),
    "bbox_past_bottom": (IMAGE, np.array([[1, 3, 2, 4]], np.float32)),
    "bbox_negative_x": (IMAGE, np.array([[-1, 2, 3, 2]], np.float32)),
    "bbox_negative_y": (IMAGE, np.array([[1, -0.5, 3, 2]], np.float32)),
    "image_1d": (np.zeros(8, np.uint8), np.array([[0, 0, 1, 1]], np.float32)),
    "image_4d": (np.zeros((2, 6, 8, 3), np.uint8), np.array([[0, 0, 1, 1]], np.float32)),
    "bbox_edge_tolerance": (IMAGE, np.array([[4, 2, 4.00005, 4.00005]], np.float32)),
    "bbox_zero_width": (IMAGE, np.array([[3, 2, 0, 2, 5]], np.float32)),
}


@pytest.mark.parametrize("case", sorted(MS["inputs"]))
def test_bad_image_and_boxes_get_mindspore_classes(case):
    call, name = case.split(" | ")
    image, bbox = INPUTS[name]
    want = "RuntimeError" if case in KEPT_DIFFERENCES else MS["inputs"][case]
    op = eval(call)
    if want == "ok":
        _, out_bbox = op(image, bbox)
        assert out_bbox.dtype == np.float32 and out_bbox.shape[1] == bbox.shape[1]
        return
    with pytest.raises(getattr(builtins, want)):
        op(image, bbox)


def _expected_crop(boxes: np.ndarray, top: int, left: int, h: int, w: int) -> np.ndarray:
    """MindSpore's rule, in float64: boxes not touching the closed crop rectangle dropped, the
    others clipped to it and shifted to its origin, extra columns kept."""
    rows = []
    for box in boxes.astype(np.float64):
        x0, y0, x1, y1 = box[0], box[1], box[0] + box[2], box[1] + box[3]
        if x0 > left + w or y0 > top + h or x1 < left or y1 < top:
            continue
        nx0, ny0 = max(x0, left) - left, max(y0, top) - top
        nx1, ny1 = min(x1, left + w) - left, min(y1, top + h) - top
        rows.append([nx0, ny0, nx1 - nx0, ny1 - ny0, *box[4:]])
    return np.array(rows, np.float64).reshape(-1, boxes.shape[1])


def _random_boxes(rng: np.random.Generator, height: int, width: int, n: int) -> np.ndarray:
    x = rng.integers(0, width, n).astype(np.float32)
    y = rng.integers(0, height, n).astype(np.float32)
    w = np.floor(rng.random(n) * (width - x + 1)).astype(np.float32)
    h = np.floor(rng.random(n) * (height - y + 1)).astype(np.float32)
    labels = rng.integers(0, 80, (n, 2)).astype(np.float32)
    return np.column_stack([x, y, w, h, labels]).astype(np.float32)


@pytest.mark.parametrize("seed", range(40))
def test_random_crop_with_bbox_clips_shifts_and_drops_boxes(seed):
    rng = np.random.default_rng(seed)
    height, width = 12, 16
    # every pixel holds its own coordinates: the crop's first pixel tells where it was taken
    image = np.stack(np.mgrid[0:height, 0:width], axis=-1).astype(np.int32)
    boxes = _random_boxes(rng, height, width, 12)
    op = v.RandomCropWithBBox((5, 7))
    out, got = op.apply(image, boxes, rng=np.random.default_rng(seed + 1000))
    assert out.shape == (5, 7, 2)
    top, left = (int(c) for c in out[0, 0])
    np.testing.assert_array_equal(out, image[top : top + 5, left : left + 7])
    want = _expected_crop(boxes, top, left, 5, 7)
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert got.dtype == np.float32
    assert (got[:, :2] >= 0).all() and (got[:, 0] + got[:, 2] <= 7).all()
    assert (got[:, 1] + got[:, 3] <= 5).all()


def test_random_crop_with_bbox_padding_moves_boxes():
    image = np.zeros((4, 4), np.uint8)
    boxes = np.array([[0, 0, 4, 4, 3]], np.float32)
    op = v.RandomCropWithBBox((8, 6), padding=(1, 2), padding_mode=Border.EDGE)
    out, got = op(image, boxes)  # padded to 8 x 6: the crop is the whole padded image
    assert out.shape == (8, 6)
    np.testing.assert_array_equal(got, [[1, 2, 4, 4, 3]])


@pytest.mark.parametrize("seed", range(40))
def test_random_resized_crop_with_bbox_crops_then_scales_boxes(seed):
    rng = np.random.default_rng(seed)
    height, width = 20, 30
    image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    boxes = _random_boxes(rng, height, width, 10)
    op = v.RandomResizedCropWithBBox((9, 11), scale=(0.1, 0.6), ratio=(0.5, 2.0))
    out, got = op.apply(image, boxes, rng=np.random.default_rng(seed))
    # the crop RandomResizedCrop draws from the same generator
    top, left, h, w = sample_crop(
        height, width, (0.1, 0.6), (0.5, 2.0), 10, np.random.default_rng(seed)
    )
    assert out.shape == (9, 11, 3)
    want = _expected_crop(boxes, top, left, h, w)
    want[:, [0, 2]] *= 11 / w
    want[:, [1, 3]] *= 9 / h
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert (got[:, 0] + got[:, 2] <= 11 + 1e-4).all() and (got[:, 1] + got[:, 3] <= 9 + 1e-4).all()


def test_random_resize_with_bbox_scales_boxes_by_the_size_ratio():
    boxes = OUT["boxes"].copy()
    for seed in range(8):
        out, got = v.RandomResizeWithBBox((7, 5)).apply(
            OUT["image"], boxes, rng=np.random.default_rng(seed)
        )
        assert out.shape == (7, 5, 3)
        np.testing.assert_array_equal(got, OUT["resize_7x5/bbox"])  # MindSpore's boxes


def test_bounding_box_augment_changes_only_chosen_box_regions():
    image = np.full((10, 12), 7, np.uint8)
    boxes = np.array([[0, 0, 3, 2], [6, 5, 4, 4]], np.float32)
    op = v.BoundingBoxAugment(v.Invert(), ratio=0.5)
    changed = set()
    for seed in range(30):
        out, got = op.apply(image, boxes, rng=np.random.default_rng(seed))
        np.testing.assert_array_equal(got, boxes)
        inside = np.zeros_like(image, bool)
        inside[0:2, 0:3] = inside[5:9, 6:10] = True
        assert (out[~inside] == 7).all()
        changed |= {i for i, (y, x) in enumerate([(0, 0), (5, 6)]) if out[y, x] == 248}
    assert changed == {0, 1}


def test_bbox_ops_in_a_pipeline_are_seeded_and_move_boxes():
    images = np.stack([OUT["image"]] * 4)
    boxes = np.stack([OUT["boxes"]] * 4)
    data = ds.NumpySlicesDataset((images, boxes), ["image", "bbox"], shuffle=False)
    ops = [v.RandomHorizontalFlipWithBBox(1.0), v.RandomCropWithBBox(8)]
    mapped = data.map(ops, input_columns=["image", "bbox"])
    ds.config.set_seed(51)
    first = [[c.copy() for c in row] for row in mapped.create_tuple_iterator(output_numpy=True)]
    ds.config.set_seed(51)
    again = list(mapped.create_tuple_iterator(output_numpy=True))
    for (img, bbox), (img2, bbox2) in zip(first, again):
        assert img.shape == (8, 8, 3)
        np.testing.assert_array_equal(img, img2)
        np.testing.assert_array_equal(bbox, bbox2)
        assert bbox.shape[1] == 6 and (bbox[:, 0] + bbox[:, 2] <= 8).all()
