"""What cost a newcomer minutes (issue 28): ``len()`` on a pipeline of known size, a hint
when an image op is given encoded bytes because ``Decode`` was forgotten, and int32 labels
(MindSpore's dtype) that a plain torch loss refuses: the pipeline guide's recipe for them."""

from __future__ import annotations

import math
import os
import re

import cv2
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import jisu
import jisu.dataset as ds
from jisu.dataset import transforms, vision

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PIPELINE_GUIDE = os.path.join(ROOT, "docs", "site", "guides", "pipeline.md")


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


def test_labels_are_int32_which_a_plain_torch_loss_refuses_and_long_fixes(jpeg_folder):
    data = ds.ImageFolderDataset(jpeg_folder).map([vision.Decode(), vision.Resize(8)], "image")
    ((_image, label),) = list(data.create_tuple_iterator(num_epochs=1))
    assert label.dtype == torch.int32  # MindSpore's label dtype
    logits = torch.zeros(1, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Long"):
        F.cross_entropy(logits, label.reshape(1))
    F.cross_entropy(logits, label.reshape(1).long()).backward()  # the guide's first fix
    assert logits.grad is not None


def test_typecast_to_jisu_int64_gives_labels_a_torch_loss_takes(jpeg_folder):
    data = ds.ImageFolderDataset(jpeg_folder).map([vision.Decode(), vision.Resize(8)], "image")
    data = data.map(transforms.TypeCast(jisu.int64), input_columns="label").batch(1)
    ((image, label),) = list(data.create_tuple_iterator(num_epochs=1))
    assert label.dtype == torch.int64 and label.shape == (1,)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(image[0].numel(), 3))
    loss = F.cross_entropy(net(image.float()), label)
    loss.backward()
    assert torch.isfinite(loss)


def test_the_pipeline_guides_first_example_runs_and_trains_on_int64_labels():
    """The guide's first code block, as written (docs/site/guides/pipeline.md, "A first
    pipeline"), next to the note on int32 labels."""
    with open(PIPELINE_GUIDE, encoding="utf-8") as f:
        guide = f.read()
    section = guide.split("## A first pipeline", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    assert "TypeCast(jisu.int64)" in block and "F.cross_entropy" in block
    assert "a plain torch loss needs int64" in section.split("\n## ", 1)[0]
    namespace: dict = {}
    exec(compile(block, PIPELINE_GUIDE, "exec"), namespace)
    assert namespace["label"].dtype == torch.int64
    assert namespace["image"].dtype == torch.float32
    assert namespace["image"].shape == (32, 3, 8, 8)
    assert torch.isfinite(namespace["loss"])
