"""``jisu.dataset.vision.py_transforms_util``: the PIL helpers model-zoo AutoAugment code calls,
against MindSpore 2.10's recorded outputs (tests/fixtures/ms_gaps/make_fixtures.py; Python's
``random`` seeded alike gives the same crops)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from jisu.dataset.vision import Border, Inter
from jisu.dataset.vision import py_transforms_util as ptu

HERE = Path(__file__).parents[2] / "fixtures/ms_gaps"
FACTS = json.loads((HERE / "ms_gaps.json").read_text())
ARR = dict(np.load(HERE / "ms_gaps.npz"))
IMG = Image.fromarray(ARR["ptu_in"])


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_modes(mode):
    np.testing.assert_array_equal(np.asarray(ptu.pad(IMG, (1, 2, 3, 1), 9, Border(mode))),
                                  ARR[f"ptu_pad_{mode}"])  # fmt: skip
    np.testing.assert_array_equal(np.asarray(ptu.pad(IMG, (1, 2, 3, 1), 9, mode)),
                                  ARR[f"ptu_pad_{mode}"])  # fmt: skip


def test_pad_two_enhancers_rotate_and_crops():
    two = ptu.pad(IMG, (2, 1), (1, 2, 3), Border.CONSTANT)
    np.testing.assert_array_equal(np.asarray(two), ARR["ptu_pad_two"])
    for name in ("brightness", "contrast", "saturation"):
        out = getattr(ptu, f"adjust_{name}")(IMG, 1.7)
        np.testing.assert_array_equal(np.asarray(out), ARR[f"ptu_{name}"])
    rotated = ptu.rotate(IMG, 30, Inter.BILINEAR, False, None, 7)
    np.testing.assert_array_equal(np.asarray(rotated), ARR["ptu_rotate"])
    expanded = ptu.rotate(IMG, 90, Inter.NEAREST, True, None, (1, 2, 3))
    np.testing.assert_array_equal(np.asarray(expanded), ARR["ptu_rotate_expand"])
    random.seed(45)
    crops = [ptu.random_crop(IMG, (4, 3), None, False, 0, Border.CONSTANT) for _ in range(3)]
    crops.append(ptu.random_crop(IMG, (8, 8), 1, True, 5, Border.EDGE))
    for i, crop in enumerate(crops):
        np.testing.assert_array_equal(np.asarray(crop), ARR[f"ptu_crop{i}"])


def test_is_pil_and_errors():
    assert [ptu.is_pil(IMG), ptu.is_pil(ARR["ptu_in"])] == FACTS["ptu_is_pil"]
    assert ptu.augment_error_message == FACTS["ptu_message"]
    with pytest.raises(TypeError, match="img should be PIL image"):
        ptu.adjust_contrast(ARR["ptu_in"], 1.0)
    with pytest.raises(ValueError, match="larger than input image size"):
        ptu.random_crop(IMG, (9, 9), None, False, 0, Border.CONSTANT)
    with pytest.raises(ValueError, match="should be 2 or 4"):
        ptu.pad(IMG, (1, 2, 3), 0, Border.CONSTANT)
