"""map and batch: column layout, fusion, per_batch_map, padding, the fused elementwise tail."""

from __future__ import annotations

import numpy as np
import pytest

import jisu
import jisu.dataset as ds
from jisu.dataset import transforms, vision
from tests.conftest import rows_of


def abc():
    return ds.NumpySlicesDataset(
        {"a": np.arange(3), "b": np.arange(3) * 10, "c": np.arange(3) * 100}, shuffle=False
    )


@pytest.mark.parametrize(
    "kwargs, columns, row1",
    [  # layouts observed in MindSpore 2.10
        (
            {
                "operations": lambda b: (b, b + 1),
                "input_columns": ["b"],
                "output_columns": ["x", "y"],
            },
            ["x", "y", "a", "c"],
            [10, 11, 1, 100],
        ),
        (
            {
                "operations": lambda a, c: a + c,
                "input_columns": ["a", "c"],
                "output_columns": ["s"],
            },
            ["s", "b"],
            [101, 10],
        ),
        (
            {"operations": lambda c, a: (c, a), "input_columns": ["c", "a"]},
            ["a", "b", "c"],
            [1, 10, 100],
        ),
        (
            {"operations": lambda c: c + 1, "input_columns": ["c"], "output_columns": ["c2"]},
            ["a", "b", "c2"],
            [1, 10, 101],
        ),
        ({"operations": lambda a: a + 1}, ["a", "b", "c"], [2, 10, 100]),
    ],
)
def test_map_column_layout_matches_mindspore(kwargs, columns, row1):
    data = abc().map(**kwargs)
    assert data.get_col_names() == columns
    assert rows_of(data, None)[1] == row1


def test_map_applies_op_lists_in_order_and_accepts_plain_callables():
    data = abc().map([lambda a: a + 1, lambda a: a * 2, transforms.TypeCast(np.float32)], "a")
    assert rows_of(data) == [2.0, 4.0, 6.0]
    assert data.output_types()[0] == np.float32


def test_stream_maps_fuse_into_the_batch_task_and_keep_order():
    def gen():
        for i in range(50):
            yield (np.array(i),)

    data = (
        ds.GeneratorDataset(gen, ["x"])
        .map(lambda x: x * 2, num_parallel_workers=4)
        .map(lambda x: x + 1, num_parallel_workers=3)
        .batch(7)
    )
    assert [v for batch in rows_of(data) for v in batch] == [2 * i + 1 for i in range(50)]


def test_per_batch_map_gets_lists_and_batch_info():
    seen = []

    def per_batch(a, b, info):
        seen.append((info.get_epoch_num(), info.get_batch_num(), type(a).__name__, len(a)))
        return [x * 2 for x in a], [x + 1 for x in b]

    data = ds.NumpySlicesDataset(
        {"a": np.arange(6), "b": np.arange(6), "c": np.arange(6)}, shuffle=False
    )
    data = data.batch(4, per_batch_map=per_batch, input_columns=["a", "b"])
    it = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    first = [[v.tolist() for v in r] for r in it]
    list(it)
    assert first == [[[0, 2, 4, 6], [1, 2, 3, 4], [0, 1, 2, 3]], [[8, 10], [5, 6], [4, 5]]]
    assert sorted(seen) == [
        (0, 0, "list", 4),
        (0, 1, "list", 2),
        (1, 0, "list", 4),
        (1, 1, "list", 2),
    ]


def test_per_batch_map_with_new_output_columns():
    data = abc().batch(
        2,
        per_batch_map=lambda a, info: ([x for x in a], [x * 0 for x in a]),
        input_columns=["a"],
        output_columns=["a1", "a2"],
    )
    assert data.get_col_names() == ["a1", "a2", "b", "c"]
    assert rows_of(data, None)[0] == [[0, 1], [0, 0], [0, 10], [0, 100]]


def ragged():
    def gen():
        for i in range(5):
            yield (np.arange(i + 1),)

    return ds.GeneratorDataset(gen, ["x"])


def test_padded_batch_matches_mindspore():
    assert rows_of(ragged().padded_batch(2, pad_info={"x": (None, -1)})) == [
        [[0, -1], [0, 1]],
        [[0, 1, 2, -1], [0, 1, 2, 3]],
        [[0, 1, 2, 3, 4]],
    ]
    assert rows_of(ragged().padded_batch(2, pad_info={"x": ([6], -1)}))[0] == [
        [0, -1, -1, -1, -1, -1],
        [0, 1, -1, -1, -1, -1],
    ]
    assert rows_of(ragged().padded_batch(2))[0] == [[0, 0], [0, 1]]
    assert rows_of(ragged().batch(2, pad_info={"x": (None, 9)}))[0] == [[0, 9], [0, 1]]


def test_ragged_batch_error_names_column_and_shapes():
    with pytest.raises(ValueError, match=r"column 'x'.*different shapes \[\(1,\), \(2,\)\]"):
        rows_of(ragged().batch(2))
    with pytest.raises(ValueError, match="larger than the pad shape"):
        rows_of(ragged().padded_batch(5, pad_info={"x": ([2], 0)}))


@pytest.mark.parametrize("random_access", [True, False])
def test_fused_elementwise_tail_equals_the_plain_formula(random_access):
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, (9, 5, 7, 3)).astype(np.uint8)
    labels = np.arange(9, dtype=np.int64)
    if random_access:
        data = ds.NumpySlicesDataset({"image": images, "label": labels}, shuffle=False)
    else:

        def gen():
            for i in range(9):
                yield images[i], labels[i]

        data = ds.GeneratorDataset(gen, ["image", "label"])
    data = (
        data.map([vision.Rescale(1 / 255, -0.5), vision.HWC2CHW()], "image")
        .map(transforms.TypeCast(np.int32), "label")
        .batch(4)
    )
    batches = list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    image = np.concatenate([b[0] for b in batches])
    label = np.concatenate([b[1] for b in batches])
    # MindSpore's Rescale: float32 factors, the multiply-add in float64, rounded once
    scale, shift = np.float64(np.float32(1 / 255)), np.float64(np.float32(-0.5))
    expected = (images.astype(np.float64) * scale + shift).astype(np.float32)
    np.testing.assert_array_equal(image, expected.transpose(0, 3, 1, 2))
    assert image.dtype == np.float32 and image.flags.c_contiguous
    assert label.dtype == np.int32 and label.tolist() == list(range(9))


def test_elementwise_tail_is_not_deferred_when_a_later_map_reads_the_column():
    data = abc().map(transforms.TypeCast(np.float32), "a").map(lambda a: a / 2, "a").batch(3)
    assert rows_of(data) == [[0.0, 0.5, 1.0]]


def test_outputs_are_contiguous_torch_tensors_sharing_memory():
    import torch

    row = next(iter(abc()))
    assert all(isinstance(t, torch.Tensor) for t in row)
    images = ds.NumpySlicesDataset(np.zeros((2, 4, 5, 3), np.uint8), shuffle=False)
    out = next(iter(images.map(vision.HWC2CHW())))[0]
    assert out.shape == (3, 4, 5) and out.is_contiguous()


@pytest.mark.parametrize("shape", [(5, 6), (100, 140)])  # the NumPy and the OpenCV path
@pytest.mark.parametrize("random_access", [True, False])
@pytest.mark.parametrize("layout", ["normalize-then-chw", "chw-then-normalize"])
def test_fused_normalize_equals_the_formula(random_access, layout, shape):
    rng = np.random.default_rng(4)
    images = rng.integers(0, 256, (7, *shape, 3)).astype(np.uint8)
    mean, std = np.array([120.0, 110.0, 100.0]), np.array([50.0, 60.0, 70.0])
    if layout == "normalize-then-chw":
        ops = [vision.Normalize(mean, std), vision.HWC2CHW()]
    else:
        ops = [vision.HWC2CHW(), vision.Normalize(mean, std, is_hwc=False)]
    if random_access:
        data = ds.NumpySlicesDataset({"image": images}, shuffle=False)
    else:
        data = ds.GeneratorDataset(lambda: ((im,) for im in images), ["image"])
    out = np.concatenate(
        [
            b[0]
            for b in data.map(ops, "image")
            .batch(3)
            .create_tuple_iterator(num_epochs=1, output_numpy=True)
        ]
    )
    expected = ((images - mean.astype(np.float32)) / std.astype(np.float32)).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
    assert out.dtype == np.float32


def test_maps_chained_below_a_batch_are_all_applied_with_the_tail_deferred():
    rng = np.random.default_rng(5)
    images = rng.integers(0, 256, (6, 4, 5, 3)).astype(np.uint8)
    labels = np.arange(6, dtype=np.int32)
    mean, std = np.array([10.0, 20.0, 30.0]), np.array([2.0, 3.0, 4.0])
    data = ds.NumpySlicesDataset({"image": images, "label": labels}, shuffle=False)
    data = data.map([vision.Normalize(mean, std), vision.HWC2CHW()], "image")
    data = data.map(transforms.TypeCast(jisu.int64), "label").map(lambda x: x * 2, "label")
    out = list(data.batch(4).create_tuple_iterator(num_epochs=1, output_numpy=True))
    image = np.concatenate([b[0] for b in out])
    expected = ((images - mean.astype(np.float32)) / std.astype(np.float32)).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(image, expected, rtol=1e-6, atol=1e-6)
    label = np.concatenate([b[1] for b in out])
    assert label.dtype == np.int64 and label.tolist() == [0, 2, 4, 6, 8, 10]
