"""What cost a newcomer minutes (issue 28): ``len()`` on a pipeline of known size, and a hint
when an image op is given encoded bytes because ``Decode`` was forgotten."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset import vision


def numbers(n: int = 10) -> ds.Dataset:
    return ds.NumpySlicesDataset({"x": np.arange(n)}, shuffle=False)


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: numbers(10), 10),
        (lambda: numbers(10).batch(4), math.ceil(10 / 4)),
        (lambda: numbers(10).batch(4, drop_remainder=True), 10 // 4),
        (lambda: numbers(10).repeat(3).shard(4, 1), math.ceil(30 / 4)),
        (lambda: numbers(10).skip(10), 0),
        (lambda: numbers(10).concat(numbers(3)).take(12), 12),
    ],
)
def test_len_is_the_rows_an_epoch_yields(build, expected):
    data = build()
    assert len(data) == expected
    assert sum(1 for _ in data.create_tuple_iterator(num_epochs=1)) == expected
    assert bool(data)  # a description is never falsy, empty or not


def test_len_of_a_pipeline_of_unknown_size_names_get_dataset_size():
    data = numbers(10).filter(lambda x: x % 2 == 0)
    with pytest.raises(TypeError, match=r"get_dataset_size\(\) counts it"):
        len(data)
    assert data.get_dataset_size() == 5
    assert bool(data)


@pytest.fixture
def jpeg_folder(tmp_path):
    image = np.random.default_rng(0).integers(0, 255, (12, 16, 3), dtype=np.uint8)
    (tmp_path / "cat").mkdir()
    ok, data = cv2.imencode(".jpg", image)
    assert ok
    (tmp_path / "cat" / "a.jpg").write_bytes(data.tobytes())
    return str(tmp_path)


def test_an_image_op_on_encoded_bytes_says_to_decode_first(jpeg_folder):
    data = ds.ImageFolderDataset(jpeg_folder).map(vision.Resize(8), "image")
    with pytest.raises(ValueError, match=r"still holds encoded image bytes; put vision\.Decode"):
        list(data.create_tuple_iterator(output_numpy=True))
    decoded = ds.ImageFolderDataset(jpeg_folder).map([vision.Decode(), vision.Resize(8)], "image")
    ((image, _label),) = list(decoded.create_tuple_iterator(output_numpy=True))
    assert image.shape == (8, 10, 3)


def test_no_hint_when_the_input_is_not_bytes():
    data = ds.NumpySlicesDataset({"x": np.zeros((2, 5), np.float32)}, shuffle=False)
    with pytest.raises(ValueError) as error:
        list(data.map(vision.Resize(8), "x").create_tuple_iterator(output_numpy=True))
    assert "Decode" not in str(error.value)
