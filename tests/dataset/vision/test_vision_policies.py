"""Augmentation policies and batch-mixing ops, checked against MindSpore 2.10's recorded outputs
(tests/fixtures/vision_policies/make_fixtures.py) and independent NumPy formulas."""

from __future__ import annotations

import json
import pathlib
from collections import Counter

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.vision.affine import Rotate
from jisu.dataset.vision.mixing import (
    CutMixBatch,
    CutOut,
    ImageBatchFormat,
    MixUp,
    MixUpBatch,
    RandomErasing,
    mix_up,
)
from jisu.dataset.vision.policies import (
    SIGNED,
    AutoAugment,
    AutoAugmentPolicy,
    RandAugment,
    RandomSelectSubpolicy,
    TrivialAugmentWide,
    UniformAugment,
    apply_augment,
    augmentation_space,
)
from jisu.dataset.vision.utils import Inter
from tests.conftest import rows_of

FIXTURES = pathlib.Path(__file__).parents[2] / "fixtures" / "vision_policies"
MS = np.load(FIXTURES / "mindspore_outputs.npz")
IMAGE = np.random.default_rng(3).integers(0, 256, (12, 10, 3)).astype(np.uint8)


def _pairing(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(weight of the own class, partner) of each row of mixed one-hot labels (class i = i)."""
    n = labels.shape[0]
    own = labels[np.arange(n), np.arange(n)]
    partner = np.array(
        [next((j for j in np.flatnonzero(r) if j != i), i) for i, r in enumerate(labels)]
    )
    return own, partner


# ------------------------------------------------------------------------------ RandomErasing


def test_random_erasing_matches_mindspore_box():
    chw, ms = MS["chw"], MS["erased"]
    ours = RandomErasing(1.0, (0.49, 0.49), (1.0, 1.0), value=(1, 2, 3))(chw)
    for out in (ms, ours):  # a 7x7 box filled with the channel's value, the rest untouched
        changed = (out != chw).any(0)
        ys, xs = np.nonzero(changed)
        top, left = ys.min(), xs.min()
        expected = chw.copy()
        expected[:, top : top + 7, left : left + 7] = np.array([1, 2, 3])[:, None, None]
        np.testing.assert_array_equal(out, expected)
    assert ours.dtype == ms.dtype == np.uint8


def test_random_erasing_prob_and_attempts():
    img = np.arange(3 * 8 * 9, dtype=np.float32).reshape(3, 8, 9)
    np.testing.assert_array_equal(RandomErasing(prob=0.0)(img), img)
    # no box fits (area > the image): the image comes back unchanged
    np.testing.assert_array_equal(RandomErasing(1.0, (2.0, 3.0), max_attempts=3)(img), img)
    op = RandomErasing(prob=1.0, value="random")
    box = op.draw(np.random.default_rng(5), 8, 9)
    out = op.apply(img, rng=np.random.default_rng(5))
    top, left, h, w = box
    outside = np.ones((8, 9), bool)
    outside[top : top + h, left : left + w] = False
    np.testing.assert_array_equal(out[:, outside], img[:, outside])
    with pytest.raises(ValueError, match="RandomErasing: scale"):
        RandomErasing(scale=(0.5, 0.1))
    with pytest.raises(ValueError, match="RandomErasing: value"):
        RandomErasing(value=300)


# ------------------------------------------------------------------------------------ CutOut


def test_cutout_shapes_and_patch():
    img = np.full((20, 20, 3), 255, np.uint8)
    op = CutOut(6)
    for seed in range(50):
        out = op.apply(img, rng=np.random.default_rng(seed))
        assert out.shape == img.shape and out.dtype == np.uint8
        ((top, left),) = op.draw(np.random.default_rng(seed), 20, 20)
        expected = img.copy()
        expected[max(top, 0) : max(top + 6, 0), max(left, 0) : max(left + 6, 0)] = 0
        np.testing.assert_array_equal(out, expected)
        assert (out == 0).all(2).sum() >= 1  # every patch covers a pixel
    chw = CutOut(4, 3, is_hwc=False)(np.full((3, 10, 12), 7, np.float32))
    assert chw.shape == (3, 10, 12) and chw.dtype == np.float32
    assert ((chw == 0).all(0) | (chw == 7).all(0)).all()  # all channels of a pixel together
    with pytest.raises(ValueError, match="CutOut: length"):
        CutOut(0)


# ----------------------------------------------------------------------------- MixUpBatch


def test_mixup_batch_matches_mindspore():
    images, labels = MS["images"], MS["labels"]
    ms_images, ms_labels = MS["mix_images"], MS["mix_labels"]
    own, perm = _pairing(ms_labels)
    assert np.allclose(own, own[0])  # one lambda per batch
    images_out, labels_out = mix_up(images, labels, perm, float(own[0]))
    np.testing.assert_array_equal(images_out, ms_images)
    np.testing.assert_allclose(labels_out, ms_labels, atol=1e-6)
    assert labels_out.dtype == ms_labels.dtype == np.float32
    # the op: an independent formula for its draw
    op = MixUpBatch(0.5)
    perm, lam = op.draw(np.random.default_rng(1), len(images))
    got_i, got_l = op.apply(images, labels, rng=np.random.default_rng(1))
    expect = np.rint(np.float32(lam) * images + np.float32(1 - lam) * images[perm])
    np.testing.assert_array_equal(got_i, expect.astype(np.uint8))
    np.testing.assert_allclose(got_l, lam * labels + (1 - lam) * labels[perm], atol=1e-6)
    assert sorted(perm) == list(range(len(images)))
    with pytest.raises(ValueError, match="MixUpBatch: expected one-hot"):
        MixUpBatch()(images, np.arange(len(images)))


def _check_cutmix(images, labels, out_i, out_l, nchw):
    """Every image is itself plus one box from its partner; labels weighted by the box area."""
    own, partner = _pairing(out_l)
    hwc_in = images.transpose(0, 2, 3, 1) if nchw else images
    hwc_out = out_i.transpose(0, 2, 3, 1) if nchw else out_i
    h, w = hwc_in.shape[1:3]
    for i in range(len(images)):
        if partner[i] == i:  # paired with itself: unchanged
            np.testing.assert_array_equal(hwc_out[i], hwc_in[i])
            continue
        changed = (hwc_out[i] != hwc_in[i]).any(-1)
        ys, xs = np.nonzero(changed)
        box = np.zeros((h, w), bool)
        if len(ys):
            box[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1] = True
        np.testing.assert_array_equal(hwc_out[i][box], hwc_in[partner[i]][box])
        np.testing.assert_array_equal(hwc_out[i][~box], hwc_in[i][~box])
        # the pasted box may hold pixels equal in both images: bound its area
        assert own[i] <= 1 - box.sum() / (h * w) + 1e-6


def test_cutmix_batch_matches_mindspore_rules():
    images, labels = MS["images"], MS["labels"]
    _check_cutmix(images, labels, MS["cut_images"], MS["cut_labels"], False)
    nchw = np.ascontiguousarray(images.transpose(0, 3, 1, 2))
    _check_cutmix(nchw, labels, MS["cutc_images"], MS["cutc_labels"], True)
    for fmt, x in ((ImageBatchFormat.NHWC, images), (ImageBatchFormat.NCHW, nchw)):
        op = CutMixBatch(fmt)
        for seed in range(5):
            out_i, out_l = op.apply(x, labels, rng=np.random.default_rng(seed))
            assert out_i.dtype == np.uint8 and out_l.dtype == np.float32
            assert out_i.shape == x.shape and out_l.shape == labels.shape
            _check_cutmix(x, labels, out_i, out_l, fmt is ImageBatchFormat.NCHW)
            np.testing.assert_allclose(out_l.sum(1), 1, atol=1e-6)


def test_cutmix_prob_and_box_area():
    op = CutMixBatch(ImageBatchFormat.NHWC, 1.0, 0.3)
    rng = np.random.default_rng(0)
    drawn = [op.draw(rng, 8, 100, 160)[1] for _ in range(100)]
    boxes = [b for d in drawn for b in d]
    frac = sum(b is not None for b in boxes) / len(boxes)
    assert 0.22 < frac < 0.38  # 800 draws of p=0.3: sd 0.016
    # sides sqrt(1 - lam): an unclipped box's area is (1 - lam), mean 1/2 for alpha=1
    op = CutMixBatch(ImageBatchFormat.NHWC)
    areas = [
        h * w / 16000
        for d in (op.draw(rng, 8, 100, 160)[1] for _ in range(200))
        for _, _, h, w in d
    ]
    assert 0.27 < np.mean(areas) < 0.35  # clipping at the edges: ~0.31 (as MindSpore)


def test_mixup_single():
    images = np.random.default_rng(0).integers(0, 256, (4, 5, 5, 3)).astype(np.uint8)
    labels = np.eye(4)
    op = MixUp(4, 0.4)
    lam = op.draw(np.random.default_rng(2), 4)
    out_i, out_l = op.apply(images, labels, rng=np.random.default_rng(2))
    nxt = [1, 2, 3, 0]
    lam4 = lam[:, None, None, None]
    np.testing.assert_allclose(out_i, lam4 * images + (1 - lam4) * images[nxt])
    np.testing.assert_allclose(out_l, lam[:, None] * labels + (1 - lam[:, None]) * labels[nxt])
    assert out_i.dtype == np.float64
    with pytest.raises(NotImplementedError, match="MixUp: is_single=False"):
        MixUp(4, 0.4, is_single=False)


def test_mixup_batch_in_pipeline():
    n = 8
    images = np.random.default_rng(0).integers(0, 256, (n, 4, 4, 3)).astype(np.uint8)
    labels = np.arange(n) % 4
    from jisu.dataset.transforms import OneHot

    data = (
        ds.NumpySlicesDataset((images, labels), ["image", "label"], shuffle=False)
        .map(OneHot(4), "label")
        .batch(4)
        .map(MixUpBatch(), ["image", "label"])
    )
    rows = rows_of(data, None)
    assert len(rows) == 2
    assert np.asarray(rows[0][1]).shape == (4, 4)
    np.testing.assert_allclose(np.asarray(rows[0][1]).sum(1), 1, atol=1e-6)


# ------------------------------------------------------------------------- policy tables


def test_auto_augment_tables_equal_mindspore():
    tables = json.loads((FIXTURES / "auto_augment_policies.json").read_text())
    from jisu.dataset.vision.policies import POLICIES

    for name, subs in tables.items():
        ours = POLICIES[AutoAugmentPolicy[name]]
        assert [[list(op) for op in sub] for sub in ours] == subs


def test_magnitude_tables():
    space = augmentation_space(31, 100, 200)
    assert len(space) == 14
    np.testing.assert_allclose(space["ShearX"][[0, 30]], [0, 0.3])
    np.testing.assert_allclose(space["TranslateX"][-1], 150 / 331 * 200)
    np.testing.assert_allclose(space["TranslateY"][-1], 150 / 331 * 100)
    np.testing.assert_allclose(space["Rotate"][-1], 30)
    assert space["Posterize"][0] == 8 and space["Posterize"][-1] == 4
    np.testing.assert_allclose(space["Solarize"][[0, -1]], [255, 0])
    wide = augmentation_space(31, 100, 200, wide=True)
    np.testing.assert_allclose(wide["Rotate"][-1], 135)
    np.testing.assert_allclose(wide["TranslateX"][-1], 32)
    assert wide["Posterize"][-1] == 2


# --------------------------------------------------------------------------------- policies


def _replay(op, image, seed):
    ops = op.draw(np.random.default_rng(seed), *image.shape[:2])
    out = image
    for name, magnitude in ops:
        out = apply_augment(out, name, magnitude, op.interpolation, op.fill_value)
    return ops, out


@pytest.mark.parametrize(
    "op",
    [
        RandAugment(),
        RandAugment(num_ops=3, magnitude=30, interpolation=Inter.LINEAR, fill_value=(1, 2, 3)),
        TrivialAugmentWide(),
        AutoAugment(AutoAugmentPolicy.IMAGENET),
        AutoAugment(AutoAugmentPolicy.CIFAR10),
        AutoAugment(AutoAugmentPolicy.SVHN, fill_value=128),
    ],
)
def test_policy_apply_equals_drawn_ops(op):
    for seed in range(25):
        _, expected = _replay(op, IMAGE, seed)
        out = op.apply(IMAGE, rng=np.random.default_rng(seed))
        np.testing.assert_array_equal(out, expected)
        assert out.shape == IMAGE.shape and out.dtype == np.uint8


def test_apply_augment_uses_the_ops():
    np.testing.assert_array_equal(
        apply_augment(IMAGE, "Rotate", 30.0, Inter.NEAREST, 0), Rotate(30.0)(IMAGE)
    )
    np.testing.assert_array_equal(apply_augment(IMAGE, "Invert", 0, Inter.NEAREST, 0), 255 - IMAGE)
    np.testing.assert_array_equal(
        apply_augment(IMAGE, "Posterize", 4, Inter.NEAREST, 0), IMAGE & 0xF0
    )
    solar = apply_augment(IMAGE, "Solarize", 128.0, Inter.NEAREST, 0)
    np.testing.assert_array_equal(solar, np.where(IMAGE >= 128, 255 - IMAGE, IMAGE))
    shifted = apply_augment(IMAGE, "TranslateX", 2.0, Inter.NEAREST, 0)
    np.testing.assert_array_equal(shifted[:, 2:], IMAGE[:, :-2])
    assert (shifted[:, :2] == 0).all()


def test_rand_augment_distribution():
    op = RandAugment(num_ops=2, magnitude=20)
    space = augmentation_space(31, 12, 10)
    counts, signs = Counter(), Counter()
    rng = np.random.default_rng(0)
    for _ in range(700):
        for name, m in op.draw(rng, 12, 10):
            counts[name] += 1
            table = space[name]
            expected = 0.0 if table is None else float(table[20])
            assert abs(m) == pytest.approx(expected)
            if name in SIGNED:
                signs[m > 0] += 1
    assert set(counts) == set(space)
    assert all(60 < c < 150 for c in counts.values())  # 1400 draws / 14: mean 100, sd 9.6
    assert 0.4 < signs[True] / sum(signs.values()) < 0.6


def test_trivial_augment_distribution():
    op = TrivialAugmentWide(num_magnitude_bins=5)
    space = augmentation_space(5, 12, 10, wide=True)
    counts, bins = Counter(), Counter()
    rng = np.random.default_rng(0)
    for _ in range(1400):
        ((name, m),) = op.draw(rng, 12, 10)
        counts[name] += 1
        if space[name] is not None:
            hits = np.flatnonzero(np.isclose(space[name], abs(m)))
            assert len(hits) >= 1
            bins[int(hits[0])] += 1
    assert all(60 < c < 150 for c in counts.values()) and len(counts) == 14
    assert all(0.14 < bins[b] / sum(bins.values()) < 0.26 for b in range(1, 5))


def test_auto_augment_probabilities():
    from jisu.dataset.vision.policies import POLICIES

    op = AutoAugment(AutoAugmentPolicy.SVHN)
    rng = np.random.default_rng(0)
    applied = 0
    n = 1000
    for _ in range(n):
        applied += len(op.draw(rng, 12, 10))
    expected = sum(p for sub in POLICIES[AutoAugmentPolicy.SVHN] for _, p, _ in sub) / 25 * n
    assert abs(applied - expected) < 0.1 * n  # sd about 0.02 n


def test_uniform_augment_and_subpolicy():
    ops = [lambda x: x + 1, lambda x: x * 2, lambda x: x - 3]
    op = UniformAugment(ops, num_ops=2)
    x = np.array([5], np.int64)
    chosen = Counter()
    for seed in range(400):
        idx = op.draw(np.random.default_rng(seed))
        assert idx == sorted(set(idx))
        chosen[len(idx)] += 1
        expected = x
        for i in idx:
            expected = ops[i](expected)
        np.testing.assert_array_equal(op.apply(x, rng=np.random.default_rng(seed)), expected)
    assert 0.15 < chosen[0] / 400 < 0.35 and 0.15 < chosen[2] / 400 < 0.35  # 1/4 each
    policy = [[(ops[0], 1.0), (ops[1], 0.5)], [(ops[2], 0.0)]]
    sel = RandomSelectSubpolicy(policy)
    picks = Counter()
    for seed in range(400):
        k, run = sel.draw(np.random.default_rng(seed))
        picks[k] += 1
        if k == 0:
            assert run[0] == 0
        else:
            assert run == []
        expected = x
        for j in run:
            expected = policy[k][j][0](expected)
        np.testing.assert_array_equal(sel.apply(x, rng=np.random.default_rng(seed)), expected)
    assert 0.4 < picks[0] / 400 < 0.6
    with pytest.raises(ValueError, match="UniformAugment: num_ops"):
        UniformAugment(ops, 4)
    with pytest.raises(ValueError, match="RandomSelectSubpolicy: prob"):
        RandomSelectSubpolicy([[(ops[0], 1.5)]])


@pytest.mark.parametrize(
    "op", [RandAugment(), TrivialAugmentWide(), AutoAugment(), CutOut(3), RandomErasing(1.0)]
)
def test_same_output_for_any_worker_count(op):
    chw = isinstance(op, RandomErasing)
    images = np.random.default_rng(1).integers(0, 256, (8, 10, 12, 3)).astype(np.uint8)
    if chw:
        images = np.ascontiguousarray(images.transpose(0, 3, 1, 2))
    results = []
    for workers in (1, 2, 4):
        ds.config.set_seed(7)
        data = ds.NumpySlicesDataset(images, ["image"], shuffle=False).map(
            op, "image", num_parallel_workers=workers
        )
        results.append(rows_of(data))
    assert results[0] == results[1] == results[2]
    assert results[0] != images.tolist()


def test_policy_argument_errors():
    with pytest.raises(ValueError, match="RandAugment: magnitude"):
        RandAugment(magnitude=31)
    with pytest.raises(ValueError, match="TrivialAugmentWide: num_magnitude_bins"):
        TrivialAugmentWide(num_magnitude_bins=1)
    with pytest.raises(TypeError, match="AutoAugment: policy"):
        AutoAugment("imagenet-ish")
    with pytest.raises(ValueError, match="RandAugment: expected an RGB"):
        RandAugment()(IMAGE[..., :1])


def test_randaugment_ops_match_mindspores_at_magnitude_9():
    """MindSpore's RandAugment(num_ops=1, magnitude=9), 400 draws on one image (distinct
    outputs recorded): every output is one of jisu's (op, sign) results (Color and Sharpness
    within 1 level: rounding), except MindSpore's TranslateX/Y, which moves the image by
    magnitude x its size (out of the frame: an all-fill image; a MindSpore bug — jisu
    translates by pixels, as torchvision); and every op jisu has but translation shows up
    among MindSpore's outputs."""
    from jisu.dataset.vision.policies import SIGNED, apply_augment, augmentation_space

    recorded = np.load(FIXTURES / "randaugment_one_op.npz")
    image, outputs = recorded["image"], recorded["outputs"]
    space = augmentation_space(31, *image.shape[:2])
    candidates = {}
    for name, magnitudes in space.items():
        m = 0.0 if magnitudes is None else float(magnitudes[9])
        for sign in (1, -1) if name in SIGNED else (1,):
            candidates[(name, sign)] = apply_augment(image, name, sign * m, Inter.NEAREST, 0)
    seen = set()
    for out in outputs:
        same = {
            k for k, c in candidates.items() if np.abs(c.astype(int) - out.astype(int)).max() <= 1
        }
        assert same or not out.any(), "a MindSpore output that no jisu op gives"
        seen |= same
    untranslated = {k for k in candidates if not k[0].startswith("Translate")}
    assert untranslated <= seen
    assert any(not out.any() for out in outputs)  # MindSpore's translation bug, recorded
