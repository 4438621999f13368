"""PIL interop (Decode(to_pil), ToPIL, ToTensor) and batched NHWC input of the vision ops,
against MindSpore 2.10's recorded outputs (tests/fixtures/transforms_pil/make_fixtures.py)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import jisu.dataset as ds
from jisu.dataset import vision
from jisu.dataset.vision.pil import ToPIL, ToTensor
from tests.conftest import rows_of
from tests.dataset.transforms.test_transforms_more import CASES, INPUTS, check_case


@pytest.mark.parametrize("name", [c[0] for c in CASES if c[0].startswith(("totensor", "b_"))])
def test_matches_mindspore(name):
    # float resize / Rescale / Normalize round differently from MindSpore's kernels (within
    # 1e-6 relative, for single images as for batches); everything else is exact
    check_case(name, float_rtol=1e-6 if name.startswith("b_") else 0.0)


# -- PIL -------------------------------------------------------------------------------------


def _png(array: np.ndarray) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return np.frombuffer(buf.getvalue(), np.uint8)


def test_decode_to_pil():
    img = INPUTS["img"]
    out = vision.Decode(to_pil=True)(_png(img))
    assert isinstance(out, Image.Image) and out.mode == "RGB" and out.size == (12, 10)
    np.testing.assert_array_equal(np.asarray(out), img)
    gray = vision.Decode(to_pil=True)(_png(img[..., 0]))
    assert gray.mode == "RGB"  # as MindSpore: grayscale comes out as RGB
    with pytest.raises(TypeError, match="Decode: to_pil"):
        vision.Decode(to_pil=1)


@pytest.mark.parametrize(
    "array, mode",
    [
        (np.zeros((4, 5, 3), np.uint8), "RGB"),
        (np.zeros((4, 5, 4), np.uint8), "RGBA"),
        (np.zeros((4, 5, 2), np.uint8), "LA"),
        (np.zeros((4, 5, 1), np.uint8), "L"),
        (np.zeros((4, 5), np.uint8), "L"),
        (np.zeros((4, 5), bool), "1"),
        (np.zeros((4, 5), np.uint16), "I;16"),
        (np.zeros((4, 5), np.int32), "I"),
        (np.zeros((4, 5), np.float32), "F"),
    ],
)
def test_topil_modes_as_mindspore(array, mode):
    out = ToPIL()(array)
    assert out.mode == mode and out.size == (5, 4)
    assert ToPIL()(out) is out


@pytest.mark.parametrize(
    "array", [np.zeros((4, 5, 3), np.float32), np.zeros((3, 4, 5), np.uint8), np.zeros(3)]
)
def test_topil_refuses(array):
    with pytest.raises((TypeError, ValueError), match="ToPIL"):
        ToPIL()(array)


def test_totensor_of_pil_image():
    img = INPUTS["img"]
    want = img.transpose(2, 0, 1).astype(np.float32) * np.float32(1 / 255)
    np.testing.assert_array_equal(ToTensor()(Image.fromarray(img)), want)
    # MindSpore's PIL path divides in float64 instead: at most 1 ulp from its array path
    ms_pil = (img.transpose(2, 0, 1) / 255).astype(np.float32)
    np.testing.assert_array_max_ulp(ToTensor()(Image.fromarray(img)), ms_pil, maxulp=1)
    assert ToTensor()(Image.fromarray(img[..., 0])).shape == (1, 10, 12)
    with pytest.raises(TypeError, match="ToTensor: output_type"):
        ToTensor(np.str_)


def test_vision_ops_accept_pil_images():
    img = INPUTS["img"]
    pil = Image.fromarray(img)
    for op in (vision.CenterCrop(4), vision.Pad(1), vision.HWC2CHW()):
        np.testing.assert_array_equal(op(pil), op(img))
    # Resize on a PIL image is Pillow's resize, as in MindSpore (see test_ms_ops_parity.py)
    np.testing.assert_array_equal(
        vision.Resize((6, 8))(pil), pil.resize((8, 6), Image.Resampling.BILINEAR)
    )
    ds.config.set_seed(3)
    a = vision.RandomResizedCrop(6)(pil)
    ds.config.set_seed(3)
    np.testing.assert_array_equal(a, vision.RandomResizedCrop(6)(img))


def test_pil_images_in_a_pipeline():
    img = INPUTS["img"]
    pngs = [_png(img), _png(img[::-1].copy())]

    def gen():
        for p in pngs:
            yield (p,)

    data = ds.GeneratorDataset(gen, ["image"], shuffle=False)
    data = data.map([vision.Decode(to_pil=True), vision.Resize((6, 8)), ToTensor()], ["image"])
    rows = rows_of(data)
    want = ToTensor()(vision.Resize((6, 8))(img))
    np.testing.assert_array_equal(np.array(rows[0], np.float32), want)

    def gen_pil():
        yield (Image.fromarray(img),)

    data = ds.GeneratorDataset(gen_pil, ["image"], shuffle=False).map([ToTensor()], ["image"])
    np.testing.assert_array_equal(np.array(rows_of(data)[0], np.float32), ToTensor()(img))


# -- batched input ---------------------------------------------------------------------------

DETERMINISTIC = [
    vision.Resize((6, 8)),
    vision.Resize(5),
    vision.CenterCrop(14),
    vision.Pad([1, 2, 3, 4], fill_value=7),
    vision.Pad(2, padding_mode=vision.Border.EDGE),
    vision.Rescale(1 / 255, -0.5),
    vision.Normalize([1, 2, 3], [4, 5, 6]),
    vision.HWC2CHW(),
]


@pytest.mark.parametrize("op", DETERMINISTIC, ids=lambda op: repr(op)[:40])
def test_batched_equals_per_image(op):
    batch = INPUTS["batch"]
    np.testing.assert_array_equal(op(batch), np.stack([op(x) for x in batch]))


RANDOM = [
    vision.RandomCrop(6),
    vision.RandomHorizontalFlip(),
    vision.RandomVerticalFlip(),
    vision.RandomResizedCrop(6),
    vision.RandomColorAdjust(0.5, 0.5, 0.5, 0.2),
]


@pytest.mark.parametrize("op", RANDOM, ids=lambda op: type(op).__name__)
def test_batched_random_ops_draw_per_image(op):
    batch = np.stack([INPUTS["img"]] * 16)
    out = op(batch)
    assert out.shape[0] == 16 and out.dtype == np.uint8
    assert len({x.tobytes() for x in out}) > 1  # identical inputs, different draws


@pytest.mark.parametrize("op", RANDOM, ids=lambda op: type(op).__name__)
def test_batched_random_ops_seeded_and_worker_independent(op):
    images = np.stack([INPUTS["img"]] * 24)

    def run(workers):
        ds.config.set_seed(11)
        data = ds.NumpySlicesDataset({"image": images}, shuffle=False).batch(4)
        data = data.map([op], ["image"], num_parallel_workers=workers)
        return rows_of(data)

    one = run(1)
    assert one == run(3)
    assert np.array(one).shape[:2] == (6, 4)


def test_batched_deterministic_ops_in_pipeline():
    batch = INPUTS["batch"]
    data = ds.NumpySlicesDataset({"image": batch}, shuffle=False).batch(3)
    data = data.map([vision.Resize((6, 8)), vision.CenterCrop(4)], ["image"])
    want = vision.CenterCrop(4)(vision.Resize((6, 8))(batch))
    np.testing.assert_array_equal(np.array(rows_of(data)[0], np.uint8), want)


def test_empty_batch_is_an_error():
    with pytest.raises(ValueError, match="Resize: the batch is empty"):
        vision.Resize(4)(np.zeros((0, 5, 5, 3), np.uint8))


def test_a_pil_image_in_gives_a_pil_image_out_where_the_result_is_still_an_image():
    from PIL import Image

    from jisu.dataset import vision

    pixels = np.random.default_rng(3).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    image = Image.fromarray(pixels)
    resized = vision.Resize((10, 12))(image)
    assert isinstance(resized, Image.Image) and resized.size == (12, 10)
    np.testing.assert_array_equal(
        np.asarray(resized), np.asarray(image.resize((12, 10), Image.Resampling.BILINEAR))
    )
    flipped = vision.RandomHorizontalFlip(1.0)(image)
    assert isinstance(flipped, Image.Image)
    np.testing.assert_array_equal(np.asarray(flipped), pixels[:, ::-1])
    # MindSpore's HorizontalFlip returns an array for a PIL image (its RandomHorizontalFlip a
    # PIL image): jisu's follow it, op by op (tests/dataset/vision/test_vision_parity.py)
    np.testing.assert_array_equal(vision.HorizontalFlip()(image), pixels[:, ::-1])
    assert vision.Grayscale()(image).mode == "L"
    for op in (vision.ToTensor(), vision.Normalize([0, 0, 0], [1, 1, 1]), vision.HWC2CHW()):
        assert isinstance(op(image), np.ndarray)  # no longer an 8-bit HWC image
