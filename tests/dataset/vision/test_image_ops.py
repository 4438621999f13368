"""Image pipeline ops: random resized crops, decode-time crops, color jitter, image folders."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
import simplejpeg
import torch
from PIL import Image

import jisu.dataset as ds
from jisu.dataset import vision
from jisu.dataset.vision.random_crop_resize import sample_crop
from tests.conftest import rows_of


def smooth_image(h=375, w=500):
    yy, xx = np.mgrid[0:h, 0:w]
    base = (np.sin(xx / 37) + np.cos(yy / 23)) * 60 + 128
    return np.stack([base, base[::-1], base[:, ::-1]], -1).clip(0, 255).astype(np.uint8)


def test_crop_areas_and_ratios_stay_in_range_and_positions_spread():
    rng = np.random.default_rng(0)
    H, W = 375, 500
    scale, ratio = (0.08, 1.0), (3 / 4, 4 / 3)
    areas, ratios, tops = [], [], []
    for _ in range(4000):
        top, left, h, w = sample_crop(H, W, scale, ratio, 10, rng)
        assert top >= 0 and top + h <= H and left >= 0 and left + w <= W
        areas.append(h * w / (H * W))
        ratios.append(w / h)
        tops.append(top / max(1, H - h) if h < H else 0.5)
    areas, ratios = np.array(areas), np.array(ratios)
    # rounding h and w to whole pixels moves area and ratio slightly past the bounds
    assert areas.min() >= 0.08 * 0.95 and areas.max() <= 1.0
    assert ratios.min() >= 0.75 * 0.97 and ratios.max() <= 4 / 3 * 1.03
    assert abs(np.median(np.log(ratios))) < 0.05  # log-uniform ratio: median near ratio 1
    assert 0.4 < np.mean(tops) < 0.6  # uniform top offsets


def test_fallback_is_a_central_crop_with_the_ratio_clamped():
    rng = np.random.default_rng(1)
    # a 1000x100 strip: no crop of ratio <= 4/3 covers 90 % of it, so all draws fail
    top, left, h, w = sample_crop(100, 1000, (0.9, 1.0), (3 / 4, 4 / 3), 10, rng)
    assert (h, w) == (100, round(100 * 4 / 3))
    assert top == 0 and left == 434  # MindSpore: round((1000 - 133) / 2) = round(433.5), up


def test_random_resized_crop_is_a_crop_then_a_bilinear_resize():
    image = smooth_image()
    out = vision.RandomResizedCrop((112, 96)).apply(image, rng=np.random.default_rng(3))
    top, left, h, w = sample_crop(
        375, 500, (0.08, 1.0), (3 / 4, 4 / 3), 10, np.random.default_rng(3)
    )
    expected = cv2.resize(
        image[top : top + h, left : left + w], (96, 112), interpolation=cv2.INTER_LINEAR
    )
    assert out.shape == (112, 96, 3)
    np.testing.assert_array_equal(out, expected)


def test_crop_decode_resize_decodes_at_a_reduced_scale_and_matches(monkeypatch):
    image = smooth_image(1500, 2000)
    jpeg = np.frombuffer(simplejpeg.encode_jpeg(image, quality=95), np.uint8)
    requested = []
    real = simplejpeg.decode_jpeg

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        requested.append(out.shape)
        return out

    monkeypatch.setattr(simplejpeg, "decode_jpeg", spy)
    op = vision.RandomCropDecodeResize(64, scale=(0.5, 1.0))
    assert op.scaled_decode  # jisu's speed default (MindSpore's pixels without it)
    fast = op.apply(jpeg, rng=np.random.default_rng(7))
    assert requested and requested[0][0] < 1500  # decoded smaller than the full image
    full = vision.RandomResizedCrop(64, scale=(0.5, 1.0)).apply(
        real(jpeg.tobytes(), colorspace="RGB"), rng=np.random.default_rng(7)
    )
    assert fast.shape == full.shape == (64, 64, 3)
    # approximate: a mean of 2-7 levels on this textured image over 20 draws
    assert np.abs(fast.astype(int) - full.astype(int)).mean() < 8


def _photo_like(h: int, w: int) -> np.ndarray:
    """Smooth gradients with texture and edges, like a photo (JPEG's worst case is noise)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    rgb = np.stack([x / w * 255, y / h * 255, (x + y) / (h + w) * 255], axis=-1)
    rgb += 20 * np.sin(x / 3)[..., None] * np.cos(y / 5)[..., None]
    rgb[h // 3 : h // 2, w // 4 : w // 2] = (250, 30, 40)  # a sharp-edged block
    return np.clip(rgb, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("subsampling", [0, 2])  # Pillow: 0 = 4:4:4, 2 = 4:2:0
@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_decode_matches_pillow_within_2(tmp_path, subsampling, mode):
    path = str(tmp_path / "photo.jpg")
    Image.fromarray(_photo_like(97, 130)).convert(mode).save(
        path, quality=90, subsampling=subsampling
    )
    with Image.open(path) as im:
        expected = np.asarray(im.convert("RGB"), dtype=np.int16)
    got = vision.Decode()(np.fromfile(path, np.uint8))
    assert got.shape == expected.shape and got.dtype == np.uint8
    assert np.abs(got.astype(np.int16) - expected).max() <= 2


def test_crop_decode_resize_takes_png_too():
    image = smooth_image(60, 80)
    _, png = cv2.imencode(".png", image[..., ::-1])
    out = vision.RandomCropDecodeResize(32)(png.ravel())
    assert out.shape == (32, 32, 3) and out.dtype == np.uint8


def test_color_adjust_extremes_against_their_definitions():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (6, 7, 3), dtype=np.uint8)
    luma = image.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    black = vision.RandomColorAdjust(brightness=(0, 0))(image)
    assert black.max() == 0
    brighter = vision.RandomColorAdjust(brightness=(1.5, 1.5))(image)
    np.testing.assert_array_equal(brighter, np.clip(np.rint(image * 1.5), 0, 255))
    flat = vision.RandomColorAdjust(contrast=(0, 0))(image)
    assert np.all(np.abs(flat.astype(float) - luma.mean()) <= 0.5 + 1e-3)
    gray = vision.RandomColorAdjust(saturation=(0, 0))(image)
    np.testing.assert_allclose(gray, np.repeat(np.rint(luma)[..., None], 3, -1), atol=1)
    red = np.zeros((2, 2, 3), np.uint8)
    red[..., 0] = 255
    green = vision.RandomColorAdjust(hue=(1 / 3, 1 / 3))(red)
    np.testing.assert_array_equal(green[0, 0], [0, 255, 0])


def test_color_adjust_factors_stay_in_range():
    image = np.full((4, 4, 3), 100, np.uint8)
    op = vision.RandomColorAdjust(brightness=0.4)
    rng = np.random.default_rng(2)
    values = [int(op.apply(image, rng=rng)[0, 0, 0]) for _ in range(500)]
    assert 60 <= min(values) < 70 and 130 < max(values) <= 140  # factors in [0.6, 1.4]
    with pytest.raises(ValueError, match="hue range must lie in"):
        vision.RandomColorAdjust(hue=0.7)


@pytest.fixture
def folder(tmp_path):
    rng = np.random.default_rng(0)
    for name, count in [("b_dog", 2), ("a_cat", 3)]:
        (tmp_path / name).mkdir()
        for k in range(count):
            image = rng.integers(0, 256, (20 + k, 30, 3), dtype=np.uint8)
            (tmp_path / name / f"{k}.jpg").write_bytes(simplejpeg.encode_jpeg(image, 90))
    (tmp_path / "a_cat" / "readme.txt").write_text("skip me")
    return tmp_path


def test_image_folder_dataset(folder):
    data = ds.ImageFolderDataset(str(folder), shuffle=False)
    assert data.get_class_indexing() == {"a_cat": 0, "b_dog": 1}
    assert data.get_dataset_size() == 5
    assert rows_of(data, 1) == [0, 0, 0, 1, 1]
    decoded = ds.ImageFolderDataset(str(folder), shuffle=False, decode=True)
    assert [tuple(r[0].shape) for r in decoded.create_tuple_iterator(output_numpy=True)] == [
        (20, 30, 3),
        (21, 30, 3),
        (22, 30, 3),
        (20, 30, 3),
        (21, 30, 3),
    ]
    remapped = ds.ImageFolderDataset(str(folder), shuffle=False, class_indexing={"b_dog": 7})
    assert rows_of(remapped, 1) == [7, 7]
    shards = [
        rows_of(ds.ImageFolderDataset(str(folder), num_shards=2, shard_id=k), 1) for k in range(2)
    ]
    assert len(shards[0]) == len(shards[1]) == 3


def test_image_pipeline_end_to_end(folder):
    data = ds.ImageFolderDataset(str(folder), shuffle=True)
    data = data.map(
        [
            vision.RandomCropDecodeResize(16),
            vision.RandomHorizontalFlip(),
            vision.RandomColorAdjust(0.2, 0.2, 0.2, 0.05),
            vision.Normalize([127.5] * 3, [127.5] * 3),
            vision.HWC2CHW(),
        ],
        "image",
    )
    batches = list(data.batch(2).create_tuple_iterator(num_epochs=1))
    assert [tuple(b[0].shape) for b in batches] == [(2, 3, 16, 16)] * 2 + [(1, 3, 16, 16)]
    assert all(math.isfinite(float(b[0].abs().max())) for b in batches)


@pytest.mark.parametrize("processes", [False, True])
def test_skip_mode_drops_corrupt_images_keeps_batches_full_and_reports(folder, caplog, processes):
    (folder / "a_cat" / "broken.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    (folder / "b_dog" / "truncated.jpg").write_bytes((folder / "b_dog" / "0.jpg").read_bytes()[:40])
    strict = ds.ImageFolderDataset(str(folder), shuffle=False).map(vision.Decode(), "image")
    with pytest.raises(ValueError, match=r"sample 3 .*Decode: cannot decode '.*broken.jpg'"):
        rows_of(strict)
    ds.config.set_error_samples_mode("skip")
    try:
        data = (
            ds.ImageFolderDataset(str(folder), shuffle=False)
            .map(
                [vision.Decode(), vision.Resize((8, 8))],
                "image",
                num_parallel_workers=2,
                python_multiprocessing=processes,
            )
            .batch(2, drop_remainder=True)
        )
    finally:
        ds.config.set_error_samples_mode("raise")
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    with caplog.at_level("WARNING", logger="jisu.dataset"):
        batches = list(it)
    assert [b[1].tolist() for b in batches] == [[0, 0], [0, 1]]  # 5 good images, batches of 2
    assert "2 sample(s) skipped in epoch 0" in caplog.text
    assert "Decode: cannot decode" in caplog.text


def offload_pipeline(offload: bool):
    images = np.random.default_rng(0).integers(0, 256, (10, 12, 9, 3), dtype=np.uint8)
    ops = [
        vision.RandomHorizontalFlip(),
        vision.Rescale(1 / 255, 0),
        vision.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        vision.HWC2CHW(),
    ]
    return (
        ds.NumpySlicesDataset({"image": images, "label": np.arange(10)})
        .map(ops, "image", offload=offload)
        .batch(4)
    )


def test_offload_ships_uint8_and_the_module_gives_the_host_result():
    host = list(offload_pipeline(False).create_tuple_iterator(num_epochs=1))
    data = offload_pipeline(True)
    module = data.offload_module()
    shipped = list(data.create_tuple_iterator(num_epochs=1))
    assert all(b[0].dtype == torch.uint8 and b[0].shape[-1] == 3 for b in shipped)
    for (image, label), batch in zip(host, shipped, strict=True):
        out = module(batch)
        assert out[0].shape == image.shape and out[0].dtype == torch.float32
        torch.testing.assert_close(out[0], image, rtol=1e-6, atol=1e-6)
        assert torch.equal(out[1], label)
    as_dict = next(data.create_dict_iterator(num_epochs=1))
    assert module(as_dict)["image"].shape == (4, 3, 12, 9)


def test_offload_misuse_is_refused():
    data = ds.NumpySlicesDataset(np.zeros((4, 2, 2, 3), np.uint8), ["image"])
    with pytest.raises(ValueError, match="map: offload=True but the operations end with"):
        data.map([vision.Rescale(1, 0), vision.RandomHorizontalFlip()], "image", offload=True)
    later = data.map(vision.Rescale(1 / 255, 0), "image", offload=True).map(
        lambda x: x + 1, "image"
    )
    with pytest.raises(ValueError, match="offload: map reads column"):
        later.offload_module()
