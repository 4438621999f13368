"""``DatasetCache`` as the model zoo passes it (``Cifar10Dataset(..., cache=DatasetCache(
session_id=1, size=0))`` and ``.map(..., cache=...)``): accepted, and the pipeline gives the
same rows in the same order as without it (jisu has no cache server)."""

from __future__ import annotations

import numpy as np
import pytest

import jisu.dataset as ds
import jisu.dataset.vision as vision


def _cifar_dir(tmp_path):
    rng = np.random.default_rng(7)
    for k in range(1, 6):
        rng.integers(0, 256, (3, 3073), dtype=np.uint8).tofile(tmp_path / f"data_batch_{k}.bin")
    rng.integers(0, 256, (2, 3073), dtype=np.uint8).tofile(tmp_path / "test_batch.bin")
    return str(tmp_path)


def _pipeline(root, cache):
    ds.config.set_seed(3)
    data = ds.Cifar10Dataset(root, usage="train", shuffle=True, cache=cache)
    ops = [vision.RandomHorizontalFlip(), vision.Rescale(1 / 255.0, 0.0), vision.HWC2CHW()]
    data = data.map(ops, input_columns="image", num_parallel_workers=2, cache=cache)
    return [
        [np.asarray(col) for col in row]
        for row in data.batch(4).create_tuple_iterator(num_epochs=1, output_numpy=True)
    ]


def test_cache_gives_the_same_rows_as_without(tmp_path):
    root = _cifar_dir(tmp_path)
    plain = _pipeline(root, None)
    cached = _pipeline(root, ds.DatasetCache(session_id=1, size=0))
    assert len(plain) == len(cached) == 4
    for a, b in zip(plain, cached, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


def test_cache_of_another_type_is_refused(tmp_path):
    root = _cifar_dir(tmp_path)
    with pytest.raises(ValueError, match="Cifar10Dataset: cache is not supported except"):
        ds.Cifar10Dataset(root, cache=object())
    with pytest.raises(TypeError, match="map: cache must be None or a DatasetCache"):
        ds.Cifar10Dataset(root).map(vision.HWC2CHW(), input_columns="image", cache=1)
